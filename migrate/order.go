package migrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Ranked is one namespace in migration order, with what put it there.
type Ranked struct {
	Namespace string `json:"namespace"`
	// Missing is true when the namespace is not in the snapshot (it is put last; planning it is
	// blocked).
	Missing bool `json:"missing,omitempty"`
	// NeedsWaypoint: a policy or route of the namespace keeps its meaning only on a waypoint.
	NeedsWaypoint bool `json:"needsWaypoint,omitempty"`
	// Stateful counts StatefulSets, Jobs and workloads with local storage; Budgets the
	// PodDisruptionBudgets; Pods and Sidecars the pods and those with sidecars.
	Stateful int `json:"stateful,omitempty"`
	Budgets  int `json:"budgets,omitempty"`
	Pods     int `json:"pods"`
	Sidecars int `json:"sidecars,omitempty"`
	// Reason says in words why it stands where it does.
	Reason string `json:"reason"`
}

// Order ranks namespaces for migration, smallest and least critical first, so that whatever goes
// wrong goes wrong where it hurts least: namespaces that need no waypoint (no L7 policy or route to
// move), then fewer stateful workloads, fewer PodDisruptionBudgets, fewer pods, then by name.
// Namespaces not in the snapshot come last. Migrate them one at a time, each plan made from a
// snapshot taken after the previous one passed its health gate. It reads only the snapshot.
func Order(s *mesh.Snapshot, namespaces ...string) []Ranked {
	var out []Ranked
	seen := map[string]bool{}
	for _, name := range namespaces {
		if seen[name] || name == "" {
			continue
		}
		seen[name] = true
		r := Ranked{Namespace: name}
		ns := findNamespace(s, name)
		if ns == nil {
			r.Missing, r.Reason = true, "not in the snapshot"
			out = append(out, r)
			continue
		}
		r.Pods = ns.Pods.Total
		for _, n := range ns.Pods.Sidecar {
			r.Sidecars += n
		}
		for _, w := range s.Workloads {
			if w.Namespace == name && w.Stateful() {
				r.Stateful++
			}
		}
		for _, b := range s.PodDisruptionBudgets {
			if b.Namespace == name {
				r.Budgets++
			}
		}
		if rep, err := Readiness(s, name, ReadinessOptions{}); err == nil {
			r.NeedsWaypoint = rep.Waypoint.Needed
		}
		var why []string
		if r.NeedsWaypoint {
			why = append(why, "needs a waypoint")
		} else {
			why = append(why, "needs no waypoint")
		}
		why = append(why, fmt.Sprintf("%d stateful workload(s)", r.Stateful), fmt.Sprintf("%d PodDisruptionBudget(s)", r.Budgets),
			fmt.Sprintf("%d pods (%d with sidecars)", r.Pods, r.Sidecars))
		r.Reason = strings.Join(why, ", ")
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Missing != b.Missing:
			return !a.Missing
		case a.NeedsWaypoint != b.NeedsWaypoint:
			return !a.NeedsWaypoint
		case a.Stateful != b.Stateful:
			return a.Stateful < b.Stateful
		case a.Budgets != b.Budgets:
			return a.Budgets < b.Budgets
		case a.Pods != b.Pods:
			return a.Pods < b.Pods
		}
		return a.Namespace < b.Namespace
	})
	return out
}
