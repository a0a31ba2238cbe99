package mesh

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func req(key, op string, values ...string) NodeRequirement {
	return NodeRequirement{Key: key, Operator: op, Values: values}
}

func term(reqs ...NodeRequirement) NodeSelectorTerm { return NodeSelectorTerm{MatchExpressions: reqs} }

func TestPlaces(t *testing.T) {
	green := map[string]string{"colour": "green", "kubernetes.io/os": "linux", "size": "8"}
	for _, tc := range []struct {
		name  string
		sel   map[string]string
		terms []NodeSelectorTerm
		want  bool
	}{
		{"no selector and no affinity places on every node", nil, nil, true},
		{"a node selector the node matches places", map[string]string{"kubernetes.io/os": "linux"}, nil, true},
		{"a node selector the node misses does not place", map[string]string{"kubernetes.io/os": "windows"}, nil, false},
		{"an empty list of terms places nowhere", nil, []NodeSelectorTerm{}, false},
		{"an empty term places nowhere", nil, []NodeSelectorTerm{{}}, false},
		{"In with the node's value places", nil, []NodeSelectorTerm{term(req("colour", "In", "green"))}, true},
		{"NotIn with the node's value does not place", nil, []NodeSelectorTerm{term(req("colour", "NotIn", "green", "switching"))}, false},
		{"NotIn places on a node without the label", nil, []NodeSelectorTerm{term(req("zone", "NotIn", "a"))}, true},
		{"expressions of one term are ANDed", nil, []NodeSelectorTerm{term(req("colour", "In", "green"), req("zone", "Exists"))}, false},
		{"terms are ORed", nil, []NodeSelectorTerm{term(req("zone", "Exists")), term(req("colour", "Exists"))}, true},
		{"DoesNotExist of a present label does not place", nil, []NodeSelectorTerm{term(req("colour", "DoesNotExist"))}, false},
		{"Gt compares integers", nil, []NodeSelectorTerm{term(req("size", "Gt", "4"))}, true},
		{"Lt compares integers", nil, []NodeSelectorTerm{term(req("size", "Lt", "4"))}, false},
		{"Gt of a non-integer label does not place", nil, []NodeSelectorTerm{term(req("colour", "Gt", "4"))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Places(tc.sel, tc.terms, green); got != tc.want {
				t.Errorf("Places = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlacementsOverlap(t *testing.T) {
	blue := []NodeSelectorTerm{term(req("colour", "NotIn", "green", "switching"))}
	green := []NodeSelectorTerm{term(req("colour", "In", "green"))}
	for _, tc := range []struct {
		name       string
		selA       map[string]string
		a, b       []NodeSelectorTerm
		wantLabels map[string]string // nil: no overlap
	}{
		{"blue pinned off green and green on green never meet", nil, blue, green, nil},
		{"two unpinned ztunnels meet on any node", nil, nil, nil, map[string]string{}},
		{"an unpinned ztunnel meets green on green nodes", nil, nil, green, map[string]string{"colour": "green"}},
		{"blue meets a ztunnel that only excludes switching nodes", nil, blue, []NodeSelectorTerm{term(req("colour", "NotIn", "switching"))}, map[string]string{}},
		{"a node selector contradicting a term keeps them apart", map[string]string{"colour": "blue"}, nil, green, nil},
		{"one overlapping term of several is enough", nil, []NodeSelectorTerm{term(req("zone", "DoesNotExist")), term(req("colour", "Exists"))},
			[]NodeSelectorTerm{term(req("zone", "Exists"), req("colour", "In", "green"))}, map[string]string{"colour": "green", "zone": "any"}},
		{"Exists against NotIn finds a value that is not excluded", nil, []NodeSelectorTerm{term(req("colour", "Exists"))},
			[]NodeSelectorTerm{term(req("colour", "NotIn", "any"))}, map[string]string{"colour": "any-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := PlacementsOverlap(tc.selA, tc.a, nil, tc.b)
			if ok != (tc.wantLabels != nil) {
				t.Fatalf("overlap = %v (labels %v), want %v", ok, got, tc.wantLabels != nil)
			}
			if !ok {
				return
			}
			if d := cmp.Diff(tc.wantLabels, got); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if !Places(tc.selA, tc.a, got) || !Places(nil, tc.b, got) {
				t.Errorf("the labels %v do not place both", got)
			}
		})
	}
}
