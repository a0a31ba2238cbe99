package estimate_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/estimate"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

const sec = time.Second

var nodeAgent = mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}

func TestTheLimitOfAPlansWavesIsItsSlowestDrainsZtunnelsAndSettles(t *testing.T) {
	sts := func(name string) estimate.LimitPod {
		return estimate.LimitPod{Name: name, Grace: 60 * sec, Budget: "db/ledger", Hold: 60 * sec}
	}
	web := func(name string) estimate.LimitPod {
		return estimate.LimitPod{Name: name, Grace: 20 * sec, Budget: "shop/web"}
	}
	type node = estimate.LimitNode
	type pod = estimate.LimitPod
	for _, tc := range []struct {
		name  string
		in    estimate.LimitInput
		total time.Duration
		drain time.Duration // of the first wave
	}{
		{"a wave lasts its slowest pod, then its ztunnel, then the settle", estimate.LimitInput{Waves: []estimate.LimitWave{{Settle: sec, Nodes: []node{
			{Name: "a", ZtunnelReady: 3 * sec, Pods: []pod{{Grace: 10 * sec}, {Grace: 20 * sec}}},
			{Name: "b", ZtunnelReady: 3 * sec, Pods: []pod{{Grace: 5 * sec}}},
			{Name: "c", ZtunnelReady: 3 * sec},
		}}}}, 24 * sec, 20 * sec},
		{"a node without pods still waits for its ztunnel", estimate.LimitInput{Waves: []estimate.LimitWave{{Nodes: []node{{Name: "a", ZtunnelReady: 3 * sec}}}}}, 3 * sec, 0},
		{"a budget of one serialises a StatefulSet spread over the wave", estimate.LimitInput{Waves: []estimate.LimitWave{{Nodes: []node{
			{Name: "a", Pods: []pod{sts("db/ledger-0")}}, {Name: "b", Pods: []pod{sts("db/ledger-1")}}, {Name: "c", Pods: []pod{sts("db/ledger-2")}},
		}}}}, 180 * sec, 180 * sec},
		{"a budget of two lets two terminate at a time", estimate.LimitInput{Allowed: map[string]int{"db/ledger": 2}, Waves: []estimate.LimitWave{{Nodes: []node{
			{Name: "a", Pods: []pod{sts("db/ledger-0")}}, {Name: "b", Pods: []pod{sts("db/ledger-1")}}, {Name: "c", Pods: []pod{sts("db/ledger-2")}},
		}}}}, 120 * sec, 120 * sec},
		{"a ReplicaSet's budget is free once the replacement is ready", estimate.LimitInput{Waves: []estimate.LimitWave{{Nodes: []node{
			{Name: "a", Pods: []pod{web("shop/web-1"), web("shop/web-2")}}, {Name: "b", Pods: []pod{web("shop/web-3")}},
		}}}}, 20 * sec, 20 * sec},
		{"waves add up", estimate.LimitInput{Waves: []estimate.LimitWave{
			{Settle: sec, Nodes: []node{{Name: "a", Pods: []pod{{Grace: 10 * sec}}}, {Name: "b", Pods: []pod{{Grace: 10 * sec}}}}},
			{Settle: sec, Nodes: []node{{Name: "c", Pods: []pod{{Grace: 10 * sec}}}}},
		}}, 22 * sec, 10 * sec},
		{"a budget allowing none counts as one", estimate.LimitInput{Allowed: map[string]int{"db/ledger": 0}, Waves: []estimate.LimitWave{{Nodes: []node{
			{Name: "a", Pods: []pod{sts("db/ledger-0")}}, {Name: "b", Pods: []pod{sts("db/ledger-1")}},
		}}}}, 120 * sec, 120 * sec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := estimate.Limit(tc.in)
			if r.Total != tc.total {
				t.Errorf("total %s, want %s (%+v)", r.Total, tc.total, r.Waves)
			}
			if len(r.Waves) > 0 && r.Waves[0].Drain != tc.drain {
				t.Errorf("first wave drained at %s, want %s", r.Waves[0].Drain, tc.drain)
			}
		})
	}
	r := estimate.Limit(estimate.LimitInput{Waves: []estimate.LimitWave{{Settle: sec, Nodes: []node{
		{Name: "a", ZtunnelReady: 3 * sec, Pods: []pod{{Grace: 10 * sec}}}, {Name: "b", ZtunnelReady: 3 * sec, Pods: []pod{{Grace: 20 * sec}, {Grace: 5 * sec}}},
	}}}})
	want := estimate.WaveLimit{Drain: 20 * sec, SlowestNode: "b", Longest: 20 * sec, Ztunnel: 3 * sec, Settle: sec, Total: 24 * sec, Pods: 3}
	if !reflect.DeepEqual(r.Waves[0], want) {
		t.Errorf("wave %+v, want %+v", r.Waves[0], want)
	}
}

