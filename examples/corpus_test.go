package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// corpusDir holds the broken-mesh states (hack/corpus.sh regenerates them on a kwok cluster).
const corpusDir = "../testdata/broken"

// corpusExamples are the example programs a state's command may name.
var corpusExamples = []string{"plan-upgrade", "bluegreen-ztunnel", "migrate-namespace", "move-tag"}

// corpusExpect is a state's expect.yaml (e2e/corpus/state.go writes it).
type corpusExpect struct {
	ID           string          `json:"id"`
	Sources      []string        `json:"sources"`
	Command      []string        `json:"command"`
	Expect       []corpusFinding `json:"expect"`
	Absent       []string        `json:"absent,omitempty"`
	Values       []corpusValue   `json:"values,omitempty"`
	BeforeCorpus string          `json:"beforeCorpus"`
	Answers      string          `json:"answers"`
	Pending      bool            `json:"pending,omitempty"`
}

// corpusFinding is one finding a state expects: its code and, when set, the object it names.
type corpusFinding struct {
	Code   string `json:"code"`
	Object string `json:"object,omitempty"`
}

// corpusValue is a Helm value a step of the plan must set: the fix a correct tool writes.
type corpusValue struct {
	Step  string `json:"step"`
	Key   string `json:"key"` // dotted path into the step's helm values
	Value string `json:"value"`
}

