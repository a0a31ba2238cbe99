package upgrade

import (
	"context"
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
