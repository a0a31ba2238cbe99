package ztunnel_test

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// The blue-green safety order (issue 19): pin blue → trust both → install green → green proven →
// drains → blue removed → trust green only. Each phase is the set of steps below; every step of a
// phase must come after, and depend (through DependsOn, which is what an executor follows) on,
// every step of the phase before it.
var safetyPhases = []struct {
	name string
	in   func(id string) bool
}{
	{"pin blue", func(id string) bool { return id == bgBase+"pin-blue" }},
	{"trust both", func(id string) bool { return strings.HasPrefix(id, bgBase+"trust/") }},
	{"install green", func(id string) bool { return id == bgBase+"install-green" }},
	{"green proven", func(id string) bool { return id == bgBase+"green-ready" || id == bgBase+"probe/captured" }},
	{"drains", func(id string) bool {
		return strings.HasPrefix(id, bgBase+"cordon/") || strings.HasPrefix(id, bgBase+"drain/")
	}},
	{"blue removed", func(id string) bool { return id == bgBase+"blue/uninstall" }},
	{"trust green only", func(id string) bool { return strings.HasPrefix(id, bgBase+"trust-green-only/") }},
}

const bgBase = "ztunnel/bluegreen/"

// safetyOrderViolations returns what breaks the order in a plan: a phase with no step, a step of a
// phase placed before, or not depending on, a step of the phase before it.
func safetyOrderViolations(p *plan.Plan) []string {
	pos := map[string]int{}
	deps := map[string][]string{}
	for i, st := range p.Steps {
		pos[st.ID] = i
		deps[st.ID] = st.DependsOn
	}
	after := map[string]map[string]bool{} // step → every step it depends on, transitively
	var reach func(id string) map[string]bool
	reach = func(id string) map[string]bool {
		if r, ok := after[id]; ok {
			return r
		}
		r := map[string]bool{}
		after[id] = r
		for _, d := range deps[id] {
			r[d] = true
			for x := range reach(d) {
				r[x] = true
			}
		}
		return r
	}
	phases := make([][]string, len(safetyPhases))
	for _, st := range p.Steps {
		for i, ph := range safetyPhases {
			if ph.in(st.ID) {
				phases[i] = append(phases[i], st.ID)
			}
		}
	}
	var out []string
	for i, ids := range phases {
		if len(ids) == 0 {
			out = append(out, "no step for phase "+safetyPhases[i].name)
		}
	}
	for i := 1; i < len(phases); i++ {
		for _, later := range phases[i] {
			for _, earlier := range phases[i-1] {
				if pos[later] < pos[earlier] || !reach(later)[earlier] {
					out = append(out, fmt.Sprintf("%s (%s) does not come after %s (%s)", later, safetyPhases[i].name, earlier, safetyPhases[i-1].name))
				}
			}
		}
	}
	return out
}

// generatedMesh is one mesh of the generator, with the blue-green options to plan it with.
type generatedMesh struct {
	desc string
	s    *mesh.Snapshot
	g    ztunnel.BlueGreen
}

