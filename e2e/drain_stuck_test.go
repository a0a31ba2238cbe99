//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
)

const (
	stuckNS   = "drain-stuck-e2e"
	stuckNode = "stall-0"
	// stuckTaint keeps every other suite's pods off the node this one drains.
	stuckTaint = "ambientkit.io/e2e-stall"
)

// TestDrainStopsWhenItCannotProgress proves the executor's drain guard (execute.Options.StallAfter)
// on the real API server, scheduler and disruption controller, on a node of its own (tainted, so no
// other suite's pod lands there):
//
//   - a budget that never allows an eviction (maxUnavailable 0) stops the drain with ErrDrainStuck
//     naming the budget, long before the drain's timeout; once the budget is relaxed, the same plan
//     resumes from its journal and the drain finishes;
//   - a budget of minAvailable 1 over two pods that only the drained node may run lets one go; its
//     replacement is unschedulable (the node is cordoned), the budget then refuses the other, and the
//     drain stops with ErrDrainStuck naming the Pending pod and the scheduler's message.
func TestDrainStopsWhenItCannotProgress(t *testing.T) {
	if h.Cluster.Provider() != cluster.ProviderKwok {
		failCannotRun(t, "TestDrainStopsWhenItCannotProgress adds a kwok node; the cluster is "+h.Cluster.Provider())
	}
	const timeout = 300                // seconds: the drain's own bound, which the guard must beat by far
	var journal *execute.MemoryJournal // one per plan: the resumed Apply reads what the stopped one wrote
	executor := func(t *testing.T) *execute.Executor {
		snap := &mesh.Snapshot{}
		ex, err := execute.New(h.Client, execute.Options{Namespace: stuckNS, Journal: journal, PollInterval: 500 * time.Millisecond, StallAfter: 3 * time.Second,
			Snapshot: func(context.Context) (*mesh.Snapshot, error) { return snap, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	drainPlan := func(t *testing.T, name string) *plan.Plan {
		p := plan.New(plan.Metadata{Name: name, Operation: "test", Fingerprint: (&mesh.Snapshot{}).Fingerprint()})
		p.Steps = []plan.Step{
			{ID: "cordon", Description: "cordon " + stuckNode, Risk: plan.RiskLow, Cordon: &plan.NodeRef{Node: stuckNode}},
			{ID: "drain", Description: "drain " + stuckNode, Risk: plan.RiskLow, DependsOn: []string{"cordon"},
				Drain: &plan.NodeDrain{Node: stuckNode, IgnoreDaemonSets: true, TimeoutSeconds: timeout}},
		}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f := features.New("a drain that cannot progress stops before its timeout").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			v, err := h.Clientset.Discovery().ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			n := cluster.FakeNode("stall", 0, 240, v.GitVersion)
			n.Spec.Taints = []corev1.Taint{{Key: stuckTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
			// Without kubernetes.io/os the mesh's DaemonSets (nodeSelector kubernetes.io/os: linux)
			// stay off it, so no later suite meets a node agent on a node that is gone.
			delete(n.Labels, "kubernetes.io/os")
			created, err := h.Clientset.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(created.Status.Allocatable) == 0 {
				created.Status = n.Status
				if _, err := h.Clientset.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := h.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stuckNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("a budget that never allows stops the drain, and the journal resumes it once relaxed", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			journal = &execute.MemoryJournal{}
			pinnedApp(ctx, t, "frozen", 1)
			budget(ctx, t, "frozen", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0))})
			p := drainPlan(t, "never-allows")
			start := time.Now()
			_, err := executor(t).Apply(ctx, p, execute.ApplyOptions{})
			took := time.Since(start)
			if !errors.Is(err, execute.ErrDrainStuck) || !strings.Contains(err.Error(), "PodDisruptionBudget "+stuckNS+"/frozen allows no eviction with all 1 of its pods ready (maxUnavailable 0)") {
				t.Fatalf("Apply: %v; want ErrDrainStuck naming the budget", err)
			}
			if took > timeout*time.Second/5 {
				t.Errorf("the guard took %s, not well before the drain's %ds timeout", took, timeout)
			}
			t.Logf("stopped after %s: %v", took.Round(time.Millisecond), err)
			patch := []byte(`{"spec":{"maxUnavailable":1}}`)
			if _, err := h.Clientset.PolicyV1().PodDisruptionBudgets(stuckNS).Patch(ctx, "frozen", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			res, err := executor(t).Apply(ctx, p, execute.ApplyOptions{Resume: true})
			if err != nil {
				t.Fatalf("resumed Apply after relaxing the budget: %v", err)
			}
			if got := res.Steps[len(res.Steps)-1]; got.StepID != "drain" || got.Status != execute.StatusDone {
				t.Errorf("last step %+v, want the drain done", got)
			}
			deleteApp(ctx, t, "frozen")
			cordon(ctx, t, h.Clientset, stuckNode, false)
			return ctx
		}).
		Assess("a replacement the scheduler places nowhere stops the drain, naming the pod", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			journal = &execute.MemoryJournal{}
			pinnedApp(ctx, t, "pinned", 2)
			budget(ctx, t, "pinned", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))})
			start := time.Now()
			_, err := executor(t).Apply(ctx, drainPlan(t, "unschedulable"), execute.ApplyOptions{})
			took := time.Since(start)
			if !errors.Is(err, execute.ErrDrainStuck) || !strings.Contains(err.Error(), "waits on PodDisruptionBudget "+stuckNS+"/pinned, which waits for pod "+stuckNS+"/pinned-") ||
				!strings.Contains(err.Error(), "unschedulable") {
				t.Fatalf("Apply: %v; want ErrDrainStuck naming the Pending replacement and the scheduler's message", err)
			}
			if took > timeout*time.Second/5 {
				t.Errorf("the guard took %s, not well before the drain's %ds timeout", took, timeout)
			}
			t.Logf("stopped after %s: %v", took.Round(time.Millisecond), err)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if err := h.Clientset.CoreV1().Namespaces().Delete(ctx, stuckNS, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
			if err := h.Clientset.CoreV1().Nodes().Delete(ctx, stuckNode, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
			return ctx
		})
	testenv.Test(t, f.Feature())
}

// pinnedApp creates a Deployment of replicas pods that only the stall node may run, and waits until
// every pod is ready there.
func pinnedApp(ctx context.Context, t *testing.T, name string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: stuckNS},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": stuckNode},
					Tolerations:                   []corev1.Toleration{{Key: stuckTaint, Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: ptr.To(int64(0)),
					Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1.0"}}}}}}
	if _, err := h.Clientset.AppsV1().Deployments(stuckNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := h.Clientset.CoreV1().Pods(stuckNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		ready := 0
		for i := range l.Items {
			if podReady(&l.Items[i]) && l.Items[i].Spec.NodeName == stuckNode {
				ready++
			}
		}
		return ready == int(replicas), nil
	})
	if err != nil {
		t.Fatalf("Deployment %s/%s: %d pods ready on %s: %v", stuckNS, name, replicas, stuckNode, err)
	}
}

// budget creates the app's PodDisruptionBudget and waits until the disruption controller has
// observed it.
func budget(ctx context.Context, t *testing.T, name string, spec policyv1.PodDisruptionBudgetSpec) {
	t.Helper()
	spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: stuckNS}, Spec: spec}
	if _, err := h.Clientset.PolicyV1().PodDisruptionBudgets(stuckNS).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := h.Clientset.PolicyV1().PodDisruptionBudgets(stuckNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation && got.Status.ExpectedPods > 0, nil
	})
	if err != nil {
		t.Fatalf("PodDisruptionBudget %s/%s not observed by the disruption controller: %v", stuckNS, name, err)
	}
}

func deleteApp(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if err := h.Clientset.AppsV1().Deployments(stuckNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Error(fmt.Errorf("delete Deployment %s/%s: %w", stuckNS, name, err))
	}
}
