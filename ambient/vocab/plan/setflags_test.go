package plan_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

func TestSetFlagsSetExactlyTheValuesWhenCopiedIntoAShell(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"a plain string is a bare --set", map[string]any{"profile": "ambient"}, []string{"--set profile=ambient"}},
		{"a string with commas escapes them for Helm and is quoted for the shell",
			map[string]any{"env": map[string]any{"CA_TRUSTED_NODE_ACCOUNTS": "istio-system/ztunnel,zt/ztunnel"}},
			[]string{`--set 'env.CA_TRUSTED_NODE_ACCOUNTS=istio-system/ztunnel\,zt/ztunnel'`}},
		{"a string --set would read as a bool is a --set-string", map[string]any{"env": map[string]any{"PILOT_ENABLE_AMBIENT": "true"}},
			[]string{"--set-string env.PILOT_ENABLE_AMBIENT=true"}},
		{"a string --set would read as a number is a --set-string", map[string]any{"tag": "123"}, []string{"--set-string tag=123"}},
		{"a string with a leading zero stays a --set", map[string]any{"tag": "007"}, []string{"--set tag=007"}},
		{"a backslash and a quote survive", map[string]any{"x": `a\b'c`}, []string{`--set 'x=a\\b'\''c'`}},
		{"an integer, a bool and a null are bare", map[string]any{"n": float64(2), "b": false, "d": nil},
			[]string{"--set b=false", "--set d=null", "--set n=2"}},
		{"a fraction and a list keep their types through --set-json", map[string]any{"f": 0.5, "l": []any{"a,b", "c"}},
			[]string{"--set-json f=0.5", `--set-json 'l=["a,b","c"]'`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, plan.SetFlags(tc.values)); d != "" {
				t.Errorf("flags (-want +got):\n%s", d)
			}
		})
	}
}

// TestSetFlagsParseBackThroughHelmsOwnParser feeds each flag, unquoted as a shell would, to Helm's
// strvals parser (what helm install/upgrade run on --set, --set-string and --set-json) and expects
// the values back.
func TestSetFlagsParseBackThroughHelmsOwnParser(t *testing.T) {
	values := map[string]any{
		"env":   map[string]any{"CA_TRUSTED_NODE_ACCOUNTS": "istio-system/ztunnel,zt/ztunnel-blue", "PILOT_ENABLE_AMBIENT": "true"},
		"tags":  []any{"a,b", "c"},
		"odd":   `back\slash, comma and 'quote'`,
		"num":   float64(3),
		"frac":  0.25,
		"flag":  true,
		"null":  nil,
		"zero":  "0",
		"lead0": "010",
		// Keys holding dots and the other characters a key path reads specially stay one key.
		"nodeSelector":   map[string]any{"kubernetes.io/os": "linux", "karpenter.sh/nodepool": "general"},
		"podAnnotations": map[string]any{"sidecar.istio.io/inject": "false", `a=b[c],d\e`: "x"},
	}
	got := parseBack(t, plan.SetFlags(values))
	want, _ := json.Marshal(values)
	back, _ := json.Marshal(got)
	if string(want) != string(back) {
		t.Errorf("helm read the flags as\n%s\nwant\n%s", back, want)
	}
}

// parseBack feeds each flag, unquoted as a shell would, to Helm's strvals parser, as helm install
// and upgrade do with --set, --set-string and --set-json, and returns the values it reads.
func parseBack(t *testing.T, flags []string) map[string]any {
	t.Helper()
	got := map[string]any{}
	for _, f := range flags {
		flag, word, _ := strings.Cut(f, " ")
		arg := unquoteShellWord(t, word)
		var err error
		switch flag {
		case "--set":
			err = strvals.ParseInto(arg, got)
		case "--set-string":
			err = strvals.ParseIntoString(arg, got)
		case "--set-json":
			err = strvals.ParseJSON(arg, got)
		default:
			t.Fatalf("unexpected flag %q", flag)
		}
		if err != nil {
			t.Fatalf("helm cannot parse %s: %v", f, err)
		}
	}
	return got
}

// TestTheFlagsOfEveryGoldenPlansHelmStepSetItsValues holds, for the values of every Helm install
// and upgrade of every golden and corpus plan, the printed flags to the values the executor gives
// the Helm SDK: Helm's own parser must read them back exactly (the same values render the same
// manifests).
func TestTheFlagsOfEveryGoldenPlansHelmStepSetItsValues(t *testing.T) {
	trees := 0
	for _, f := range plantest.GoldenPlanFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, st := range p.Steps {
			for _, h := range []*plan.HelmRelease{st.HelmInstall, st.HelmUpgrade} {
				if h == nil || len(h.Values) == 0 {
					continue
				}
				trees++
				want, _ := json.Marshal(h.Values)
				back, _ := json.Marshal(parseBack(t, plan.SetFlags(h.Values)))
				if string(want) != string(back) {
					t.Errorf("%s step %s: helm reads the printed flags as\n%s\nbut the executor gives\n%s", f, st.ID, back, want)
				}
			}
		}
	}
	if trees < 20 {
		t.Errorf("checked %d values trees, want the goldens' (20 or more)", trees)
	}
}

// unquoteShellWord undoes shellWord: a bare word, or single-quoted parts joined by \'.
func unquoteShellWord(t *testing.T, w string) string {
	t.Helper()
	if !strings.HasPrefix(w, "'") {
		return w
	}
	var b strings.Builder
	for w != "" {
		switch {
		case strings.HasPrefix(w, `\'`):
			b.WriteByte('\'')
			w = w[2:]
		case strings.HasPrefix(w, "'"):
			end := strings.Index(w[1:], "'")
			if end < 0 {
				t.Fatalf("unterminated quote in %q", w)
			}
			b.WriteString(w[1 : end+1])
			w = w[end+2:]
		default:
			t.Fatalf("unexpected %q outside quotes", w)
		}
	}
	return b.String()
}
