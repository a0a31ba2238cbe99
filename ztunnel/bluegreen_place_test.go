package ztunnel_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// workload returns the demo workload of the kind, namespace and name, with a Scheduling of its own
// that the test may change.
func workload(t *testing.T, s *mesh.Snapshot, kind, ns, name string) *mesh.Workload {
	t.Helper()
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if w.Kind == kind && w.Namespace == ns && w.Name == name {
			sc := *w.Scheduling
			w.Scheduling = &sc
			w.Placed = append([]mesh.PodPlace(nil), w.Placed...)
			return w
		}
	}
	t.Fatalf("no %s %s/%s in the demo mesh", kind, ns, name)
	return nil
}

func hostnameIn(nodes ...string) []mesh.NodeSelectorTerm {
	return []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: nodes}}}}
}

func nodePool(t *testing.T, s *mesh.Snapshot, name string) *mesh.NodePool {
	t.Helper()
	for i := range s.NodePools {
		if s.NodePools[i].Name == name {
			return &s.NodePools[i]
		}
	}
	t.Fatalf("no NodePool %s", name)
	return nil
}

// TestBlueGreenPlacesTheEvictedPodsOnGreen: on the demo mesh (observed, so with capacity and
// requests), the plan names every pod no green node can ever take as blocking, every pod green's
// room cannot take as waivable, and says how many green nodes the waves need.
func TestBlueGreenPlacesTheEvictedPodsOnGreen(t *testing.T) {
	pools := ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}
	const (
		pg15, pg16, pg17 = "ip-10-0-1-15.ec2.internal", "ip-10-0-1-16.ec2.internal", "ip-10-0-1-17.ec2.internal"
	)
	for _, tc := range []struct {
		name     string
		capacity ztunnel.GreenCapacity
		cordon   bool
		mutate   func(t *testing.T, s *mesh.Snapshot)
		// pinned and nowhere are the findings' objects and a part of their "why"; added the new
		// green nodes the capacity finding counts ("" when not assessed).
		pinned, pinnedWhy   string
		nowhere, nowhereWhy string
		added               string
		notAssessed         string
	}{
		{name: "the demo mesh as it is moves without a finding, on the nodes its NodePools launch", capacity: pools, added: "1"},
		{name: "a StatefulSet held to its nodes by a hostname affinity blocks the plan, naming each pod",
			capacity: pools,
			mutate: func(t *testing.T, s *mesh.Snapshot) {
				workload(t, s, "StatefulSet", "data", "postgres").Scheduling.NodeAffinity = hostnameIn(pg15, pg16, pg17)
			},
			pinned: "StatefulSet data/postgres", pinnedWhy: "its node selector or affinity names its node", added: "1"},
		{name: "a pod that selects the blue colour blocks the plan",
			capacity: pools,
			mutate: func(t *testing.T, s *mesh.Snapshot) {
				workload(t, s, "Deployment", "orders", "orders").Scheduling.NodeSelector = map[string]string{ztunnel.DefaultColourLabel: "blue"}
				for i := range s.Nodes {
					s.Nodes[i].Labels[ztunnel.DefaultColourLabel] = "blue"
				}
			},
			pinned: "Deployment orders/orders", pinnedWhy: "keeps it off nodes labelled " + ztunnel.DefaultColourLabel + "=green", added: "1"},
		{name: "a local volume pins its pod",
			capacity: pools,
			mutate: func(t *testing.T, s *mesh.Snapshot) {
				w := workload(t, s, "StatefulSet", "data", "postgres")
				w.Placed[0].Volumes = []mesh.VolumePin{{Claim: "data-postgres-0", Volume: "pv-local-0", Local: true, Terms: hostnameIn(pg15)}}
			},
			pinned: "StatefulSet data/postgres", pinnedWhy: "local volume data-postgres-0", added: "1"},
		{name: "a zonal volume does not pin its pod: a new green node in its zone takes it",
			capacity: pools,
			mutate: func(t *testing.T, s *mesh.Snapshot) {
				w := workload(t, s, "StatefulSet", "data", "postgres")
				w.Placed[0].Volumes = []mesh.VolumePin{{Claim: "data-postgres-0", Volume: "pv-ebs-0",
					Terms: []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{"us-east-1b"}}}}}}}
			},
			added: "1"},
		{name: "a NodePool whose limit its blue nodes already fill launches nothing: the last waves' pods fit nowhere, naming the limit",
			capacity: ztunnel.GreenCapacity{NodePools: []string{"general"}},
			mutate: func(t *testing.T, s *mesh.Snapshot) {
				nodePool(t, s, "general").Limit = mesh.Resources{mesh.ResourceCPU: 8 * 7910}
				workload(t, s, "Deployment", "orders", "orders").Scheduling.Requests = mesh.Resources{mesh.ResourceCPU: 7000, mesh.ResourcePods: 1}
			},
			nowhere: "Deployment orders/orders", nowhereWhy: "NodePool general: limit of cpu reached", added: "0"},
		{name: "the size of the nodes the caller adds counts the green nodes the waves need",
			capacity: ztunnel.GreenCapacity{NodeAllocatable: mesh.Resources{mesh.ResourceCPU: 8000, mesh.ResourceMemory: 32 << 30, mesh.ResourcePods: 58}}, cordon: true,
			mutate: func(t *testing.T, s *mesh.Snapshot) {
				workload(t, s, "Deployment", "orders", "orders").Scheduling.Requests = mesh.Resources{mesh.ResourceCPU: 7000, mesh.ResourcePods: 1}
				workload(t, s, "Deployment", "payments", "payments-api").Scheduling.Requests = mesh.Resources{mesh.ResourceCPU: 5000, mesh.ResourcePods: 1}
			},
			added: "5"},
		{name: "without what the caller's nodes offer, green's room is not assessed and a finding says so",
			capacity:    ztunnel.GreenCapacity{},
			notAssessed: "green's room is not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := demoSnapshot(t)
			if tc.mutate != nil {
				tc.mutate(t, s)
			}
			p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: s.Ztunnels[0].Version,
				Strategy: ztunnel.BlueGreen{Capacity: tc.capacity, CordonAll: tc.cordon, BatchSize: 2}})
			if p == nil {
				t.Fatal(err)
			}
			pinned := findings(p, plan.CodeBlueGreenPodPinnedToBlue)
			switch {
			case tc.pinned == "" && len(pinned) > 0:
				t.Errorf("pinned pods %v, want none", pinned)
			case tc.pinned != "" && (len(pinned) != 1 || pinned[0].Object.String() != tc.pinned || !strings.Contains(pinned[0].Message, tc.pinnedWhy)):
				t.Errorf("pinned %+v, want one on %s saying %q", pinned, tc.pinned, tc.pinnedWhy)
			case tc.pinned != "" && !errors.Is(err, plan.ErrBlocked):
				t.Errorf("a pinned pod: err %v, want ErrBlocked", err)
			}
			nowhere := findings(p, plan.CodeEvictedPodFitsNowhere)
			switch {
			case tc.nowhere == "" && len(nowhere) > 0:
				t.Errorf("pods that fit nowhere %v, want none", nowhere)
			case tc.nowhere != "":
				i := slices.IndexFunc(nowhere, func(f plan.Finding) bool { return f.Object.String() == tc.nowhere })
				switch {
				case i < 0 || !strings.Contains(nowhere[i].Message, tc.nowhereWhy):
					t.Errorf("fits nowhere %+v, want one on %s saying %q", nowhere, tc.nowhere, tc.nowhereWhy)
				case !strings.Contains(nowhere[i].Remedy, "raise the limits of NodePool general"):
					t.Errorf("remedy %q does not say to raise the NodePool's limits", nowhere[i].Remedy)
				}
			}
			capacity := findings(p, plan.CodeBlueGreenCapacityNeeded)
			if len(capacity) != 1 {
				t.Fatalf("capacity findings %v, want one", capacity)
			}
			if got := capacity[0].Details["greenNodesAdded"]; got != tc.added {
				t.Errorf("green nodes added %q, want %q (%s)", got, tc.added, capacity[0].Message)
			}
			var said []string
			for _, f := range findings(p, plan.CodePlacementNotAssessed) {
				said = append(said, f.Message)
			}
			if got := strings.Join(said, "\n"); (tc.notAssessed == "") != (got == "") || !strings.Contains(got, tc.notAssessed) {
				t.Errorf("not assessed %q, want %q", got, tc.notAssessed)
			}
		})
	}
}

