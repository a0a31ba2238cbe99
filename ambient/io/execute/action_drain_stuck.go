package execute

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultStallAfter is how long a drain may see no way forward before it stops, when
// Options.StallAfter is 0.
const DefaultStallAfter = 2 * time.Minute

// drainStuck looks, on a pass that budgets refused, at the pods of each refusing budget for what
// keeps it from ever allowing the drain's evictions, and returns an error wrapping ErrDrainStuck
// once that has lasted Options.StallAfter (nil while it has not, or when nothing is found):
//
//   - a pod of the budget Pending because the scheduler finds no node for it (condition PodScheduled
//     False, reason Unschedulable, for StallAfter by the condition's own transition time): the
//     budget waits for it, and the drain took its room;
//   - a budget that allows no disruption with every pod it selects ready (minAvailable of all of
//     them, maxUnavailable 0), seen so on every pass for StallAfter: no pod turning ready will
//     change it.
//
// The budget's allowed disruptions are computed from its spec and its pods as the disruption
// controller computes them (k8s.io/kubernetes@v1.37.2 pkg/controller/disruption/disruption.go,
// getExpectedPodCount and countHealthyPods; percentages round up), over the pods that exist rather
// than the controller's scale,, not read from its
// status, so a status the controller has not written yet does not mislead it.
func (e *engine) drainStuck(ctx context.Context, r *run, node string, pdbNames []string) error {
	if e.opts.StallAfter < 0 || len(pdbNames) == 0 {
		return nil
	}
	now := e.clock.Now()
	stuck := false
	for _, n := range pdbNames {
		ns, name, _ := strings.Cut(n, "/")
		// A LIST of the namespace's budgets, not a GET: the drain's derived permissions hold the LIST
		// (plan/rbac kinds.go, KindDrain), which the refused evictions already need.
		var list policyv1.PodDisruptionBudgetList
		if err := e.list(ctx, "PodDisruptionBudgets in "+ns, &list, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("read PodDisruptionBudget %s that holds the drain of node %s: %w", n, node, err)
		}
		i := slices.IndexFunc(list.Items, func(b policyv1.PodDisruptionBudget) bool { return b.Name == name })
		if i < 0 || list.Items[i].Spec.Selector == nil {
			continue
		}
		b := list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil {
			continue
		}
		var pods corev1.PodList
		if err := e.list(ctx, "pods of PodDisruptionBudget "+n, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return err
		}
		expected, healthy := 0, 0
		var unschedulable []string
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			expected++
			if p.DeletionTimestamp == nil && podReady(p) {
				healthy++
			}
			if c, ok := unscheduled(p); ok && now.Sub(c.LastTransitionTime.Time) >= e.opts.StallAfter {
				unschedulable = append(unschedulable, fmt.Sprintf("pod %s/%s (Pending %s: %s)", p.Namespace, p.Name, now.Sub(c.LastTransitionTime.Time).Round(time.Second), c.Message))
			}
		}
		if len(unschedulable) > 0 {
			sort.Strings(unschedulable)
			return fmt.Errorf("%w: drain of node %s waits on PodDisruptionBudget %s, which waits for %s, and the scheduler finds no node for it; make room where it may run (a node, fewer nodes cordoned at once, a smaller batch), then run again (the journal resumes the drain)",
				ErrDrainStuck, node, n, strings.Join(unschedulable, ", "))
		}
		if expected > 0 && healthy == expected && healthy-desiredHealthy(&b, expected) <= 0 {
			stuck = true
			first, seen := r.stuckSince[n]
			if !seen {
				r.stuckSince[n] = now
				continue
			}
			if now.Sub(first) >= e.opts.StallAfter {
				return fmt.Errorf("%w: drain of node %s: PodDisruptionBudget %s allows no eviction with all %d of its pods ready (%s), so no replacement turning ready will let one go; relax the budget (maxUnavailable 1) or scale the workload up, then run again (the journal resumes the drain)",
					ErrDrainStuck, node, n, expected, budgetSpec(&b))
			}
		}
	}
	if !stuck {
		clear(r.stuckSince)
	}
	return nil
}

// unscheduled returns a pod's PodScheduled condition when the scheduler found no node for it.
func unscheduled(p *corev1.Pod) (corev1.PodCondition, bool) {
	if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
		return corev1.PodCondition{}, false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// desiredHealthy is how many of expected pods the budget wants healthy.
func desiredHealthy(b *policyv1.PodDisruptionBudget, expected int) int {
	switch {
	case b.Spec.MinAvailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, expected, true)
		if err != nil {
			return expected
		}
		return v
	case b.Spec.MaxUnavailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, expected, true)
		if err != nil {
			return expected
		}
		return max(0, expected-v)
	}
	return 0
}

// budgetSpec writes what a budget asks ("minAvailable 3", "maxUnavailable 0").
func budgetSpec(b *policyv1.PodDisruptionBudget) string {
	switch {
	case b.Spec.MinAvailable != nil:
		return "minAvailable " + b.Spec.MinAvailable.String()
	case b.Spec.MaxUnavailable != nil:
		return "maxUnavailable " + b.Spec.MaxUnavailable.String()
	}
	return "no minAvailable or maxUnavailable"
}
