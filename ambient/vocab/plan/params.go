package plan

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// argsValidator is implemented by argument structs with rules beyond their fields' types.
type argsValidator interface{ validateArgs() error }

func (a NodeAgentReadyArgs) validateArgs() error {
	if (a.Node == "") == !a.All {
		return fmt.Errorf("set exactly one of params node and all")
	}
	return nil
}

func (a PodsRedirectedArgs) validateArgs() error {
	if a.Since != "" && a.Since != "step-start" {
		return fmt.Errorf("param since is %q; the only value is step-start", a.Since)
	}
	return nil
}

type paramField struct {
	name     string
	required bool
	index    int
}

func paramFields(t reflect.Type) []paramField {
	var out []paramField
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("param")
		if tag == "" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		out = append(out, paramField{name: name, required: opts == "required", index: i})
	}
	return out
}

// encodeParams writes the non-zero fields of an argument struct as params; nil when there are none.
func encodeParams(args Args) map[string]string {
	v := reflect.Indirect(reflect.ValueOf(args))
	out := map[string]string{}
	for _, f := range paramFields(v.Type()) {
		fv := v.Field(f.index)
		switch fv.Kind() {
		case reflect.String:
			if s := fv.String(); s != "" {
				out[f.name] = s
			}
		case reflect.Bool:
			if fv.Bool() {
				out[f.name] = "true"
			}
		case reflect.Int, reflect.Int64:
			if n := fv.Int(); n != 0 {
				out[f.name] = strconv.FormatInt(n, 10)
			}
		case reflect.Slice:
			if fv.Len() > 0 {
				out[f.name] = strings.Join(fv.Interface().([]string), ",")
			}
		default:
			panic(fmt.Sprintf("plan: param %s of %s has unsupported type %s", f.name, v.Type(), fv.Type()))
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// decodeParams reads params into the argument struct ptr points to: unknown params, values that do
// not parse and missing required params are errors.
func decodeParams(params map[string]string, ptr any) error {
	v := reflect.ValueOf(ptr).Elem()
	fields := paramFields(v.Type())
	known := map[string]paramField{}
	for _, f := range fields {
		known[f.name] = f
	}
	var unknown []string
	for k := range params {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, 0, len(fields))
		for _, f := range fields {
			names = append(names, f.name)
		}
		if len(names) == 0 {
			return fmt.Errorf("unknown params %v: it takes none", unknown)
		}
		return fmt.Errorf("unknown params %v: it takes %v", unknown, names)
	}
	for _, f := range fields {
		raw, ok := params[f.name]
		if !ok || raw == "" {
			if f.required {
				return fmt.Errorf("param %s is required", f.name)
			}
			continue
		}
		fv := v.Field(f.index)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(raw)
		case reflect.Bool:
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return fmt.Errorf("param %s is %q, not true or false", f.name, raw)
			}
			fv.SetBool(b)
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return fmt.Errorf("param %s is %q, not a whole number", f.name, raw)
			}
			fv.SetInt(n)
		case reflect.Slice:
			fv.Set(reflect.ValueOf(strings.Split(raw, ",")))
		}
	}
	if av, ok := v.Interface().(argsValidator); ok {
		if err := av.validateArgs(); err != nil {
			return err
		}
	}
	return nil
}

func sortStringsOf[S ~string](s []S) { sort.Slice(s, func(i, j int) bool { return s[i] < s[j] }) }