// TestRelabelledNodesTakeThePodsOnceGreen: with two nodes relabelled green, the placement counts
// them as green's room after their switch; a pod bigger than any of them fits nowhere.
func TestRelabelledNodesTakeThePodsOnceGreen(t *testing.T) {
	s := demoSnapshot(t)
	workload(t, s, "Deployment", "orders", "orders").Scheduling.Requests = mesh.Resources{mesh.ResourceCPU: 7500, mesh.ResourcePods: 1}
	workload(t, s, "Deployment", "catalog", "catalog").Scheduling.Requests = mesh.Resources{mesh.ResourceCPU: 9000, mesh.ResourcePods: 1}
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: s.Ztunnels[0].Version,
		Strategy: ztunnel.BlueGreen{CordonAll: true, Capacity: ztunnel.GreenCapacity{Relabel: []string{"ip-10-0-1-11.ec2.internal", "ip-10-0-1-12.ec2.internal"}}}})
	if p == nil {
		t.Fatal(err)
	}
	nowhere := findings(p, plan.CodeEvictedPodFitsNowhere)
	if len(nowhere) != 1 || nowhere[0].Object.String() != "Deployment catalog/catalog" || nowhere[0].Details["pods"] != "2" {
		t.Errorf("fits nowhere %+v, want catalog's two 9-cpu pods only: orders' two 7.5-cpu pods take the relabelled nodes", nowhere)
	}
}
