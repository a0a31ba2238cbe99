package plan

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestEveryActionFieldIsAKindWithEveryPart fails when a Step action field has no entry in kindSpecs,
// when an entry misses a part (each is set, to its kind's value or to the shared "none" one), when a
// part reads another kind's payload, or when two entries claim one field.
func TestEveryActionFieldIsAKindWithEveryPart(t *testing.T) {
	st := reflect.TypeOf(Step{})
	nonAction := map[string]bool{"ID": true, "Description": true, "Reason": true, "DependsOn": true, "Risk": true, "Wave": true,
		"Preconditions": true, "Postconditions": true, "Rollback": true, "Notes": true, "Blocked": true}
	fields := 0
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		if nonAction[f.Name] {
			continue
		}
		fields++
		if f.Type.Kind() != reflect.Pointer {
			t.Errorf("Step.%s is not a pointer; action fields are optional payload pointers", f.Name)
			continue
		}
		var s Step
		reflect.ValueOf(&s).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		got := s.actions()
		if len(got) != 1 {
			t.Errorf("setting Step.%s gives actions %v; want exactly one kind", f.Name, got)
			continue
		}
		if string(got[0]) != f.Name {
			t.Errorf("Step.%s is reported as kind %s; a kind is named like its field", f.Name, got[0])
		}
		if s.Action() == nil {
			t.Errorf("Step.%s: Action() returns nil for a set payload", f.Name)
		}
		if spec, ok := specOf(got[0]); ok && missingParts(spec) == nil {
			callParts(t, spec, &s)
		}
	}
	if fields != len(kindSpecs) {
		t.Errorf("Step has %d action fields but kindSpecs lists %d kinds", fields, len(kindSpecs))
	}
	seen := map[Kind]bool{}
	for _, k := range kindSpecs {
		if seen[k.kind] {
			t.Errorf("kind %s is listed twice", k.kind)
		}
		seen[k.kind] = true
		if missing := missingParts(&k); missing != nil {
			t.Errorf("kind %s misses its %v (set every part; to the shared none value, such as noNode, when the kind has none)", k.kind, missing)
		}
	}
}

// missingParts names the parts a kind spec leaves unset.
func missingParts(k *kindSpec) []string {
	var out []string
	for name, set := range map[string]bool{
		"payload": k.payload != nil, "validate": k.validate != nil, "commands": k.commands != nil, "node": k.node != nil,
	} {
		if !set {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// callParts calls every part of a spec on a step with a zero payload of its kind, and nothing else:
// a part that reads another kind's field panics.
func callParts(t *testing.T, k *kindSpec, s *Step) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("kind %s: a part panics on a step of the kind (does it read another kind's field?): %v", k.kind, r)
		}
	}()
	k.validate(s, "step", func(string, ...any) {})
	k.commands(s)
	k.node(s)
}

func TestEveryCheckTypeHasTypedArguments(t *testing.T) {
	for _, ct := range CheckTypes() {
		s := checkSpecs[ct]
		a, ok := s.args().(interface{ CheckType() CheckType })
		if !ok {
			t.Errorf("check %s: its argument struct does not implement Args", ct)
			continue
		}
		if a.CheckType() != ct {
			t.Errorf("check %s: its argument struct says %s", ct, a.CheckType())
		}
		if !strings.HasSuffix(reflect.TypeOf(a).Elem().Name(), "Args") {
			t.Errorf("check %s: argument struct %T is not named <Check>Args", ct, a)
		}
	}
}
