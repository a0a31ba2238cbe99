package steps

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// fleet builds a snapshot of nodes with cpu millicores allocatable each and one workload per entry
// of pods: "Deployment ns/name" → the nodes of its pods, each pod requesting cpu.
type fleetPod struct {
	workload string // "Kind ns/name"
	node     string
	cpu      int64
}

func fleet(nodes map[string]int64, labels map[string]map[string]string, pods []fleetPod, sched map[string]mesh.Scheduling) *mesh.Snapshot {
	s := &mesh.Snapshot{}
	for name, cpu := range nodes {
		l := map[string]string{"kubernetes.io/hostname": name}
		for k, v := range labels[name] {
			l[k] = v
		}
		s.Nodes = append(s.Nodes, mesh.Node{Name: name, Ready: true, Labels: l,
			Allocatable: mesh.Resources{"cpu": cpu, "pods": 110}, Requested: mesh.Resources{}})
	}
	s.Normalize()
	idx := map[string]int{}
	for _, p := range pods {
		i, ok := idx[p.workload]
		if !ok {
			kind, ref, _ := strings.Cut(p.workload, " ")
			ns, name, _ := strings.Cut(ref, "/")
			sc := sched[p.workload]
			sc.Requests = mesh.Resources{"cpu": p.cpu, "pods": 1}
			s.Workloads = append(s.Workloads, mesh.Workload{Kind: kind, Namespace: ns, Name: name, Labels: map[string]string{"app": name}, Scheduling: &sc})
			i = len(s.Workloads) - 1
			idx[p.workload] = i
		}
		w := &s.Workloads[i]
		w.Pods++
		w.Placed = append(w.Placed, mesh.PodPlace{Name: fmt.Sprintf("%s-%d", w.Name, w.Pods), Node: p.node})
		if !slices.Contains(w.Nodes, p.node) {
			w.Nodes = append(w.Nodes, p.node)
		}
		for j := range s.Nodes {
			if s.Nodes[j].Name == p.node {
				s.Nodes[j].Requested = s.Nodes[j].Requested.Add(w.Scheduling.Requests)
			}
		}
	}
	return s
}

func drainAll(s *mesh.Snapshot) []DrainNode {
	var out []DrainNode
	for _, n := range s.Nodes {
		out = append(out, DrainNode{Node: n, Ambient: true})
	}
	return out
}

func waveSizes(waves [][]DrainNode) []int {
	var out []int
	for _, w := range waves {
		out = append(out, len(w))
	}
	return out
}