// TestBrokenCorpus runs every state of testdata/broken through the examples exactly as a user
// would: the example binaries, built with go build, on the state's dump (--from-dir, -o json),
// and checks that the plan names each expected finding's code and object and none of the absent
// codes. A state whose area has not landed yet (pending) must still be missed; once it is answered
// the test fails until the marker is removed (e2e/corpus/states.go, then hack/corpus.sh).
//
// CORPUS_EXAMPLES_BIN=<folder> runs prebuilt binaries instead (to measure another tree's answers).
func TestBrokenCorpus(t *testing.T) {
	states, err := filepath.Glob(filepath.Join(corpusDir, "*", "expect.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(states) < 25 {
		t.Fatalf("the corpus holds %d states, want at least 25", len(states))
	}
	bin := os.Getenv("CORPUS_EXAMPLES_BIN")
	if bin == "" {
		bin = buildExamples(t)
	}
	sort.Strings(states)
	var answered, missed, pending []string
	var mu sync.Mutex // the states run in parallel; the tallies are shared
	record := func(to *[]string, id string) {
		mu.Lock()
		defer mu.Unlock()
		*to = append(*to, id)
	}
	// The group returns once every parallel state has run, so the tally below counts them all.
	t.Run("states", func(t *testing.T) {
		for _, f := range states {
			x := readExpect(t, f)
			dump, err := filepath.Abs(filepath.Join(filepath.Dir(f), "dump"))
			if err != nil {
				t.Fatal(err)
			}
			t.Run(x.ID, func(t *testing.T) {
				t.Parallel()
				runCorpusState(t, bin, x, dump, record, &answered, &missed, &pending)
			})
		}
	})
	sort.Strings(answered)
	sort.Strings(missed)
	sort.Strings(pending)
	t.Logf("corpus: %d states, %d answered, %d pending, %d missed %v", len(states), len(answered), len(pending), len(missed), missed)
}

// runCorpusState runs one state and records it as answered, missed or pending.
func runCorpusState(t *testing.T, bin string, x corpusExpect, dump string, record func(*[]string, string), answered, missed, pending *[]string) {
	findings, out := runState(t, bin, x, dump)
	misses := missing(x, findings)
	switch {
	case x.Pending && len(misses) == 0:
		t.Errorf("%s is answered now (%s): remove Pending from the state in e2e/corpus and regenerate (bash hack/corpus.sh -only %s)", x.ID, x.Answers, x.ID)
	case x.Pending:
		record(pending, x.ID)
		t.Logf("pending on %s: %s", x.Answers, strings.Join(misses, "; "))
	case len(misses) > 0:
		record(missed, x.ID)
		t.Errorf("%s %s --from-dir %s -o json does not answer the state (%s):\n  %s\nfindings: %s\n%s",
			x.Command[0], strings.Join(x.Command[1:], " "), dump, x.Answers, strings.Join(misses, "\n  "), summary(findings), out)
	default:
		record(answered, x.ID)
	}
}

func readExpect(t *testing.T, file string) corpusExpect {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var x corpusExpect
	if err := yaml.UnmarshalStrict(b, &x); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if x.ID != filepath.Base(filepath.Dir(file)) || len(x.Command) == 0 || len(x.Expect) == 0 || len(x.Sources) == 0 {
		t.Fatalf("%s: want the folder's id, a command, sources and at least one expected finding", file)
	}
	known := false
	for _, e := range corpusExamples {
		known = known || e == x.Command[0]
	}
	if !known {
		t.Fatalf("%s: command %q is not one of the examples %v", file, x.Command[0], corpusExamples)
	}
	for _, e := range x.Expect {
		if !plan.KnownCode(plan.Code(e.Code)) && !x.Pending {
			t.Errorf("%s: code %s is not a code of the library (plan.AllCodes)", file, e.Code)
		}
	}
	return x
}

// buildExamples builds the example programs into a temporary folder, as a user builds them.
func buildExamples(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	// No symbol table or DWARF: the binaries only run here, and linking four of them is most of the
	// test's time (a third less without them).
	args := []string{"build", "-ldflags=-s -w", "-o", bin}
	for _, e := range corpusExamples {
		args = append(args, "./examples/"+e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = ".." // the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the examples: %v\n%s", err, out)
	}
	return bin
}

// runState runs the state's command on its dump and returns the findings of the printed plan.
func runState(t *testing.T, bin string, x corpusExpect, dump string) ([]answer, string) {
	t.Helper()
	dir := t.TempDir() // migrate-namespace writes its plan file and backup path there
	args := append(append([]string(nil), x.Command[1:]...), "--from-dir", dump, "-o", "json")
	stdout, out := runExample(t, bin, dir, x.Command[0], args)
	var doc struct {
		Findings []plan.Finding `json:"findings"`
		Steps    []plan.Step    `json:"steps"`
	}
	err := json.Unmarshal(stdout, &doc)
	if err != nil && os.Getenv("CORPUS_EXAMPLES_BIN") != "" && x.Command[0] == "migrate-namespace" {
		// An older migrate-namespace has no -o: it prints its findings as the runbook's table.
		var md []byte
		md, out = runExample(t, bin, dir, x.Command[0], args[:len(args)-2])
		return findingsTable(string(md)), out
	}
	if err != nil {
		t.Fatalf("%s %v: the output is not the plan's JSON (%v)\n--- stdout\n%s\n%s", x.Command[0], args, err, tail(string(stdout), 20), out)
	}
	if os.Getenv("CORPUS_EXAMPLES_BIN") == "" {
		if err := validatePlan(t, stdout); err != nil {
			t.Errorf("%s %v: the plan's JSON does not validate against plan.JSONSchema: %v", x.Command[0], args, err)
		}
	}
	var as []answer
	for _, f := range doc.Findings {
		if !plan.CodeRaisedAs(f.Code, f.Severity) {
			t.Errorf("%s %v: finding %s on %s is %s, which its code's table (ambient/vocab/plan/severities_table.go) does not allow: %v", x.Command[0], args, f.Code, f.Object, f.Severity, plan.CodeSeverities(f.Code))
		}
		if f.Severity != plan.Info && strings.TrimSpace(f.Remedy) == "" {
			t.Errorf("%s %v: %s finding %s on %s has no remedy: a finding that stops a plan says how to fix it", x.Command[0], args, f.Severity, f.Code, f.Object)
		}
		a := answer{code: string(f.Code), objects: []string{f.Object.String()}}
		for _, r := range f.Related {
			a.objects = append(a.objects, r.String())
		}
		as = append(as, a)
	}
	for _, v := range x.Values {
		if got, ok := stepValue(doc.Steps, v.Step, v.Key); ok {
			as = append(as, answer{code: valueCode(v.Step, v.Key), objects: []string{got}})
		}
	}
	return as, out
}

// valueCode is how a step's value is compared: as a pseudo finding whose object is the value.
func valueCode(step, key string) string { return "step " + step + " sets " + key }

// stepValue is the value at the dotted key of the Helm values of the step with that id.
func stepValue(steps []plan.Step, id, key string) (string, bool) {
	for _, st := range steps {
		var values map[string]any
		switch {
		case st.ID != id:
			continue
		case st.HelmUpgrade != nil:
			values = st.HelmUpgrade.Values
		case st.HelmInstall != nil:
			values = st.HelmInstall.Values
		}
		var cur any = values
		for _, k := range strings.Split(key, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return "", false
			}
			cur = m[k]
		}
		if cur == nil {
			return "", false
		}
		return fmt.Sprint(cur), true
	}
	return "", false
}

// answer is one finding as the test compares it: its code and the objects it names.
type answer struct {
	code    string
	objects []string
}

// findingsTable reads the findings of a Markdown runbook (| severity | `code` | object | ...), for
// older binaries that print no JSON; a table names only a finding's first object.
func findingsTable(md string) []answer {
	var as []answer
	for _, l := range strings.Split(md, "\n") {
		cells := strings.Split(l, " | ")
		if len(cells) < 3 || !strings.HasPrefix(cells[1], "`") {
			continue
		}
		as = append(as, answer{code: strings.Trim(cells[1], "`"), objects: []string{strings.ReplaceAll(cells[2], `\|`, "|")}})
	}
	return as
}

// runExample runs one example program in dir and returns its standard output and the tail of its
// standard error; a non-zero exit is an answer (a blocked plan), not a failure.
func runExample(t *testing.T, bin, dir, name string, args []string) ([]byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", name, err)
	}
	return stdout.Bytes(), fmt.Sprintf("--- stderr\n%s", tail(stderr.String(), 20))
}

