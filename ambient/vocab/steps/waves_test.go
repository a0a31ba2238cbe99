package steps

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// wavesCluster is a snapshot of nodes named pool-i ("general-0"), Ready and schedulable unless
// listed in cordoned, and workloads by "Kind ns/name" running on the nodes given.
func wavesCluster(pools map[string]int, cordoned []string, workloads map[string][]string) *mesh.Snapshot {
	s := &mesh.Snapshot{}
	for pool, n := range pools {
		for i := range n {
			name := pool + "-" + string(rune('0'+i))
			s.Nodes = append(s.Nodes, mesh.Node{Name: name, Pool: pool, Ready: true})
		}
	}
	for i := range s.Nodes {
		for _, c := range cordoned {
			if s.Nodes[i].Name == c {
				s.Nodes[i].Unschedulable = true
			}
		}
	}
	for ref, nodes := range workloads {
		kind, rest, _ := strings.Cut(ref, " ")
		ns, name, _ := strings.Cut(rest, "/")
		s.Workloads = append(s.Workloads, mesh.Workload{Kind: kind, Namespace: ns, Name: name, Nodes: nodes, Pods: len(nodes), Mode: mesh.ModeAmbient})
	}
	return s
}

func TestNoWaveCordonsEveryNodeTheWorkloadsItEvictsCanMoveTo(t *testing.T) {
	orders := mesh.ObjectRef{Kind: "Deployment", Namespace: "orders", Name: "orders"}
	tests := []struct {
		name      string
		pools     map[string]int
		cordoned  []string
		workloads map[string][]string
		// order is the drain order; ambient nodes are those the workloads run on.
		order []string
		batch int
		want  [][]string
		rooms []Room
	}{
		{name: "a wave of a pool's every node leaves its last node to the next wave",
			pools:     map[string]int{"general": 3, "batch": 3},
			workloads: map[string][]string{"Deployment orders/orders": {"general-0", "general-1", "general-2"}},
			order:     []string{"batch-0", "batch-1", "batch-2", "general-0", "general-1", "general-2"}, batch: 3,
			want:  [][]string{{"batch-0", "batch-1", "batch-2"}, {"general-0", "general-1"}, {"general-2"}},
			rooms: []Room{{Pools: []string{"general"}, Schedulable: 3, Workloads: []mesh.ObjectRef{orders}, Deferred: 1}}},
		{name: "a node put off goes first in the next wave, before nodes that came after it",
			pools: map[string]int{"general": 2, "batch": 3},
			workloads: map[string][]string{"Deployment orders/orders": {"general-0", "general-1"},
				"Deployment jobs/worker": {"batch-0", "batch-1", "batch-2"}},
			order: []string{"general-0", "general-1", "batch-0", "batch-1", "batch-2"}, batch: 3,
			want:  [][]string{{"general-0", "batch-0", "batch-1"}, {"general-1", "batch-2"}},
			rooms: []Room{{Pools: []string{"general"}, Schedulable: 2, Workloads: []mesh.ObjectRef{orders}, Deferred: 1}}},
		{name: "rooms are by pool, each naming the workloads that needed it",
			pools: map[string]int{"general": 2, "batch": 2},
			workloads: map[string][]string{"Deployment orders/orders": {"general-0", "general-1"},
				"StatefulSet orders/db": {"general-0", "general-1"}, "Deployment jobs/worker": {"batch-0", "batch-1"}},
			order: []string{"general-0", "general-1", "batch-0", "batch-1"}, batch: 4,
			want: [][]string{{"general-0", "batch-0"}, {"general-1", "batch-1"}},
			rooms: []Room{
				{Pools: []string{"batch"}, Schedulable: 2, Workloads: []mesh.ObjectRef{{Kind: "Deployment", Namespace: "jobs", Name: "worker"}}, Deferred: 1},
				{Pools: []string{"general"}, Schedulable: 2, Workloads: []mesh.ObjectRef{orders}, Deferred: 1},
			}},
		{name: "a pool larger than the batch keeps every wave full",
			pools:     map[string]int{"general": 5},
			workloads: map[string][]string{"Deployment orders/orders": {"general-0", "general-1", "general-2", "general-3", "general-4"}},
			order:     []string{"general-0", "general-1", "general-2", "general-3", "general-4"}, batch: 3,
			want: [][]string{{"general-0", "general-1", "general-2"}, {"general-3", "general-4"}}},
		{name: "a workload running in two pools may have one of them in a wave whole",
			pools:     map[string]int{"general": 2, "batch": 2},
			workloads: map[string][]string{"Deployment orders/orders": {"general-0", "general-1", "batch-0"}},
			order:     []string{"general-0", "general-1", "batch-0", "batch-1"}, batch: 2,
			want: [][]string{{"general-0", "general-1"}, {"batch-0", "batch-1"}}},
		{name: "a pool's only node is drained alone",
			pools:     map[string]int{"general": 1, "batch": 2},
			workloads: map[string][]string{"Deployment orders/orders": {"general-0"}},
			order:     []string{"general-0", "batch-0", "batch-1"}, batch: 3,
			want:  [][]string{{"general-0", "batch-0", "batch-1"}},
			rooms: nil},
		{name: "a node cordoned before the plan is no room, and taking it into a wave takes none",
			pools: map[string]int{"general": 3}, cordoned: []string{"general-2"},
			workloads: map[string][]string{"Deployment orders/orders": {"general-0", "general-1"}},
			order:     []string{"general-0", "general-1", "general-2"}, batch: 3,
			want:  [][]string{{"general-0", "general-2"}, {"general-1"}},
			rooms: []Room{{Pools: []string{"general"}, Schedulable: 2, Workloads: []mesh.ObjectRef{orders}, Deferred: 1}}},
		{name: "DaemonSets and pods without a controller do not move and need no room",
			pools: map[string]int{"general": 2},
			workloads: map[string][]string{"DaemonSet kube-system/agent": {"general-0", "general-1"},
				"Pod orders/debug": {"general-0", "general-1"}},
			order: []string{"general-0", "general-1"}, batch: 2,
			want: [][]string{{"general-0", "general-1"}}},
		{name: "a batch of one is node by node, whatever the pools",
			pools:     map[string]int{"general": 2},
			workloads: map[string][]string{"Deployment orders/orders": {"general-0", "general-1"}},
			order:     []string{"general-0", "general-1"}, batch: 1,
			want: [][]string{{"general-0"}, {"general-1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := wavesCluster(tc.pools, tc.cordoned, tc.workloads)
			s.Normalize()
			ix := NewIndex(s)
			amb := map[string]bool{}
			for _, w := range s.Workloads {
				for _, n := range w.Nodes {
					amb[n] = true
				}
			}
			var order []DrainNode
			for _, name := range tc.order {
				n, ok := s.Node(name)
				if !ok {
					t.Fatalf("no node %s", name)
				}
				order = append(order, DrainNode{Node: n, Ambient: amb[name]})
			}
			waves, rooms := ix.Waves(s, order, tc.batch)
			var got [][]string
			for _, w := range waves {
				var names []string
				for _, d := range w {
					names = append(names, d.Node.Name)
				}
				got = append(got, names)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("waves (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.rooms, rooms, cmpEmpty); d != "" {
				t.Errorf("rooms (-want +got):\n%s", d)
			}
		})
	}
}

// cmpEmpty compares a nil slice equal to an empty one.
var cmpEmpty = cmp.FilterValues(func(a, b []Room) bool { return len(a) == 0 && len(b) == 0 }, cmp.Comparer(func(_, _ []Room) bool { return true }))
