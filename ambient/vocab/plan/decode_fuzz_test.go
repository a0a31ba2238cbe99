package plan_test

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

// FuzzDecode feeds arbitrary bytes to plan.Decode, starting from an encoded plan: it never panics,
// and a plan it accepts encodes and decodes to the same YAML.
func FuzzDecode(f *testing.F) {
	good, err := plan.EncodeYAML(plantest.SamplePlan())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("apiVersion: ambientkit.io/v1alpha1\nkind: Plan\nmetadata: {name: x, operation: y, fingerprint: z}\nsteps: []\n"))
	f.Add([]byte("steps:\n- forEachNode: {nodes: [a, b], steps: [{id: n/{node}, description: d, risk: low, cordon: {node: '{node}'}}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := plan.Decode(data)
		if err != nil {
			return
		}
		y, err := plan.EncodeYAML(p)
		if err != nil {
			t.Fatalf("a decoded plan does not encode: %v", err)
		}
		q, err := plan.Decode(y)
		if err != nil {
			t.Fatalf("an encoded plan does not decode: %v\n%s", err, y)
		}
		y2, err := plan.EncodeYAML(q)
		if err != nil || string(y2) != string(y) {
			t.Fatalf("the round trip changed the plan:\n%s\n---\n%s", y, y2)
		}
	})
}
