package mesh_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// snapshotWithValues is a snapshot holding one Helm release with the values v, out of canonical
// order so that Normalized copies it.
func snapshotWithValues(v map[string]any) *mesh.Snapshot {
	return &mesh.Snapshot{APIVersion: mesh.APIVersion, Kind: mesh.SnapshotKind,
		Nodes:        []mesh.Node{{Name: "b"}, {Name: "a"}},
		HelmReleases: []mesh.HelmRelease{{Namespace: "istio-system", Name: "istiod", Values: v}}}
}

func TestNormalizedTakesYAMLV2ValuesAndRefusesWhatIsNotData(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		says   string // "" when Normalized succeeds
	}{
		{"maps decoded by a YAML v2 library get string keys", map[string]any{
			"pilot": map[any]any{"env": map[any]any{"A": "1"}, 2: []any{map[any]any{true: "x"}}}}, ""},
		{"a function is refused naming where it is", map[string]any{"pilot": map[string]any{"hook": func() {}}}, "pilot.hook"},
		{"a channel inside a list is refused naming its index", map[string]any{"list": []any{1, make(chan int)}}, "list[1]"},
		{"NaN is not a JSON number", map[string]any{"ratio": math.NaN()}, "ratio"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := mesh.Normalized(snapshotWithValues(tc.values))
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "istio-system/istiod") {
					t.Fatalf("err = %v; want an error naming the release and %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatalf("Normalized: %v", err)
			}
			if _, err := json.Marshal(out.HelmReleases[0].Values); err != nil {
				t.Errorf("normalized values are not JSON: %v", err)
			}
			if out.Nodes[0].Name != "a" {
				t.Errorf("the copy is not in canonical order: %v", out.Nodes)
			}
		})
	}
}

// FuzzNormalizedHelmValues feeds Helm values decoded from arbitrary YAML by a YAML v2 decoder (which
// makes map[any]any) to Normalized: it never panics, and what it accepts is JSON data it accepts
// again unchanged.
func FuzzNormalizedHelmValues(f *testing.F) {
	for _, seed := range []string{
		"pilot:\n  env:\n    CA_TRUSTED_NODE_ACCOUNTS: istio-system/ztunnel\n",
		"global: {hub: docker.io/istio, tag: 1.30.3}\n1: [a, {b: c}]\n",
		"a: .nan\nb: .inf\nc: ~\nd: [1, 2.5, true]\n",
		"? [x, y]\n: complex key\n",
		"&a x: *a\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw map[any]any
		if err := yamlv2.Unmarshal(data, &raw); err != nil {
			return
		}
		values := map[string]any{}
		for k, v := range raw {
			if s, ok := k.(string); ok {
				values[s] = v
			}
		}
		out, err := mesh.Normalized(snapshotWithValues(values))
		if err != nil {
			return
		}
		b, err := json.Marshal(out.HelmReleases[0].Values)
		if err != nil {
			t.Fatalf("accepted values that are not JSON: %v", err)
		}
		again, err := mesh.Normalized(out)
		if err != nil {
			t.Fatalf("normalized values are refused the second time: %v", err)
		}
		if b2, _ := json.Marshal(again.HelmReleases[0].Values); string(b2) != string(b) {
			t.Fatalf("a second Normalized changed the values:\n%s\n%s", b, b2)
		}
	})
}
