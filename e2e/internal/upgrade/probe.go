package upgrade

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// MeshHealth is the "mesh-health" probe of the e2e upgrade: healthy only when istiod is ready (at least
// one revision, every revision's Deployment fully ready) and every ambient node (a node running pods
// ambient captures, mesh.Snapshot.AmbientNodes) has a ready, non-terminating ztunnel pod, and no node
// has pods of two ztunnel DaemonSets (during a blue-green each node runs one of the two). It observes
// the mesh through snapshot (observe.Live) each time it is asked.
func MeshHealth(snapshot func(context.Context) (*mesh.Snapshot, error)) execute.Probe {
	return func(ctx context.Context, scope string) (bool, string, error) {
		s, err := snapshot(ctx)
		if err != nil {
			return false, "", fmt.Errorf("observe the mesh for %s: %w", scope, err)
		}
		ok, why := Healthy(s)
		return ok, why, nil
	}
}

// Healthy is MeshHealth's verdict on one snapshot.
func Healthy(s *mesh.Snapshot) (bool, string) {
	var bad []string
	if len(s.Revisions) == 0 {
		bad = append(bad, "no istiod revision runs")
	}
	for _, r := range s.Revisions {
		if !r.Ready() {
			bad = append(bad, fmt.Sprintf("istiod revision %s is not ready (%d/%d replicas ready, status current=%v)", r.Name, r.ReadyReplicas, r.Replicas, r.ObservedCurrent))
		}
	}
	if len(s.Ztunnels) == 0 {
		bad = append(bad, "no ztunnel DaemonSet")
	}
	nodes := s.AmbientNodes()
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	var missing []string
	for _, n := range names {
		ready := false
		for _, z := range s.Ztunnels {
			if _, ok := mesh.ReadyAgentOn(z.Pods, n); ok {
				ready = true
			}
		}
		if !ready {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		bad = append(bad, fmt.Sprintf("ambient nodes without a ready ztunnel pod: %s", strings.Join(missing, ", ")))
	}
	two := map[string][]string{}
	for _, z := range s.Ztunnels {
		seen := map[string]bool{}
		for _, p := range z.Pods {
			if !seen[p.Node] {
				seen[p.Node] = true
				two[p.Node] = append(two[p.Node], z.Namespace+"/"+z.Name)
			}
		}
	}
	var doubles []string
	for n, zs := range two {
		if len(zs) > 1 {
			doubles = append(doubles, fmt.Sprintf("%s (%s)", n, strings.Join(zs, ", ")))
		}
	}
	if len(doubles) > 0 {
		sort.Strings(doubles)
		bad = append(bad, "nodes with pods of two ztunnels: "+strings.Join(doubles, ", "))
	}
	if len(bad) > 0 {
		return false, strings.Join(bad, "; ")
	}
	return true, ""
}