// generateMesh draws a mesh: 2 to 24 nodes in one to three pools, green capacity from Karpenter
// NodePools, relabelled nodes or nodes the caller adds, batch sizes 0 to 5, Jobs, StatefulSets with
// local storage, budgets allowing one or no disruption, now and then an ambient DaemonSet, CordonAll,
// Jobs evicted, local storage evicted, no probe.
func generateMesh(r *rand.Rand) generatedMesh {
	n := 2 + r.Intn(23)
	s := meshtest.Healthy("1.30.3", n)
	pools := []string{"general", "batch", "gpu"}[:1+r.Intn(3)]
	var names []string
	for i := range s.Nodes {
		pool := pools[i%len(pools)]
		s.Nodes[i].Pool = pool
		s.Nodes[i].Labels["karpenter.sh/nodepool"] = pool
		names = append(names, s.Nodes[i].Name)
	}
	s.Namespaces = append(s.Namespaces, mesh.Namespace{Name: "work", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}})
	some := func() []string {
		var out []string
		for _, name := range names {
			if r.Intn(4) == 0 {
				out = append(out, name)
			}
		}
		return out
	}
	for i := 0; i < r.Intn(4); i++ {
		kind := []string{"Job", "StatefulSet", "Deployment"}[r.Intn(3)]
		w := mesh.Workload{Namespace: "work", Kind: kind, Name: fmt.Sprintf("w%d", i), Labels: map[string]string{"app": fmt.Sprintf("w%d", i)},
			Mode: mesh.ModeAmbient, Nodes: some(), LocalStorage: r.Intn(2) == 0}
		w.Pods, w.Ready = len(w.Nodes), len(w.Nodes)
		w.Redirection = map[string]int{"enabled": w.Pods}
		s.Workloads = append(s.Workloads, w)
		if r.Intn(2) == 0 {
			s.PodDisruptionBudgets = append(s.PodDisruptionBudgets, mesh.PodDisruptionBudget{Namespace: "work", Name: w.Name,
				Selector: &mesh.LabelSelector{MatchLabels: w.Labels}, DisruptionsAllowed: int32(r.Intn(2)), CurrentHealthy: int32(w.Pods), DesiredHealthy: int32(w.Pods)})
		}
	}
	if r.Intn(4) == 0 {
		s.Workloads = append(s.Workloads, mesh.Workload{Namespace: "work", Kind: "DaemonSet", Name: "agent", Mode: mesh.ModeAmbient,
			Pods: n, Ready: n, Redirection: map[string]int{"enabled": n}, Nodes: names})
	}
	g := ztunnel.BlueGreen{BatchSize: r.Intn(6), CordonAll: r.Intn(5) == 0, SkipProbe: r.Intn(5) == 0}
	if r.Intn(3) == 0 {
		g.Jobs = ztunnel.JobsEvict
	}
	if r.Intn(3) == 0 {
		g.LocalStorage = ztunnel.LocalStorageEvict
	}
	mode := "added"
	switch r.Intn(3) {
	case 0:
		mode = "nodepools"
		for _, p := range pools {
			s.NodePools = append(s.NodePools, mesh.NodePool{Name: p})
		}
		g.Capacity.NodePools = slices.Clone(pools)
	case 1:
		mode = "relabel"
		for _, i := range r.Perm(n)[:1+r.Intn(min(2, n-1))] {
			g.Capacity.Relabel = append(g.Capacity.Relabel, names[i])
		}
	default:
		g.Capacity.Nodes = r.Intn(4)
	}
	s.Normalize()
	return generatedMesh{desc: fmt.Sprintf("%d nodes in %v, %s capacity, batch %d, cordon all %v, %d workloads, %d budgets", n, pools, mode, g.BatchSize, g.CordonAll, len(s.Workloads), len(s.PodDisruptionBudgets)), s: s, g: g}
}

// waiveAll accepts what the generated meshes raise that a person would look at and accept.
var waiveAll = []plan.Code{plan.CodePDBBlocksDrain, plan.CodeUnmanagedPodBlocksDrain, plan.CodeBlueGreenNodePoolNotGreen}

const safetyMeshes = 300

func TestBlueGreenSafetyOrder(t *testing.T) {
	r := rand.New(rand.NewSource(19))
	for i := 0; i < safetyMeshes; i++ {
		m := generateMesh(r)
		p, err := ztunnel.BlueGreenZtunnel(m.s, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: m.g, Waive: waiveAll})
		if err != nil {
			t.Fatalf("mesh %d (%s): %v", i, m.desc, err)
		}
		if v := safetyOrderViolations(p); len(v) > 0 {
			t.Fatalf("mesh %d (%s): the blue-green order is broken: %s", i, m.desc, strings.Join(v[:min(3, len(v))], "; "))
		}
	}
}

// TestBlueGreenSafetyOrderNoticesASwap swaps two neighbouring phases in the planner and requires
// the property to fail on the generated meshes: it can fail.
func TestBlueGreenSafetyOrderNoticesASwap(t *testing.T) {
	for _, swap := range [][2]string{{"pin blue", "trust both"}, {"trust both", "install green"}, {"install green", "green proven"},
		{"green proven", "drains"}, {"drains", "blue removed"}, {"blue removed", "trust green only"}} {
		t.Run(swap[0]+" and "+swap[1], func(t *testing.T) {
			defer ztunnel.SwapBlueGreenPhases(swap[0], swap[1])()
			r := rand.New(rand.NewSource(19))
			for i := 0; i < safetyMeshes; i++ {
				m := generateMesh(r)
				p, err := ztunnel.BlueGreenZtunnel(m.s, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: m.g, Waive: waiveAll})
				if err == nil && len(safetyOrderViolations(p)) > 0 {
					return
				}
			}
			t.Errorf("with %s and %s swapped in the planner, no generated mesh breaks the order", swap[0], swap[1])
		})
	}
}
