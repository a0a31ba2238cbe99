//go:build e2e

package main

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
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
	n, _, _ := modelNode("n1", []*evictedPod{pod}, budgets, returns, 0, true, false)
	if len(n.Pods) != 1 {
		t.Fatalf("model node pods %v", n.Pods)
	}
	got := n.Pods[0]
	if got.Budget != "shop/web" || got.Hold != 2*time.Second || got.Grace != 11*time.Second {
		t.Errorf("model pod %+v; want budget shop/web held 2s (its return), terminating 11s (eviction to gone)", got)
	}
	n, _, _ = modelNode("n1", []*evictedPod{pod}, budgets, nil, 0, true, false)
	if n.Pods[0].Hold != 0 {
		t.Errorf("without returns seen the hold is the replacement's readiness (0), got %s", n.Pods[0].Hold)
	}
}
