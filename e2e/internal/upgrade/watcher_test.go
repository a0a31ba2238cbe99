package upgrade

import (
	"context"
	appsv1 "k8s.io/api/apps/v1"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func ztunnelPod(name, node string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-system", Labels: map[string]string{"app": "ztunnel"}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func appPod(ns, name, node string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatcherSeesZtunnelGapsOnAmbientNodesOnly(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "orders", Labels: map[string]string{"istio.io/dataplane-mode": "ambient"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}},
		ztunnelPod("zt-a", "a", true), ztunnelPod("zt-b", "b", true), ztunnelPod("zt-c", "c", true),
		appPod("orders", "o1", "a", nil, nil),
		// Not ambient: opted out, a sidecar pod in an ambient namespace, a pod of a plain namespace.
		appPod("orders", "o2", "b", map[string]string{"istio.io/dataplane-mode": "none"}, nil),
		appPod("orders", "o3", "b", nil, map[string]string{"sidecar.istio.io/status": "{}"}),
		appPod("shop", "s1", "c", nil, nil),
	)
	w, err := StartWatcher(ctx, cs, "istio-system")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// Replacing ztunnel on nodes without ambient pods is no violation.
	for _, n := range []string{"zt-b", "zt-c"} {
		if err := cs.CoreV1().Pods("istio-system").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "two ztunnel deletions", func() bool { return w.Report().ZtunnelPodsDeleted == 2 })
	if r := w.Report(); len(r.Gaps) != 0 {
		t.Fatalf("gaps on nodes without ambient pods: %v", r.Gaps)
	}

	// A ztunnel that turns unready under an ambient pod opens a gap; a ready replacement closes it.
	if _, err := cs.CoreV1().Pods("istio-system").Update(ctx, ztunnelPod("zt-a", "a", false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an open gap", func() bool { return len(w.Report().Gaps) == 1 })
	if g := w.Report().Gaps[0]; g.Node != "a" || !g.End.IsZero() || len(g.AmbientPods) != 1 || g.AmbientPods[0] != "orders/o1" {
		t.Fatalf("gap %+v, want an open one on node a naming orders/o1", g)
	}
	if _, err := cs.CoreV1().Pods("istio-system").Create(ctx, ztunnelPod("zt-a2", "a", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the gap to close", func() bool { g := w.Report().Gaps; return len(g) == 1 && !g[0].End.IsZero() })

	// An ambient pod landing on a node without ztunnel (its ztunnel is gone) is a violation too.
	if _, err := cs.CoreV1().Pods("orders").Create(ctx, appPod("orders", "o4", "b", nil, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a second gap", func() bool { return len(w.Report().Gaps) == 2 })
	if g := w.Report().Gaps[1]; g.Node != "b" {
		t.Fatalf("second gap %+v, want node b", g)
	}
}

func TestWatcherSeesPDBViolations(t *testing.T) {
	ctx := context.Background()
	pdb := func(current, desired int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 1},
			Status:     policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: current, DesiredHealthy: desired},
		}
	}
	cs := fake.NewClientset(pdb(3, 2))
	w, err := StartWatcher(ctx, cs, "istio-system")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, c := range []int32{2, 1, 3} {
		if _, err := cs.PolicyV1().PodDisruptionBudgets("shop").UpdateStatus(ctx, pdb(c, 2), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a closed violation", func() bool { v := w.Report().PDBViolations; return len(v) == 1 && !v[0].End.IsZero() })
	r := w.Report()
	if v := r.PDBViolations[0]; v.PDB != "shop/web" || v.CurrentHealthy != 1 || v.Desired != 2 {
		t.Fatalf("violation %+v", v)
	}
	if r.PDBMinMargin["shop/web"] != -1 {
		t.Fatalf("min margin %d, want -1", r.PDBMinMargin["shop/web"])
	}
}

func TestWatcherSeesTwoZtunnelsOnANodeAndUntrustedOnes(t *testing.T) {
	ctx := context.Background()
	green := func(name, node string) *corev1.Pod {
		p := ztunnelPod(name, node, true)
		p.Namespace, p.Spec.ServiceAccountName = "ztunnel-green", "ztunnel-green"
		return p
	}
	istiod := func(trust string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "istiod-1-31-4", Namespace: "istio-system", Labels: map[string]string{"app": "istiod"}},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery",
				Env: []corev1.EnvVar{{Name: "CA_TRUSTED_NODE_ACCOUNTS", Value: trust}}}}}}}}
	}
	blue := ztunnelPod("zt-a", "a", true)
	blue.Spec.ServiceAccountName = "ztunnel"
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}}, blue, istiod("istio-system/ztunnel"))
	w, err := StartWatcherWith(ctx, cs, Options{ZtunnelNamespaces: []string{"istio-system", "ztunnel-green"}, Trust: "istio-system"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if r := w.Report(); len(r.Doubles)+len(r.TrustGaps) != 0 {
		t.Fatalf("one trusted ztunnel per node is fine: %+v", r)
	}
	// Green on another node while istiod does not trust it yet: a trust gap, no double.
	if _, err := cs.CoreV1().Pods("ztunnel-green").Create(ctx, green("zg-b", "b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a trust gap", func() bool { return len(w.Report().TrustGaps) == 1 })
	if g := w.Report().TrustGaps[0]; g.Account != "ztunnel-green/ztunnel-green" || !g.End.IsZero() {
		t.Fatalf("trust gap %+v", g)
	}
	if _, err := cs.AppsV1().Deployments("istio-system").Update(ctx, istiod("istio-system/ztunnel,ztunnel-green/ztunnel-green"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the trust gap to close", func() bool { g := w.Report().TrustGaps; return len(g) == 1 && !g[0].End.IsZero() })
	// Green on blue's node: a double, however ready either is.
	if _, err := cs.CoreV1().Pods("ztunnel-green").Create(ctx, green("zg-a", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a double", func() bool { return len(w.Report().Doubles) == 1 })
	if d := w.Report().Doubles[0]; d.Node != "a" || len(d.Pods) != 2 {
		t.Fatalf("double %+v", d)
	}
	if err := cs.CoreV1().Pods("istio-system").Delete(ctx, "zt-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the double to close", func() bool { d := w.Report().Doubles; return len(d) == 1 && !d[0].End.IsZero() })
}

func TestRequestKey(t *testing.T) {
	for _, c := range []struct {
		method, path string
		watch        bool
		want         string
	}{
		{"GET", "/api/v1/namespaces/x/pods", false, "LIST pods"},
		{"GET", "/api/v1/pods", true, "WATCH pods"},
		{"GET", "/api/v1/nodes/n1", false, "GET nodes"},
		{"POST", "/api/v1/namespaces/x/pods/p/eviction", false, "CREATE pods/eviction"},
		{"PATCH", "/apis/apps/v1/namespaces/x/deployments/d", false, "PATCH deployments"},
		{"GET", "/api/v1/namespaces", false, "LIST namespaces"},
		{"GET", "/api/v1/namespaces/x", false, "GET namespaces"},
		{"GET", "/version", false, "GET /version"},
	} {
		if got := RequestKey(c.method, c.path, c.watch); got != c.want {
			t.Errorf("RequestKey(%s %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

// evict marks a pod as the Eviction API leaves it: terminating, with the DisruptionTarget condition.
func evict(p *corev1.Pod) *corev1.Pod {
	q := p.DeepCopy()
	now := metav1.Now()
	q.DeletionTimestamp = &now
	q.Status.Conditions = append(q.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	return q
}

func TestWatcherCountsTheNodesDrainingAtOnceFromTheirEvictedPods(t *testing.T) {
	ctx := context.Background()
	pods := []*corev1.Pod{
		appPod("shop", "a1", "a", nil, nil), appPod("shop", "a2", "a", nil, nil),
		appPod("shop", "b1", "b", nil, nil), appPod("shop", "c1", "c", nil, nil),
		appPod("shop", "d1", "d", nil, nil),
	}
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, pods[0], pods[1], pods[2], pods[3], pods[4])
	w, err := StartWatcher(ctx, cs, "istio-system")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	update := func(p *corev1.Pod) {
		t.Helper()
		if _, err := cs.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(p *corev1.Pod) {
		t.Helper()
		if err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	drains := func(n int) func() bool {
		return func() bool { return len(w.Report().Drains) == n }
	}
	// Nodes a and b drain together: a lasts until its second pod is gone, after b's.
	update(evict(pods[0]))
	update(evict(pods[1]))
	update(evict(pods[2]))
	waitFor(t, "two drains open", drains(2))
	del(pods[2])
	del(pods[0])
	time.Sleep(20 * time.Millisecond)
	// A pod that terminates without the Eviction API (a rollout) drains nothing.
	c := pods[3].DeepCopy()
	now := metav1.Now()
	c.DeletionTimestamp = &now
	update(c)
	// Node d drains while a still does.
	update(evict(pods[4]))
	waitFor(t, "three drains", drains(3))
	del(pods[1])
	del(pods[4])
	waitFor(t, "every drain closed", func() bool {
		for _, d := range w.Report().Drains {
			if d.End.IsZero() {
				return false
			}
		}
		return true
	})
	r := w.Report()
	if most, at := r.MostDraining(nil); most != 2 || len(at) != 2 {
		t.Errorf("MostDraining = %d %v, want 2 nodes (a with b, then a with d)", most, at)
	}
	if most, at := r.MostDraining(map[string]bool{"a": true}); most != 1 {
		t.Errorf("MostDraining without a = %d %v, want 1 (b and d never overlap)", most, at)
	}
	for _, d := range r.Drains {
		if d.Node == "c" {
			t.Errorf("node c drained %v: a pod deleted without the Eviction API is no drain", d)
		}
	}
}
