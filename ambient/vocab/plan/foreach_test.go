package plan_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

func roundTrip(t *testing.T, p *plan.Plan) []byte {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	y, err := plan.EncodeYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := plan.Decode(y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if d := cmp.Diff(p, back); d != "" {
		t.Fatalf("round trip changed the plan (-want +got):\n%s\n%s", d, y)
	}
	return y
}

func TestYAMLWritesTheStepsManyNodesShareOnce(t *testing.T) {
	tests := []struct {
		name string
		plan *plan.Plan
		// entries is how many forEachNode entries the YAML holds; patched the step IDs patched.
		entries int
		patched []string
		flat    []string
	}{
		{name: "nodes that go through the same steps are written once per batch, a lone node as it is",
			plan: plantest.NodeWaves(plantest.Names("pool-a", 7), 3, nil), entries: 2, flat: []string{"z/node/pool-a-6/drain"}},
		{name: "a node whose drain differs gets a patch of that step only",
			plan: plantest.NodeWaves(plantest.Names("pool-a", 4), 4, func(n string, s []plan.Step) {
				if n == "pool-a-2" {
					s[1].Drain.MayHold = []string{"StatefulSet shop/db: its pod restarts elsewhere"}
					s[1].Notes = []string{"a budget holds " + n}
				}
			}), entries: 1, patched: []string{"z/node/pool-a-2/drain"}},
		{name: "a node name inside a longer name is left alone",
			plan: plantest.NodeWaves([]string{"n-1", "n-10", "n-11"}, 3, func(n string, s []plan.Step) {
				s[0].Notes = []string{"the pool of " + n + " is n-1x"}
			}), entries: 1},
		{name: "steps that already say {node} are written as they are",
			plan: plantest.NodeWaves(plantest.Names("b", 3), 3, func(n string, s []plan.Step) { s[0].Reason = "literally {node}" }),
			flat: []string{"z/node/b-0/cordon", "z/node/b-1/cordon"}},
		{name: "a difference a merge patch cannot say (a null to keep) leaves the run as it is",
			plan: plantest.NodeWaves(plantest.Names("c", 2), 2, func(n string, s []plan.Step) {
				v := any("x")
				if n == "c-1" {
					v = nil
				}
				s[2] = plan.Step{ID: s[2].ID, Description: "label " + n, DependsOn: s[2].DependsOn, Risk: plan.RiskLow,
					ApplyObject: &plan.ApplyObject{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
						"metadata": map[string]any{"name": n, "namespace": "x"}, "data": map[string]any{"k": v}}}}
			}),
			flat: []string{"z/node/c-0/uncordon", "z/node/c-1/uncordon"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := roundTrip(t, tc.plan)
			if got := bytes.Count(y, []byte("- forEachNode:")); got != tc.entries {
				t.Errorf("%d forEachNode entries, want %d:\n%s", got, tc.entries, y)
			}
			for _, id := range tc.patched {
				if !bytes.Contains(y, []byte("      "+id+":")) {
					t.Errorf("no patch of %s:\n%s", id, y)
				}
			}
			for _, id := range tc.flat {
				if !bytes.Contains(y, []byte("- id: "+id+"\n")) {
					t.Errorf("step %s is not written as it is:\n%s", id, y)
				}
			}
		})
	}
}

func TestDecodeRefusesForEachNodeEntriesThatDoNotMakeTheirSteps(t *testing.T) {
	good, err := plan.EncodeYAML(plantest.NodeWaves(plantest.Names("pool-a", 3), 3, func(n string, s []plan.Step) {
		if n == "pool-a-1" {
			s[0].Notes = []string{"patched"}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, from, to, says string }{
		{"a patch of a step the entry does not make is refused", "z/node/pool-a-1/cordon:", "z/node/pool-a-9/cordon:", "does not make"},
		{"an unknown field of the entry is refused", "    nodes:", "    colour: red\n    nodes:", "unknown field"},
		{"a template whose id does not name the node is refused", "- id: z/node/{node}/cordon", "- id: z/node/cordon", "must hold {node}"},
		{"an entry beside a step field is refused", "- forEachNode:", "- id: x\n  forEachNode:", "holds nothing else"},
		{"an unknown field in a template step is refused", "      description: cordon {node}", "      colour: red\n      description: cordon {node}", "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { refusesEdit(t, good, tc.from, tc.to, tc.says) })
	}
}
