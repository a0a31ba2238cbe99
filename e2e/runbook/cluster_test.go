//go:build e2e

package runbook

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fixtures"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// newCluster starts a kwok cluster of its own (named name, Services from cidr, a loopback range no
// other cluster of the run uses) with nodesPerPool general and as many batch nodes, installs Istio
// 1.30.3 from the real charts as the other suites do, and creates the small fixtures
// (smallFixtures). The cluster is deleted when the test ends.
func newCluster(t *testing.T, ctx context.Context, name, cidr string, nodesPerPool int) *harness.Harness {
	t.Helper()
	o, err := harness.OptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if o.Cluster.Provider != cluster.ProviderKwok {
		t.Fatalf("the runbook suite makes clusters of its own and runs on kwok only (E2E_PROVIDER=%s)", o.Cluster.Provider)
	}
	o.Cluster.Name = name
	o.Cluster.ServiceCIDR = cidr
	base := o.Cluster.RunDir
	if base == "" {
		base = t.TempDir()
	}
	o.Cluster.RunDir = filepath.Join(base, name)
	o.Pools = []cluster.Pool{{Name: harness.PoolGeneral, Nodes: nodesPerPool}, {Name: harness.PoolBatch, Nodes: nodesPerPool}}
	h, err := harness.NewWithOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			_, _ = h.RecordFailure(ctx, nil, t)
		}
		h.Teardown()
		code := 0
		if t.Failed() {
			code = 1
		}
		h.Done(code)
	})
	cfg := envconf.New()
	for _, setup := range []func(context.Context, *envconf.Config) (context.Context, error){h.CreateCluster, h.InstallIstio} {
		if _, err := setup(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := smallFixtures(ctx, h, nodesPerPool); err != nil {
		t.Fatal(err)
	}
	return h
}

// smallFixtures creates what the small plans move: a sidecar namespace shop following tag
// prod-stable (Deployment web, 2 replicas, a budget of one unavailable) on the general pool, and an
// ambient namespace orders (Deployment orders, one pod on each of the nodesPerPool general nodes, a
// budget of all but one available). The batch pool runs no ambient pod, so its nodes are drained of
// ambient pods only.
func smallFixtures(ctx context.Context, h *harness.Harness, nodesPerPool int) error {
	cs := h.Clientset
	if err := h.Fake.Sync(ctx); err != nil {
		return err
	}
	nss := map[string]map[string]string{
		"shop":   {"istio.io/rev": harness.TagProdStable},
		"orders": {"istio.io/dataplane-mode": "ambient"},
	}
	for ns, labels := range nss {
		labels[fixtures.LabelFixture] = "true"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	one, allButOne := intstr.FromInt32(1), intstr.FromInt(nodesPerPool-1)
	for _, d := range []struct {
		ns, name string
		replicas int32
		pdb      policyv1.PodDisruptionBudgetSpec
	}{
		{"shop", "web", 2, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one}},
		{"orders", "orders", int32(nodesPerPool), policyv1.PodDisruptionBudgetSpec{MinAvailable: &allButOne}},
	} {
		sel := map[string]string{"app": d.name}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns, Labels: map[string]string{"app": d.name, fixtures.LabelFixture: "true"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(d.replicas),
				Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec: corev1.PodSpec{
						NodeSelector: map[string]string{cluster.PoolLabel: harness.PoolGeneral},
						// One pod a node, so every general node runs ambient pods when the plan is made.
						TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
							WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}},
						Containers:                    []corev1.Container{{Name: "app", Image: fixtures.DefaultAppImage}},
						TerminationGracePeriodSeconds: ptr.To(int64(1)),
					},
				},
			},
		}
		if _, err := cs.AppsV1().Deployments(d.ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Deployment %s/%s: %w", d.ns, d.name, err)
		}
		d.pdb.Selector = &metav1.LabelSelector{MatchLabels: sel}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns}, Spec: d.pdb}
		if _, err := cs.PolicyV1().PodDisruptionBudgets(d.ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create PodDisruptionBudget %s/%s: %w", d.ns, d.name, err)
		}
		if err := kube.WaitDeployment(ctx, cs, d.ns, d.name, h.Opts.Timeout); err != nil {
			return err
		}
	}
	_, err := h.CNI.Sync(ctx)
	return err
}
