package plan_test

import (
	"bytes"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

var update = flag.Bool("update", false, "rewrite the schema file")

// The v1alpha1 documents under testdata/v1alpha1 are goldens the planners wrote before v1alpha2
// (git ed11582): they still decode and convert, and every step's and rollback's "verification" list
// is that step's postconditions now, check for check (forEachNode templates expanded for each node).
func TestAV1alpha1PlanDecodesAndConvertsToTheCurrentVersion(t *testing.T) {
	eachOldFixture(t, "v1alpha1", func(t *testing.T, old []byte, p *plan.Plan) {
		var doc any
		if err := yaml.Unmarshal(old, &doc); err != nil {
			t.Fatal(err)
		}
		want := map[string][]plan.Check{}
		collectVerifications(t, doc, nil, want)
		if len(want) == 0 {
			t.Fatal("the fixture has no verification list: it proves nothing")
		}
		got := map[string][]plan.Check{}
		for i := range p.Steps {
			s := &p.Steps[i]
			for s != nil {
				if len(s.Postconditions) > 0 {
					got[s.ID] = s.Postconditions
				}
				s = s.Rollback
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("postconditions after conversion differ from the v1alpha1 verification lists (-old +converted):\n%s", diff)
		}
		again, err := plan.EncodeYAML(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(again, []byte("verification:")) || !bytes.Contains(again, []byte("apiVersion: "+plan.APIVersion)) {
			t.Errorf("the converted plan is written in the old shape:\n%.400s", again)
		}
	})
}

// collectVerifications walks a decoded v1alpha1 document and records, for every object with an id
// and a verification list, the checks under that id; inside a forEachNode it records one entry per
// node with {node} replaced and that node's patch applied.
func collectVerifications(t *testing.T, v any, nodes []string, into map[string][]plan.Check) {
	t.Helper()
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			collectVerifications(t, e, nodes, into)
		}
	case map[string]any:
		if fe, ok := v["forEachNode"].(map[string]any); ok {
			var ns []string
			for _, n := range fe["nodes"].([]any) {
				ns = append(ns, n.(string))
			}
			collectVerifications(t, fe["steps"], ns, into)
			// A node's patch replaces the template's list for that node (a JSON merge patch: lists
			// are replaced whole).
			patches, _ := fe["patch"].(map[string]any)
			for id, patch := range patches {
				if ver, ok := patch.(map[string]any)["verification"]; ok {
					into[id] = checksFor(t, id, ver, id[strings.LastIndex(id, "/")+1:])
				}
			}
			return
		}
		if id, ok := v["id"].(string); ok && v["verification"] != nil {
			expand := []string{""}
			if strings.Contains(id, "{node}") {
				expand = nodes
			}
			for _, n := range expand {
				into[strings.ReplaceAll(id, "{node}", n)] = checksFor(t, id, v["verification"], n)
			}
		}
		for k, e := range v {
			if k != "verification" {
				collectVerifications(t, e, nodes, into)
			}
		}
	}
}

// checksFor decodes the verification list of step id with {node} replaced by node.
func checksFor(t *testing.T, id string, verification any, node string) []plan.Check {
	t.Helper()
	raw, err := json.Marshal(verification)
	if err != nil {
		t.Fatal(err)
	}
	var checks []plan.Check
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "{node}", node)), &checks); err != nil {
		t.Fatalf("verification of %s: %v", id, err)
	}
	return checks
}

// eachOldFixture decodes each document of testdata/<version> (three or more), checks it converts to
// the current version, and hands it to check with its bytes.
func eachOldFixture(t *testing.T, version string, check func(t *testing.T, old []byte, p *plan.Plan)) {
	files, err := filepath.Glob("testdata/" + version + "/*.plan.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("%s fixtures: %v, %d files", version, err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			old, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan.Decode(old)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if p.APIVersion != plan.APIVersion {
				t.Errorf("apiVersion %s after conversion, want %s", p.APIVersion, plan.APIVersion)
			}
			check(t, old, p)
		})
	}
}