// TestWavesAreCutByTheRoomTheEvictedPodsNeed: room is counted in requests under the pods'
// constraints, a node whose pods would find no room outside its wave waits for a later one, and a
// pod that fits nowhere even with its node drained alone is named with why.
func TestWavesAreCutByTheRoomTheEvictedPodsNeed(t *testing.T) {
	t.Run("4-CPU nodes each running a 3-CPU pod, one node free: every wave is one node", func(t *testing.T) {
		nodes := map[string]int64{"n1": 4000, "n2": 4000, "n3": 4000, "n4": 4000, "n5": 4000}
		var pods []fleetPod
		for _, n := range []string{"n1", "n2", "n3", "n4"} {
			pods = append(pods, fleetPod{"Deployment shop/api-" + n, n, 3000})
		}
		s := fleet(nodes, nil, pods, nil)
		waves, rooms, unplaced := NewIndex(s).PlaceWaves(s, drainAll(s), 3)
		if got := waveSizes(waves); fmt.Sprint(got) != "[1 1 1 1 1]" {
			t.Errorf("waves of %v nodes, want five of one (a 3-CPU pod needs a whole free node)", got)
		}
		if len(unplaced) != 0 {
			t.Errorf("unplaced %+v, want none", unplaced)
		}
		if len(rooms) == 0 || !rooms[0].Capacity {
			t.Errorf("rooms %+v, want the capacity that cut the waves", rooms)
		}
	})
	t.Run("small pods fit beside each other: one wave of the batch", func(t *testing.T) {
		nodes := map[string]int64{"n1": 4000, "n2": 4000, "n3": 4000, "n4": 4000}
		pods := []fleetPod{{"Deployment shop/a", "n1", 500}, {"Deployment shop/b", "n2", 500}}
		s := fleet(nodes, nil, pods, nil)
		waves, _, unplaced := NewIndex(s).PlaceWaves(s, drainAll(s), 2)
		if got := waveSizes(waves); fmt.Sprint(got) != "[2 2]" || len(unplaced) != 0 {
			t.Errorf("waves %v, unplaced %+v; want [2 2] and none", got, unplaced)
		}
	})
	t.Run("a pod pinned by its selector to the node drained fits nowhere, and says so", func(t *testing.T) {
		nodes := map[string]int64{"n1": 4000, "n2": 4000}
		pods := []fleetPod{{"StatefulSet shop/db", "n1", 100}}
		sched := map[string]mesh.Scheduling{"StatefulSet shop/db": {NodeSelector: map[string]string{"kubernetes.io/hostname": "n1"}}}
		s := fleet(nodes, nil, pods, sched)
		_, _, unplaced := NewIndex(s).PlaceWaves(s, drainAll(s)[:1], 2)
		if len(unplaced) != 1 || unplaced[0].Pod != "db-1" || unplaced[0].From != "n1" ||
			unplaced[0].Reasons() != "drained by the wave on 1 node, node selector or affinity on 1 node" {
			t.Errorf("unplaced %+v, want db-1 from n1, refused by the wave and the selector", unplaced)
		}
	})
	t.Run("required anti-affinity on hostname: two replicas need two other nodes", func(t *testing.T) {
		nodes := map[string]int64{"n1": 4000, "n2": 4000, "n3": 4000}
		anti := mesh.Scheduling{AntiAffinity: []mesh.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname", Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}
		pods := []fleetPod{{"Deployment shop/web", "n1", 100}, {"Deployment shop/web", "n2", 100}}
		s := fleet(nodes, nil, pods, map[string]mesh.Scheduling{"Deployment shop/web": anti})
		waves, _, unplaced := NewIndex(s).PlaceWaves(s, drainAll(s), 3)
		if got := waveSizes(waves); fmt.Sprint(got) != "[1 1 1]" || len(unplaced) != 0 {
			t.Errorf("waves %v, unplaced %+v; want [1 1 1]: web-1 moves to n3, then n2's pod waits for n1", got, unplaced)
		}
	})
	t.Run("a taint the pod does not tolerate and a volume of another zone refuse nodes", func(t *testing.T) {
		nodes := map[string]int64{"n1": 4000, "n2": 4000, "n3": 4000}
		labels := map[string]map[string]string{"n1": {"zone": "a"}, "n2": {"zone": "b"}, "n3": {"zone": "a"}}
		s := fleet(nodes, labels, []fleetPod{{"StatefulSet shop/db", "n1", 100}}, nil)
		s.Nodes[2].Taints = []mesh.Taint{{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}}
		s.Workloads[0].Placed[0].Volumes = []mesh.VolumePin{{Claim: "data", Terms: []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: "zone", Operator: "In", Values: []string{"a"}}}}}}}
		_, _, unplaced := NewIndex(s).PlaceWaves(s, drainAll(s)[:1], 1)
		if len(unplaced) != 1 || unplaced[0].Why["volume data"] != 1 || unplaced[0].Why["taint dedicated=gpu:NoSchedule"] != 1 {
			t.Errorf("unplaced %+v, want db-1 refused by n2's zone and n3's taint", unplaced)
		}
	})
}

// TestPlacementNeverOvercommitsANodeAndAccountsForEveryEvictedPod: over generated fleets of two node
// sizes, pods of several sizes, selectors and anti-affinity, the simulation of every wave leaves no
// node with less than nothing free, and every pod a drain evicts is either on an open node or named
// as unplaced, in a wave of one node only.
func TestPlacementNeverOvercommitsANodeAndAccountsForEveryEvictedPod(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		nodes := map[string]int64{}
		labels := map[string]map[string]string{}
		n := 3 + r.IntN(12)
		for i := range n {
			name := fmt.Sprintf("n%02d", i)
			nodes[name] = []int64{2000, 8000}[r.IntN(2)]
			labels[name] = map[string]string{"pool": []string{"a", "b"}[r.IntN(2)]}
		}
		var pods []fleetPod
		sched := map[string]mesh.Scheduling{}
		used := map[string]int64{}
		for w := range 1 + r.IntN(8) {
			ref := fmt.Sprintf("Deployment shop/w%d", w)
			cpu := []int64{100, 500, 1500}[r.IntN(3)]
			switch r.IntN(3) {
			case 0:
				sched[ref] = mesh.Scheduling{NodeSelector: map[string]string{"pool": "a"}}
			case 1:
				sched[ref] = mesh.Scheduling{AntiAffinity: []mesh.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname",
					Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("w%d", w)}}}}}
			}
			for range 1 + r.IntN(4) {
				node := fmt.Sprintf("n%02d", r.IntN(n))
				if used[node]+cpu > nodes[node] {
					continue
				}
				used[node] += cpu
				pods = append(pods, fleetPod{ref, node, cpu})
			}
		}
		s := fleet(nodes, labels, pods, sched)
		batch := 1 + r.IntN(4)
		waves, _, unplaced := NewIndex(s).PlaceWaves(s, drainAll(s), batch)
		total := 0
		for _, w := range waves {
			if len(w) > batch {
				t.Fatalf("seed %d: a wave of %d nodes, batch %d", seed, len(w), batch)
			}
			total += len(w)
		}
		if total != len(s.Nodes) {
			t.Fatalf("seed %d: %d nodes in the waves, want %d", seed, total, len(s.Nodes))
		}
		replayWaves(t, fmt.Sprintf("seed %d", seed), s, waves, unplaced, true)
	}
}