// missing lists the expected findings the plan lacks and the absent codes it has.
func missing(x corpusExpect, as []answer) []string {
	var out []string
	expect := append([]corpusFinding(nil), x.Expect...)
	for _, v := range x.Values {
		expect = append(expect, corpusFinding{Code: valueCode(v.Step, v.Key), Object: v.Value})
	}
	for _, e := range expect {
		found := false
		for _, a := range as {
			if a.code == e.Code && (e.Object == "" || contains(a.objects, e.Object)) {
				found = true
			}
		}
		if !found {
			what := e.Code
			if e.Object != "" {
				what += " naming " + e.Object
			}
			out = append(out, "no "+what)
		}
	}
	for _, c := range x.Absent {
		for _, a := range as {
			if a.code == c {
				out = append(out, fmt.Sprintf("%s must not be reported (%s)", c, a.objects[0]))
			}
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func summary(as []answer) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%s(%s)", a.code, a.objects[0]))
	}
	return strings.Join(parts, " ")
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = append([]string{"..."}, l[len(l)-n:]...)
	}
	return strings.Join(l, "\n")
}

// TestCorpusMissing checks the comparison TestBrokenCorpus relies on, so a state can fail.
func TestCorpusMissing(t *testing.T) {
	x := corpusExpect{Absent: []string{"PDB_BLOCKS_DRAIN"},
		Expect: []corpusFinding{{Code: "NETWORKPOLICY_BLOCKS_HBONE", Object: "NetworkPolicy shop/web-ingress"}}}
	for _, c := range []struct {
		name    string
		answers []answer
		misses  int
	}{
		{"the expected code naming the expected object answers", []answer{{"NETWORKPOLICY_BLOCKS_HBONE", []string{"NetworkPolicy shop/web-ingress"}}}, 0},
		{"the expected object among the related ones answers", []answer{{"NETWORKPOLICY_BLOCKS_HBONE", []string{"Namespace shop", "NetworkPolicy shop/web-ingress"}}}, 0},
		{"the expected code naming another object does not answer", []answer{{"NETWORKPOLICY_BLOCKS_HBONE", []string{"NetworkPolicy shop/other"}}}, 1},
		{"another code naming the expected object does not answer", []answer{{"NETWORKPOLICY_BLOCKS_AMBIENT_PROBES", []string{"NetworkPolicy shop/web-ingress"}}}, 1},
		{"no finding does not answer", nil, 1},
		{"an absent code reported is a miss", []answer{{"NETWORKPOLICY_BLOCKS_HBONE", []string{"NetworkPolicy shop/web-ingress"}}, {"PDB_BLOCKS_DRAIN", []string{"PodDisruptionBudget shop/web"}}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := missing(x, c.answers); len(got) != c.misses {
				t.Errorf("missing = %q, want %d misses", got, c.misses)
			}
		})
	}
}

// TestCorpusFindingsTable checks the runbook table is read for older binaries.
func TestCorpusFindingsTable(t *testing.T) {
	md := "## Findings\n\n| severity | code | object | finding | remedy |\n|---|---|---|---|---|\n" +
		"| blocking | `TAG_REVISION_MISSING` | MutatingWebhookConfiguration istio-revision-tag-canary | tag canary names no revision | remove it |\n"
	got := findingsTable(md)
	if len(got) != 1 || got[0].code != "TAG_REVISION_MISSING" || got[0].objects[0] != "MutatingWebhookConfiguration istio-revision-tag-canary" {
		t.Errorf("findingsTable = %+v, want the one row's code and object", got)
	}
}

var planSchema struct {
	once sync.Once
	sch  *jsonschema.Schema
	err  error
}

// validatePlan validates a plan document against the plan's JSON Schema (plan.JSONSchema).
func validatePlan(t *testing.T, doc []byte) error {
	t.Helper()
	planSchema.once.Do(func() {
		var s any
		if s, planSchema.err = jsonschema.UnmarshalJSON(bytes.NewReader(plan.JSONSchema())); planSchema.err != nil {
			return
		}
		c := jsonschema.NewCompiler()
		if planSchema.err = c.AddResource("plan.schema.json", s); planSchema.err == nil {
			planSchema.sch, planSchema.err = c.Compile("plan.schema.json")
		}
	})
	if planSchema.err != nil {
		t.Fatalf("compile plan.JSONSchema: %v", planSchema.err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return planSchema.sch.Validate(inst)
}