func TestACurrentPlanRoundTripsByteForByte(t *testing.T) {
	p := plantest.SamplePlan()
	y, err := plan.EncodeYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := plan.Decode(y)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	y2, err := plan.EncodeYAML(back)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(y), string(y2)); d != "" {
		t.Errorf("YAML round trip (-first +second):\n%s", d)
	}
	j, _ := plan.EncodeJSON(p)
	jb, err := plan.Decode(j)
	if err != nil {
		t.Fatalf("Decode JSON: %v", err)
	}
	if d := cmp.Diff(p, jb); d != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", d)
	}
}

// TestThePlanDocumentSchemaIsPinned fails when a change to the Go types changes the document's
// shape: a field added is fine within a version (update the schema file with -update), a field
// renamed, removed or retyped needs a new version and its conversion (see plan.APIVersion).
func TestThePlanDocumentSchemaIsPinned(t *testing.T) {
	got := strings.Join(schemaOf(plan.WireType, "", map[reflect.Type]bool{}), "\n") + "\n"
	path := filepath.Join("testdata", "schema", "plan."+strings.TrimPrefix(plan.APIVersion, "ambientkit.io/")+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	var removed []string
	have := map[string]bool{}
	for _, l := range strings.Split(got, "\n") {
		have[l] = true
	}
	for _, l := range strings.Split(string(want), "\n") {
		if l != "" && !have[l] {
			removed = append(removed, l)
		}
	}
	if len(removed) > 0 {
		t.Errorf("the %s document lost or changed fields (a new version is needed, with a conversion):\n%s", plan.APIVersion, strings.Join(removed, "\n"))
	} else if got != string(want) {
		t.Errorf("the %s document gained fields; review them and run go test -update:\n%s", plan.APIVersion, cmp.Diff(string(want), got))
	}
}

// schemaOf lists the JSON paths of a type with their kinds: "steps[].drain.node string".
func schemaOf(t reflect.Type, path string, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeOf(plan.Options{}):
		return []string{path + "{} string|integer|boolean|[]string"}
	case reflect.PointerTo(t).Implements(reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()):
		return []string{path + " string"}
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return []string{path + " bytes"}
		}
		return schemaOf(t.Elem(), path+"[]", seen)
	case reflect.Map:
		return schemaOf(t.Elem(), path+"{}", seen)
	case reflect.Struct:
		if _, ok := reflect.New(t).Interface().(interface{ MarshalJSON() ([]byte, error) }); ok {
			return []string{path + " " + t.String()}
		}
		if seen[t] {
			return []string{path + " (" + t.Name() + ", as above)"}
		}
		seen[t] = true
		defer delete(seen, t)
		var out []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			out = append(out, schemaOf(f.Type, p, seen)...)
		}
		sort.Strings(out)
		return out
	}
	return []string{fmt.Sprintf("%s %s", path, t.Kind())}
}

// The v1alpha2 documents under testdata/v1alpha2 are goldens the planners wrote before v1alpha3
// (git f73a781): they decode to the same plan, whose v1alpha3 document writes the options typed,
// the status and every list, and reads back to the very plan.
func TestAV1alpha2PlanDecodesToTheSamePlanInTheCurrentVersion(t *testing.T) {
	eachOldFixture(t, "v1alpha2", func(t *testing.T, _ []byte, p *plan.Plan) {
		if p.Metadata.Options["batchSize"] == "" {
			t.Fatalf("the fixture's options lost batchSize: %v", p.Metadata.Options)
		}
		j, err := plan.EncodeJSON(p)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Status   string
			Metadata struct{ Options map[string]any }
			Steps    []any `json:"steps"`
		}
		if err := json.Unmarshal(j, &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc.Metadata.Options["batchSize"].(float64); !ok {
			t.Errorf("batchSize is written as %T, want a number", doc.Metadata.Options["batchSize"])
		}
		if doc.Status != string(p.Status()) || doc.Steps == nil {
			t.Errorf("status %q (want %q), steps %v: the document lacks what v1alpha3 writes", doc.Status, p.Status(), doc.Steps == nil)
		}
		back, err := plan.Decode(j)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(p, back); d != "" {
			t.Errorf("the v1alpha3 document does not read back to the plan (-v1alpha2 +v1alpha3):\n%s", d)
		}
	})
}
