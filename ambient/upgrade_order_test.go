package ambient_test

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// The upgrade's safety order (issue 19), as Istio's Helm upgrade procedure gives it: base (CRDs) →
// istiod → istio-cni → ztunnel → tags → gateways → removal of the old control plane
// (istio.io/latest/docs/ambient/upgrade/helm: "upgrade the CRDs first", the control plane before
// the data plane, the CNI node agent before ztunnel). Each phase is the set of steps below, after
// the version segment of a chained hop ("1.30.8/ztunnel/..."). Every step of a phase must come
// after, and depend (transitively, through DependsOn) on, every step of the phase present before it.
var upgradePhases = []struct {
	name string
	in   func(id string) bool
}{
	{"base", func(id string) bool { return id == "base/upgrade" }},
	{"istiod", func(id string) bool {
		return strings.HasPrefix(id, "istiod/") && !removes(id)
	}},
	{"cni", func(id string) bool { return strings.HasPrefix(id, "cni/") }},
	{"ztunnel", func(id string) bool { return strings.HasPrefix(id, "ztunnel/") }},
	{"tags", func(id string) bool { return strings.HasPrefix(id, "tags/") }},
	{"gateways", func(id string) bool { return strings.HasPrefix(id, "gateways/") }},
	{"removal", func(id string) bool { return id == "base/default-revision" || removes(id) }},
}

// removes reports whether a step removes a revision the upgrade leaves behind (its approval, backup,
// uninstall and the cleanup after it; in a chained upgrade the intermediate hop's revision too),
// rather than installing or upgrading one.
func removes(id string) bool {
	segs := strings.Split(id, "/")
	if len(segs) < 3 || segs[0] != "istiod" {
		return false
	}
	switch segs[2] {
	case "approve", "backup", "remove", "cleanup":
		return true
	}
	return false
}

// upgradeOrderViolations returns where a plan breaks the order.
func upgradeOrderViolations(p *plan.Plan) []string {
	pos := map[string]int{}
	deps := map[string][]string{}
	for i, st := range p.Steps {
		pos[st.ID], deps[st.ID] = i, st.DependsOn
	}
	reached := map[string]map[string]bool{}
	var reach func(id string) map[string]bool
	reach = func(id string) map[string]bool {
		if r, ok := reached[id]; ok {
			return r
		}
		r := map[string]bool{}
		reached[id] = r
		for _, d := range deps[id] {
			r[d] = true
			for x := range reach(d) {
				r[x] = true
			}
		}
		return r
	}
	// Per hop (chained upgrades repeat the phases), the steps of each phase.
	type key struct{ hop, phase int }
	var hops []string
	phases := map[key][]string{}
	for _, st := range p.Steps {
		hop, id := "", st.ID
		if seg, rest, ok := strings.Cut(id, "/"); ok {
			if _, err := mesh.ParseVersion(seg); err == nil {
				hop, id = seg, rest
			}
		}
		h := -1
		for i, x := range hops {
			if x == hop {
				h = i
			}
		}
		if h < 0 {
			hops, h = append(hops, hop), len(hops)
		}
		for i, ph := range upgradePhases {
			if ph.in(id) {
				phases[key{h, i}] = append(phases[key{h, i}], st.ID)
			}
		}
	}
	var out []string
	for h := range hops {
		prev := -1
		for i := range upgradePhases {
			if len(phases[key{h, i}]) == 0 {
				continue
			}
			if prev >= 0 {
				for _, later := range phases[key{h, i}] {
					for _, earlier := range phases[key{h, prev}] {
						if pos[later] < pos[earlier] || !reach(later)[earlier] {
							out = append(out, fmt.Sprintf("%s (%s) does not come after %s (%s)", later, upgradePhases[i].name, earlier, upgradePhases[prev].name))
						}
					}
				}
			}
			prev = i
		}
	}
	return out
}