// wavePlan is two waves of node steps (cordon, drain, wait for ztunnel, uncordon), each closed by a
// health gate settling 10s; each drain is expected to evict what expect gives its node.
func wavePlan(waves [][]string, expect func(node string) *plan.DrainExpect) *plan.Plan {
	p := plan.New(plan.Metadata{Name: "estimate", Operation: "test", Fingerprint: "sha256:x"})
	for b, nodes := range waves {
		id := "z/batch/" + string(rune('1'+b))
		for _, n := range nodes {
			w := &plan.WaveUnit{ID: id, Node: n}
			p.Steps = append(p.Steps,
				plan.Step{ID: "z/node/" + n + "/cordon", Description: "cordon", Risk: plan.RiskLow, Wave: w, Cordon: &plan.NodeRef{Node: n}},
				plan.Step{ID: "z/node/" + n + "/drain", Description: "drain", Risk: plan.RiskLow, Wave: w,
					Drain: &plan.NodeDrain{Node: n, TimeoutSeconds: 600, Expect: expect(n)}},
				plan.Step{ID: "z/node/" + n + "/wait", Description: "wait", Risk: plan.RiskNone, Wave: w,
					WaitFor: &plan.WaitFor{Check: plan.NewCheck(nodeAgent, plan.NodeAgentReadyArgs{Node: n}, "ready"), TimeoutSeconds: 120}},
				plan.Step{ID: "z/node/" + n + "/uncordon", Description: "uncordon", Risk: plan.RiskLow, Wave: w, Uncordon: &plan.NodeRef{Node: n}})
		}
		p.Steps = append(p.Steps, plan.Step{ID: id + "/health", Description: "gate", Risk: plan.RiskNone,
			HealthGate: &plan.HealthGate{Probe: "p", Scope: "s", SettleSeconds: 10}})
	}
	return p
}

func TestThePlansEstimateOfAWaveIsTheLimitModelOfItsExpectedPods(t *testing.T) {
	web := plan.ExpectedBudget{Budget: "shop/web", Allowed: 5, Pods: 1, GraceSeconds: 20}
	ledger := plan.ExpectedBudget{Budget: "db/ledger", Allowed: 1, Pods: 1, GraceSeconds: 60, Stateful: true}
	p := wavePlan([][]string{{"a", "b", "c"}, {"d"}}, func(n string) *plan.DrainExpect {
		if n == "d" {
			return nil // nothing to evict: only its ztunnel
		}
		// three pods: the web's, the ledger's and one no budget covers
		return &plan.DrainExpect{Pods: 3, GraceSeconds: 30, Budgets: []plan.ExpectedBudget{web, ledger}}
	})
	est := estimate.Time(p, estimate.Options{ZtunnelReady: 3 * sec, ReplacementReady: 2 * sec})
	if len(est.Waves) != 2 {
		t.Fatalf("%d waves, want 2: %+v", len(est.Waves), est.Waves)
	}
	// The ledger's budget lets one of its pods go at a time, each holding it for its grace and its
	// successor's start: 0, 62s, 124s, the last gone at 184s; then a ztunnel (3s).
	w := est.Waves[0]
	if w.Expected != 187*sec || w.Model.SlowestNode != "c" {
		t.Errorf("first wave expected %s (slowest %s), want 3m7s on c: %+v", w.Expected, w.Model.SlowestNode, w.Model)
	}
	if w.Least != 3*sec {
		t.Errorf("first wave at least %s, want 3s (only the ztunnels, pods gone at once)", w.Least)
	}
	// At most: each node's drain and wait to their timeouts, the nodes at once.
	if w.Most != 720*sec {
		t.Errorf("first wave at most %s, want 12m", w.Most)
	}
	if est.Waves[1].Expected != 3*sec {
		t.Errorf("second wave expected %s, want 3s", est.Waves[1].Expected)
	}
	// The whole plan: the waves and two health gates settling 10s each.
	if want := 187*sec + 3*sec + 20*sec; est.Total.Expected != want {
		t.Errorf("plan expected %s, want %s", est.Total.Expected, want)
	}
	if want := 3*sec + 3*sec + 20*sec; est.Total.Least != want {
		t.Errorf("plan at least %s, want %s", est.Total.Least, want)
	}
	// The runbook uses the default timings: ztunnel and replacements ready in 5s.
	var md strings.Builder
	if err := runbook.Render(&md, p); err != nil {
		t.Fatal(err)
	}
	if row := "| | **all** | 18 | 4 node passes | | 30s | 3m40s | 24m20s |"; !strings.Contains(md.String(), row) {
		t.Errorf("the runbook's Phases table lacks the row %q:\n%s", row, md.String())
	}
}