// replayWaves plays the waves again with a fresh placer, with no trial to undo: every pod a wave
// evicts must be placed, or be named in unplaced, and no node may go below nothing free. With
// reopen (node by node, as PlaceWaves plans) each node of a wave is cordoned and its pods placed in
// turn, only the wave's first node (alone in it when it joined) may leave a pod unplaced, and the
// wave's nodes take pods again after
// it, the Pending ones first. Without (blue-green, as PlaceSequence plans) a wave's nodes are
// cordoned together and stay so, and growth adds nodes.
func replayWaves(t *testing.T, name string, s *mesh.Snapshot, waves [][]DrainNode, unplaced []Unplaced, reopen bool, growth ...Growth) {
	t.Helper()
	pl := newPlacer(s)
	named := map[string]bool{}
	for _, u := range unplaced {
		named[u.Workload.String()+"/"+u.Pod] = true
	}
	spent := make([]mesh.Resources, len(growth))
	added := make([]int, len(growth))
	var stranded []*ppod
	for i, w := range waves {
		var in []*pnode
		mark := func(d DrainNode) {
			if pn := pl.byName[d.Node.Name]; pn != nil {
				pn.inWave, pn.cordoned = true, true
				in = append(in, pn)
			}
		}
		if !reopen {
			for _, d := range w {
				mark(d)
			}
		}
		for j, d := range w {
			if reopen {
				mark(d)
			}
			pn := pl.byName[d.Node.Name]
			if pn == nil || !d.Ambient {
				continue
			}
			for _, p := range pn.evicted(d.KeepJobs) {
				u, ok := pl.place(p)
				for g := 0; !ok && g < len(growth); g++ {
					ok = pl.grow(p, &growth[g], &spent[g], &added[g], u.Why)
				}
				if ok {
					continue
				}
				if !named[p.w.Ref().String()+"/"+p.place.Name] || (reopen && j > 0) {
					t.Fatalf("%s: wave %d of %d nodes leaves %s of %s from its node %d without a node (%s); only the pods of a wave's first node, alone in it when it joined, may be left, each named by a finding",
						name, i+1, len(w), p.place.Name, p.w.Ref(), j+1, u.Reasons())
				}
				pl.apply(p, p.node, nil)
				stranded = append(stranded, p)
			}
		}
		for _, pn := range in {
			pn.inWave = false
			pn.cordoned = !reopen
		}
		var still []*ppod
		for _, p := range stranded {
			if _, ok := pl.place(p); !ok {
				still = append(still, p)
			}
		}
		stranded = still
		for _, pn := range pl.nodes {
			for k, v := range pn.free {
				if v < 0 {
					t.Fatalf("%s: wave %d leaves %s with %d %s free", name, i+1, pn.n.Name, v, k)
				}
			}
		}
	}
}

// TestBlueGreenPlacementNeverOvercommitsAndNamesEveryPodLeftPending: over generated fleets whose
// nodes drain for good, with green capacity of a random budget, every pod left without a node is
// named, and no node, new ones included, is overcommitted.
func TestBlueGreenPlacementNeverOvercommitsAndNamesEveryPodLeftPending(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 11))
		nodes := map[string]int64{}
		n := 2 + r.IntN(8)
		for i := range n {
			nodes[fmt.Sprintf("n%02d", i)] = []int64{2000, 8000}[r.IntN(2)]
		}
		var pods []fleetPod
		used := map[string]int64{}
		for w := range 1 + r.IntN(8) {
			cpu := []int64{100, 500, 1500, 3000}[r.IntN(4)]
			for range 1 + r.IntN(4) {
				node := fmt.Sprintf("n%02d", r.IntN(n))
				if used[node]+cpu <= nodes[node] {
					used[node] += cpu
					pods = append(pods, fleetPod{fmt.Sprintf("Deployment shop/w%d", w), node, cpu})
				}
			}
		}
		s := fleet(nodes, nil, pods, nil)
		batch := 1 + r.IntN(3)
		var waves [][]DrainNode
		var seq []SequenceWave
		for i, d := range drainAll(s) {
			if i%batch == 0 {
				waves = append(waves, nil)
				seq = append(seq, SequenceWave{})
			}
			waves[len(waves)-1] = append(waves[len(waves)-1], d)
			seq[len(seq)-1].Nodes = append(seq[len(seq)-1].Nodes, d)
		}
		g := Growth{Source: "green", Shape: mesh.Node{Name: "green", Allocatable: mesh.Resources{"cpu": 4000, "pods": 110}, Labels: map[string]string{}},
			Budget: mesh.Resources{"cpu": int64(r.IntN(5)) * 4000}}
		got := NewIndex(s).PlaceSequence(s, nil, seq, []Growth{g})
		if last := got.Added[0][len(got.Added[0])-1]; int64(last)*4000 > g.Budget["cpu"] {
			t.Fatalf("seed %d: %d green nodes added, beyond a budget of %d cpu", seed, last, g.Budget["cpu"])
		}
		replayWaves(t, fmt.Sprintf("seed %d", seed), s, waves, got.Unplaced, false, g)
	}
}