// generatedUpgrade draws a mesh of 1 to 30 nodes on 1.29.x or 1.30.x and the options to upgrade it
// with: by revision or in place, ztunnel node by node (batch 0 to 6) or in place, restarts skipped
// or not, to 1.31.4 (1.29 meshes go through 1.30: chained hops).
func generatedUpgrade(r *rand.Rand) (string, *mesh.Snapshot, ambient.UpgradeOptions) {
	from := []string{"1.29.4", "1.30.3", "1.30.3"}[r.Intn(3)]
	n := 1 + r.Intn(30)
	s := meshtest.Healthy(from, n)
	opts := ambient.UpgradeOptions{Target: v("1.31.4"), Today: today, SkipRestart: r.Intn(4) == 0,
		Waive: []plan.Code{plan.CodePDBBlocksDrain, plan.CodeUnmanagedPodBlocksDrain}}
	if r.Intn(3) == 0 {
		opts.Strategy = ambient.StrategyInPlace
	}
	if r.Intn(3) == 0 {
		opts.Ztunnel = ambient.ZtunnelInPlace{}
	} else {
		opts.Ztunnel = ambient.ZtunnelNodeByNode{BatchSize: r.Intn(7)}
	}
	desc := fmt.Sprintf("%s, %d nodes, strategy %q, ztunnel %T %+v, skip restart %v", from, n, opts.Strategy, opts.Ztunnel, opts.Ztunnel, opts.SkipRestart)
	return desc, s, opts
}

const upgradeMeshes = 200

func TestTheUpgradeKeepsTheUpstreamOrderOnGeneratedMeshes(t *testing.T) {
	r := rand.New(rand.NewSource(19))
	planned := 0
	for i := 0; i < upgradeMeshes; i++ {
		desc, s, opts := generatedUpgrade(r)
		p, err := ambient.PlanUpgrade(s, opts)
		if errors.Is(err, plan.ErrBlocked) {
			continue
		}
		if err != nil {
			t.Fatalf("mesh %d (%s): %v", i, desc, err)
		}
		planned++
		if v := upgradeOrderViolations(p); len(v) > 0 {
			t.Fatalf("mesh %d (%s): the upgrade order is broken: %s", i, desc, strings.Join(v[:min(3, len(v))], "; "))
		}
	}
	if planned < upgradeMeshes/2 {
		t.Fatalf("only %d of %d generated meshes planned; the property says little", planned, upgradeMeshes)
	}
}

// TestTheUpgradeOrderPropertyCatchesEverySwap moves one step of each phase before the steps of the
// phase ahead of it (as a planner that swapped them would emit) and requires the property to fail.
func TestTheUpgradeOrderPropertyCatchesEverySwap(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 4)
	p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: v("1.31.4"), Today: today, Waive: []plan.Code{plan.CodePDBBlocksDrain}})
	if err != nil {
		t.Fatal(err)
	}
	if v := upgradeOrderViolations(p); len(v) > 0 {
		t.Fatalf("the unswapped plan already breaks the order: %v", v)
	}
	first := func(phase int) int {
		for i, st := range p.Steps {
			if upgradePhases[phase].in(st.ID) {
				return i
			}
		}
		return -1
	}
	for i := 1; i < len(upgradePhases); i++ {
		t.Run(upgradePhases[i-1].name+" and "+upgradePhases[i].name, func(t *testing.T) {
			a, b := first(i-1), first(i)
			if a < 0 || b < 0 {
				t.Fatalf("the plan has no step of phase %s or %s", upgradePhases[i-1].name, upgradePhases[i].name)
			}
			q := *p
			q.Steps = append([]plan.Step(nil), p.Steps...)
			st := q.Steps[b]
			st.DependsOn = nil // as planned before the earlier phase
			q.Steps = append(q.Steps[:b], q.Steps[b+1:]...)
			q.Steps = append(q.Steps[:a], append([]plan.Step{st}, q.Steps[a:]...)...)
			if len(upgradeOrderViolations(&q)) == 0 {
				t.Errorf("%s moved before %s breaks no rule of the property", st.ID, p.Steps[a].ID)
			}
		})
	}
}
