package plan_test

import (
	"bytes"
	"encoding"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

// TestTheJSONSchemaIsTheGoTypes regenerates the JSON Schema from the Go types the document is
// written from and fails when plan.schema.json differs (go test -run JSONSchema -update rewrites it).
func TestTheJSONSchemaIsTheGoTypes(t *testing.T) {
	got := generateSchema()
	if *update {
		if err := os.WriteFile("plan.schema.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := plan.JSONSchema(); !bytes.Equal(want, got) {
		t.Fatalf("plan.schema.json is not the schema of the Go types; run go test ./ambient/vocab/plan -run JSONSchema -update and review:\n%s", cmp.Diff(string(want), string(got)))
	}
}

// TestEveryGoldenPlanValidatesAgainstTheJSONSchema encodes every golden plan of the repository as
// JSON, as a program reading plans gets it, and validates it; a document the schema refuses (a
// null list, a mistyped option) fails. A schema that accepted anything would not refuse the
// broken documents at the end. It also holds each golden finding's severity to its code's table,
// which catches the severities the planners compute.
func TestEveryGoldenPlanValidatesAgainstTheJSONSchema(t *testing.T) {
	sch := CompileSchema(t)
	files := plantest.GoldenPlanFiles(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Decode(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, fd := range p.Findings {
			if !plan.CodeRaisedAs(fd.Code, fd.Severity) {
				t.Errorf("%s: finding %s on %s is %s, which its code's table (severities_table.go) does not allow: %v", f, fd.Code, fd.Object, fd.Severity, plan.CodeSeverities(fd.Code))
			}
			if fd.Severity != plan.Info && strings.TrimSpace(fd.Remedy) == "" {
				t.Errorf("%s: %s finding %s on %s has no remedy: a finding that stops a plan says how to fix it", f, fd.Severity, fd.Code, fd.Object)
			}
		}
		j, err := plan.EncodeJSON(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateJSON(sch, j); err != nil {
			t.Errorf("%s does not validate: %v", f, err)
		}
	}
	j, _ := plan.EncodeJSON(&plan.Plan{APIVersion: plan.APIVersion, Kind: plan.DocumentKind, Metadata: plan.Metadata{Name: "x", Fingerprint: "sha256:x"}})
	for _, bad := range []struct{ name, from, to string }{
		{"a null list of steps", `"steps": []`, `"steps": null`},
		{"a status that is none of the three", `"status": "runnable"`, `"status": "fine"`},
		{"an unknown field", `"kind": "Plan",`, `"kind": "Plan", "colour": "red",`},
	} {
		doc := bytes.Replace(j, []byte(bad.from), []byte(bad.to), 1)
		if bytes.Equal(doc, j) {
			t.Fatalf("%s: %q is not in the document:\n%s", bad.name, bad.from, j)
		}
		if ValidateJSON(sch, doc) == nil {
			t.Errorf("the schema accepts %s", bad.name)
		}
	}
}

// CompileSchema compiles plan.JSONSchema.
func CompileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(plan.JSONSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("plan.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("plan.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// ValidateJSON validates a JSON document against the schema.
func ValidateJSON(sch *jsonschema.Schema, j []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// generateSchema writes the JSON Schema of the plan document from the Go types: each struct a
// definition whose properties are its JSON fields (required unless omitempty or omitzero, no
// others allowed), Options and the status by hand, text marshalers as strings.
func generateSchema() []byte {
	g := &schemaGen{defs: map[string]any{}}
	root := g.of(plan.WireType, false)
	status := []string{string(plan.StatusRunnable), string(plan.StatusNeedsWaiver), string(plan.StatusBlocked)}
	g.defs["Plan"].(map[string]any)["properties"].(map[string]any)["status"] = map[string]any{"enum": status}
	g.defs["Plan"].(map[string]any)["properties"].(map[string]any)["apiVersion"] = map[string]any{"const": plan.APIVersion}
	g.defs["Plan"].(map[string]any)["properties"].(map[string]any)["kind"] = map[string]any{"const": plan.DocumentKind}
	doc := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://ambientkit.io/schemas/plan." + strings.TrimPrefix(plan.APIVersion, "ambientkit.io/") + ".json",
		"title":       "ambientkit plan document " + plan.APIVersion,
		"description": "A Plan as plan.EncodeJSON writes it. Generated from the Go types of github.com/ambientkit/ambientkit/ambient/vocab/plan by its tests; do not edit.",
		"$ref":        root["$ref"],
		"$defs":       g.defs,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

type schemaGen struct {
	defs map[string]any
}

var (
	textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	optionsType   = reflect.TypeOf(plan.Options{})
	durationType  = reflect.TypeOf(time.Duration(0))
	rawType       = reflect.TypeOf(json.RawMessage{})
)

// of is the schema of a type; nullable allows null (a pointer, map or slice field written
// without omitempty).
func (g *schemaGen) of(t reflect.Type, nullable bool) map[string]any {
	s := g.nonNull(t)
	if nullable {
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	return s
}

func (g *schemaGen) nonNull(t reflect.Type) map[string]any {
	switch {
	case t == optionsType:
		return map[string]any{"type": "object", "additionalProperties": map[string]any{"anyOf": []any{
			map[string]any{"type": "string"}, map[string]any{"type": "integer"}, map[string]any{"type": "boolean"},
			map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}}
	case t == durationType:
		return map[string]any{"type": "integer", "description": "nanoseconds"}
	case t == rawType:
		return map[string]any{}
	case t.Kind() != reflect.Pointer && t.Implements(textMarshaler), reflect.PointerTo(t).Implements(textMarshaler) && t.Kind() == reflect.Struct:
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.nonNull(t.Elem())
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.of(t.Elem(), t.Elem().Kind() == reflect.Pointer)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem(), false)}
	case reflect.Interface:
		return map[string]any{}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Struct:
		name := t.Name()
		if t == plan.WireType {
			name = "Plan"
		}
		if _, ok := g.defs[name]; !ok {
			def := map[string]any{"type": "object", "additionalProperties": false}
			g.defs[name] = def // before the fields: a Step holds its rollback Step
			props, required := map[string]any{}, []string{}
			g.fields(t, props, &required)
			def["properties"] = props
			if len(required) > 0 {
				sort.Strings(required)
				def["required"] = required
			}
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	panic("no schema for " + t.String())
}

// fields adds a struct's JSON fields, those of embedded structs inline as encoding/json does.
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			g.fields(ft, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		k := f.Type.Kind()
		nullable := !optional && (k == reflect.Pointer || k == reflect.Map || k == reflect.Slice) && f.Type != optionsType
		if t == plan.WireType && (name == "findings" || name == "steps") {
			nullable = false // the document always holds them, [] when empty
		}
		props[name] = g.of(f.Type, nullable)
		if !optional {
			*required = append(*required, name)
		}
	}
}
