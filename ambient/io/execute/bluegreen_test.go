package execute_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// meshInvariants checks, on the objects, what must hold at every moment of a blue-green: no node
// runs two ztunnel pods, every node with an ambient pod runs exactly one ready one, and every istiod
// trusts the account of every ztunnel DaemonSet that has pods. It returns what is wrong.
func meshInvariants(ctx context.Context, c client.Client) []string {
	var bad []string
	var pods corev1.PodList
	var nss corev1.NamespaceList
	var dss appsv1.DaemonSetList
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &pods); err != nil {
		return []string{err.Error()}
	}
	_ = c.List(ctx, &nss)
	_ = c.List(ctx, &dss)
	_ = c.List(ctx, &deps)
	ambientNS := map[string]bool{}
	for _, ns := range nss.Items {
		ambientNS[ns.Name] = ns.Labels[mesh.LabelDataplaneMode] == "ambient"
	}
	ztunnels := map[string][]string{} // node → ready ztunnel pods
	ambient := map[string]int{}       // node → ambient pods
	running := map[string]bool{}      // accounts of ztunnels with pods
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		if ctl := metav1.GetControllerOf(&p); ctl != nil && ctl.Kind == "DaemonSet" {
			if p.Labels["app"] == "ztunnel" {
				ztunnels[p.Spec.NodeName] = append(ztunnels[p.Spec.NodeName], p.Namespace+"/"+p.Name)
				running[p.Namespace+"/"+p.Spec.ServiceAccountName] = true
			}
			continue
		}
		if ambientNS[p.Namespace] && p.Labels[mesh.LabelDataplaneMode] != "none" {
			ambient[p.Spec.NodeName]++
		}
	}
	for n, zs := range ztunnels {
		if len(zs) > 1 {
			bad = append(bad, fmt.Sprintf("node %s runs %d ztunnels: %v", n, len(zs), zs))
		}
	}
	for n, k := range ambient {
		if len(ztunnels[n]) != 1 {
			bad = append(bad, fmt.Sprintf("node %s runs %d ambient pods and %d ztunnels", n, k, len(ztunnels[n])))
		}
	}
	for _, d := range deps.Items {
		if d.Labels["app"] != "istiod" {
			continue
		}
		trust := ""
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "CA_TRUSTED_NODE_ACCOUNTS" {
				trust = e.Value
			}
		}
		for a := range running {
			if !strings.Contains(","+trust+",", ","+a+",") {
				bad = append(bad, fmt.Sprintf("istiod %s trusts %q, not the running ztunnel %s", d.Name, trust, a))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func greenNode(name string) *corev1.Node {
	n := node(name)
	n.Labels[ztunnel.DefaultColourLabel] = "green"
	n.Labels["karpenter.sh/nodepool"] = "green"
	return n
}

// blueGreenRun applies a blue-green plan to the world: green nodes (addGreen of them) arrive once
// green is installed, as an autoscaler would add them, Jobs a drain waits for finish, and after every
// event the mesh invariants are checked. killAfter > 0 kills the run after that many writes and
// resumes it from its journal. It returns the invariant violations seen.
func blueGreenRun(t *testing.T, w *world, p *plan.Plan, addGreen, killAfter int) []string {
	t.Helper()
	ctx := context.Background()
	var violations []string
	added := false
	journal := w.Journal()
	observer := func(ev execute.Event) {
		if ev.Type == execute.EventStepFinished && ev.StepID == "ztunnel/bluegreen/install-green" && !added {
			added = true
			for i := range addGreen {
				if err := w.AddNode(ctx, greenNode(fmt.Sprintf("green-%d", i))); err != nil {
					t.Error(err)
				}
			}
		}
		if ev.Type == execute.EventStepProgress && strings.Contains(ev.Message, "Job pod") {
			// The drain waits for the node's Jobs: they finish.
			if _, err := w.FinishJobs(ctx, strings.TrimPrefix(ev.StepID, "ztunnel/bluegreen/drain/")); err != nil {
				t.Error(err)
			}
		}
		for _, v := range meshInvariants(ctx, w.Base) {
			violations = append(violations, ev.StepID+": "+v)
		}
	}
	opts := func(o *execute.Options) {
		o.Observer, o.Journal = observer, journal
		// The library's own probe: the mesh mid-move (two ztunnels, each on its nodes) must pass it.
		o.Probes = map[string]execute.Probe{"mesh-health": execute.MeshProbe(w.Snapshot, ambient.Gates())}
	}
	if killAfter > 0 {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		w.KillAfterWrites(killAfter, cancel)
		if _, err := w.Executor(opts).Apply(runCtx, p, execute.ApplyOptions{}); err == nil {
			t.Fatalf("the run killed after write %d finished anyway", killAfter)
		}
		w.Revive()
	}
	res, err := w.Executor(opts).Apply(ctx, p, execute.ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if killAfter > 0 && !res.Resumed {
		t.Error("the second run did not resume the killed one's journal")
	}
	return violations
}

// checkBlueGreenDone reads the world with observe.Live: one ztunnel is left, green, trusted alone;
// every blue node is cordoned and without the colour label; no ambient workload runs on a blue
// node, and every one is ready.
func checkBlueGreenDone(t *testing.T, w *world) {
	t.Helper()
	after, err := w.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Ztunnels) != 1 || after.Ztunnels[0].Account() != "ztunnel-green/ztunnel-green" {
		t.Fatalf("ztunnels after: %+v", after.Ztunnels)
	}
	for _, r := range after.Revisions {
		if strings.Join(r.TrustedZtunnelAccounts, ",") != "ztunnel-green/ztunnel-green" {
			t.Errorf("istiod %s trusts %v at the end, want green alone", r.Name, r.TrustedZtunnelAccounts)
		}
	}
	green := map[string]bool{}
	for _, n := range after.Nodes {
		if n.Labels[ztunnel.DefaultColourLabel] == "green" {
			green[n.Name] = true
			continue
		}
		if !n.Unschedulable {
			t.Errorf("blue node %s is schedulable at the end", n.Name)
		}
		if _, has := n.Labels[ztunnel.DefaultColourLabel]; has {
			t.Errorf("blue node %s keeps the colour label", n.Name)
		}
	}
	for _, wl := range after.Workloads {
		if wl.Mode != mesh.ModeAmbient || wl.Kind == "DaemonSet" || wl.Kind == "Job" || wl.Kind == "CronJob" {
			continue
		}
		for _, n := range wl.Nodes {
			if !green[n] {
				t.Errorf("ambient %s still runs on blue node %s", wl.Ref(), n)
			}
		}
		if wl.Ready != wl.Pods {
			t.Errorf("%s: %d of %d pods ready", wl.Ref(), wl.Ready, wl.Pods)
		}
	}
}

func blueGreenPlan(t *testing.T, w *world, g ztunnel.BlueGreen) *plan.Plan {
	t.Helper()
	snap, err := w.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g.LocalStorage = ztunnel.LocalStorageEvict
	p, err := ztunnel.BlueGreenZtunnel(snap, ztunnel.BlueGreenOptions{Target: snap.Ztunnels[0].Version, Strategy: g})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Runnable() {
		t.Fatalf("not runnable: %v", plan.Stopping(p.Findings))
	}
	return p
}

// TestBlueGreenZtunnelOnTheDemoWorld runs the planner's own blue-green plans for the demo cluster and
// checks after every event that no node runs two ztunnels, none with ambient pods runs none, and
// istiod trusts every ztunnel that runs; at the end one ztunnel is left, green, trusted alone, and no
// ambient pod is on a blue node.
func TestBlueGreenZtunnelOnTheDemoWorld(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	t.Run("green nodes the caller adds", func(t *testing.T) {
		w := demoWorld(t)
		p := blueGreenPlan(t, w, ztunnel.BlueGreen{BatchSize: 4, Capacity: ztunnel.GreenCapacity{Nodes: 4}})
		if v := blueGreenRun(t, w, p, 4, 0); len(v) > 0 {
			t.Errorf("%d invariant violations, first: %v", len(v), v[:min(5, len(v))])
		}
		checkBlueGreenDone(t, w)
	})
	t.Run("two nodes relabelled green, one at a time", func(t *testing.T) {
		w := demoWorld(t)
		// Two general nodes: the batch nodes are tainted dedicated=batch, so relabelling them would leave
		// the general pods no green node (EVICTED_POD_FITS_NOWHERE).
		p := blueGreenPlan(t, w, ztunnel.BlueGreen{BatchSize: 3, Capacity: ztunnel.GreenCapacity{Relabel: []string{"ip-10-0-1-17.ec2.internal", "ip-10-0-1-18.ec2.internal"}}})
		if v := blueGreenRun(t, w, p, 0, 0); len(v) > 0 {
			t.Errorf("%d invariant violations, first: %v", len(v), v[:min(5, len(v))])
		}
		checkBlueGreenDone(t, w)
	})
	t.Run("killed in the middle of moving workloads and resumed", func(t *testing.T) {
		clean := demoWorld(t)
		p := blueGreenPlan(t, clean, ztunnel.BlueGreen{BatchSize: 2, Capacity: ztunnel.GreenCapacity{Nodes: 3}})
		blueGreenRun(t, clean, p, 3, 0)
		writes := clean.Writes()
		w := demoWorld(t)
		if v := blueGreenRun(t, w, p, 3, writes/2); len(v) > 0 {
			t.Errorf("%d invariant violations, first: %v", len(v), v[:min(5, len(v))])
		}
		checkBlueGreenDone(t, w)
	})
}
