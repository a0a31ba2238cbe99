//go:build e2e

package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestABudgetHoldsAnEvictionUntilItsAllowedDisruptionsNextGoUp(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	returns := []time.Time{at(1), at(4), at(9)}
	for _, tc := range []struct {
		name    string
		evicted time.Time
		want    time.Duration
		ok      bool
	}{
		{name: "an eviction before a return holds until it", evicted: at(2), want: 2 * time.Second, ok: true},
		{name: "an eviction at a return waits for the next one", evicted: at(4), want: 5 * time.Second, ok: true},
		{name: "an eviction after the last return has no hold seen", evicted: at(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := heldUntil(returns, tc.evicted)
			if got != tc.want || ok != tc.ok {
				t.Errorf("heldUntil = %s, %v; want %s, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestTheModelTakesABudgetsHoldAsTheClusterPlayedIt(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	budgets := []budget{{name: "shop/web", ns: "shop", selector: sel, allowed: 1}}
	pod := &evictedPod{NS: "shop", Name: "web-1", Node: "n1", Labels: map[string]string{"app": "web"}, Owner: "ReplicaSet",
		Grace: 10 * time.Second, Timing: "realistic", Seen: t0, Gone: t0.Add(11 * time.Second)}
	returns := map[string][]time.Time{"shop/web": {t0.Add(2 * time.Second)}}
	n, _, _ := modelNode("n1", []*evictedPod{pod}, budgets, returns, 0, nil, true, false)
	if len(n.Pods) != 1 {
		t.Fatalf("model node pods %v", n.Pods)
	}
	got := n.Pods[0]
	if got.Budget != "shop/web" || got.Hold != 2*time.Second || got.Grace != 11*time.Second {
		t.Errorf("model pod %+v; want budget shop/web held 2s (its return), terminating 11s (eviction to gone)", got)
	}
	n, _, _ = modelNode("n1", []*evictedPod{pod}, budgets, nil, 0, nil, true, false)
	if n.Pods[0].Hold != 0 {
		t.Errorf("without returns seen the hold is the replacement's readiness (0), got %s", n.Pods[0].Hold)
	}
}

func TestAZtunnelSwapRunsFromTheOldPodsDeletionToItsSuccessorReady(t *testing.T) {
	zt := func(uid string, ready, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "ztunnel-" + uid, UID: types.UID(uid),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ztunnelSwapDaemonSet, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: "n1"}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	w := &podWatch{swaps: map[string]*ztunnelSwap{}}
	w.ztunnelSeen(zt("old", true, false), false) // ready before the run deletes it: no swap yet
	if len(w.swaps) != 0 {
		t.Fatalf("a ready pod nobody deleted started a swap: %+v", w.swaps)
	}
	w.ztunnelSeen(zt("old", true, true), false)
	deleted := w.swaps["n1"].Deleted
	w.ztunnelSeen(zt("old", true, false), true) // its DELETED event: the swap started at the first sight
	w.ztunnelSeen(zt("new", false, false), false)
	if _, ok := w.swaps["n1"].took(); ok {
		t.Fatal("the swap ended before the successor was Ready")
	}
	w.ztunnelSeen(zt("new", true, false), false)
	d, ok := w.swaps["n1"].took()
	if !ok || w.swaps["n1"].Deleted != deleted || d < 0 {
		t.Fatalf("swap %+v (took %s, %v); want it from the first deletion seen to the successor Ready", w.swaps["n1"], d, ok)
	}
	n, _, _ := modelNode("n1", nil, nil, nil, 3*time.Second, w.swaps["n1"], true, false)
	if n.ZtunnelReady != d {
		t.Errorf("the model counts ztunnel %s on n1; want the swap as played, %s", n.ZtunnelReady, d)
	}
	n, _, _ = modelNode("n2", nil, nil, nil, 3*time.Second, nil, true, false)
	if n.ZtunnelReady != 3*time.Second {
		t.Errorf("with no swap seen the model counts %s; want the configured 3s", n.ZtunnelReady)
	}
}
