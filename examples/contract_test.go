package examples_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/plan"
)

// all are the five examples, each a program over one public primitive.
var all = []string{"plan-upgrade", "upgrade", "bluegreen-ztunnel", "move-tag", "migrate-namespace"}

// planners read the embedded demo mesh with --demo; upgrade applies to a live cluster only.
var planners = []string{"plan-upgrade", "bluegreen-ztunnel", "move-tag", "migrate-namespace"}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// build compiles the five examples once for the package's tests (go build shares one cache).
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() { binDir, buildErr = buildAll() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// TestMain removes the examples built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func buildAll() (string, error) {
	dir, err := os.MkdirTemp("", "ambientkit-examples-")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, e := range all {
		args = append(args, "./"+e)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return dir, fmt.Errorf("go build: %w\n%s", err, out)
	}
	return dir, nil
}

// result is one run of an example.
type result struct {
	code           int
	stdout, stderr string
}

// runIn runs an example with no kubeconfig to be found (HOME and KUBECONFIG point at nothing), so
// that nothing the test does reaches a cluster.
func runIn(t *testing.T, bin, name string, args ...string) result {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"), "KUBERNETES_MASTER=")
	cmd.Stdin = strings.NewReader("")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return result{exit.ExitCode(), out.String(), errOut.String()}
	case err != nil:
		t.Fatal(err)
	}
	return result{0, out.String(), errOut.String()}
}

// extra flags that make an example plan something on the demo mesh.
var demoArgs = map[string][]string{
	"plan-upgrade":      {"--demo"},
	"bluegreen-ztunnel": {"--demo", "--green-nodepools", "general,batch"},
	"move-tag":          {"--demo", "--assume-installed", "1.31.4"},
	"migrate-namespace": {"--demo", "--namespace", "shop"},
}

// TestEveryExampleKeepsTheSameCommandLineContract runs the same rows against all five examples:
// the same exit codes (0 runnable or done, 1 error, 2 bad flags, 3 blocked, 4 needs a waiver), the
// same refusal of bad input, --list-codes, and the same -o.
func TestEveryExampleKeepsTheSameCommandLineContract(t *testing.T) {
	bin := build(t)
	rows := []struct {
		name string
		args []string
		code int
		// want are in stdout+stderr; not must not be.
		want, not []string
	}{
		{name: "help exits 0 and documents the exit codes", args: []string{"--help"}, code: 0,
			want: []string{"Exit codes:", "  2  bad flags", "  3  blocked", "  4  not runnable until waived", "--list-codes"}},
		{name: "list-codes prints every code with its help", args: []string{"--list-codes"}, code: 0,
			want: []string{string(plan.CodePDBBlocksDrain) + " ", plan.CodeHelp(plan.CodePDBBlocksDrain), string(plan.CodeEndOfLifeUnknown)}},
		{name: "an unknown waiver is a usage error naming the nearest code, whatever its case", args: []string{"--waive", "pdb_blocks_drian"}, code: 2,
			want: []string{"--waive pdb_blocks_drian: no such finding code; did you mean PDB_BLOCKS_DRAIN?"}},
		{name: "an unknown output is a usage error", args: []string{"-o", "xml"}, code: 2, want: []string{`-o "xml"`}},
		{name: "a date that is none is a usage error", args: []string{"--today", "tomorrow"}, code: 2, want: []string{"--today"}},
		{name: "an unknown flag is a usage error", args: []string{"--no-such-flag"}, code: 2, want: []string{"no-such-flag"}},
		{name: "an argument is a usage error", args: []string{"extra"}, code: 2, want: []string{`unexpected argument "extra"`}},
		{name: "a kubeconfig that does not exist is a usage error naming the flag", args: []string{"--kubeconfig", "missing/config"}, code: 2,
			want: []string{"--kubeconfig missing/config"}},
		{name: "no kubeconfig at all says which flag to pass, never client-go's hint", args: nil, code: 2,
			want: []string{"no cluster to observe", "--kubeconfig FILE"}, not: []string{"KUBERNETES_MASTER"}},
	}
	for _, e := range all {
		for _, r := range rows {
			t.Run(e+": "+r.name, func(t *testing.T) {
				args := r.args
				if e == "migrate-namespace" && !contains(args, "--help") && !contains(args, "--list-codes") {
					args = append([]string{"--namespace", "shop"}, args...) // its one required flag
				}
				got := runIn(t, bin, e, args...)
				all := got.stdout + got.stderr
				if got.code != r.code {
					t.Errorf("exit %d, want %d:\n%s", got.code, r.code, all)
				}
				for _, w := range r.want {
					if !strings.Contains(all, w) {
						t.Errorf("the output lacks %q:\n%s", w, all)
					}
				}
				for _, w := range r.not {
					if strings.Contains(all, w) {
						t.Errorf("the output holds %q:\n%s", w, all)
					}
				}
			})
		}
	}
	perExample := []struct {
		example, name string
		args          []string
		want          string
	}{
		{"plan-upgrade", "a batch size of 0 is refused, not made 1", []string{"--demo", "--batch-size", "0"}, "--batch-size 0: want 1 or more"},
		{"upgrade", "a batch size of 0 is refused, not made 1", []string{"--batch-size", "0"}, "--batch-size 0: want 1 or more"},
		{"bluegreen-ztunnel", "a batch size of 0 is refused, not made 1", []string{"--demo", "--green-nodepools", "general", "--batch-size", "0"}, "--batch-size 0: want 1 or more"},
		{"plan-upgrade", "a negative drain timeout is refused", []string{"--demo", "--drain-timeout", "-1m"}, "--drain-timeout -1m0s"},
		{"bluegreen-ztunnel", "a NodePool name that is none is refused", []string{"--demo", "--green-nodepools", "Bad_Pool"}, `--green-nodepools "Bad_Pool" is not a valid name`},
		{"move-tag", "a tag name that is none is refused", []string{"--demo", "--tag", "Prod!", "--revision", "1-31-4"}, `--tag "Prod!" is not a valid name`},
		{"migrate-namespace", "a namespace name that is none is refused", []string{"--demo", "--namespace", "Shop_1"}, `--namespace "Shop_1" is not a valid name`},
		{"migrate-namespace", "a namespace is required", []string{"--demo"}, "--namespace is required"},
		{"upgrade", "the demo mesh is no cluster to apply to", []string{"--demo"}, "flag provided but not defined: -demo"},
	}
	for _, r := range perExample {
		t.Run(r.example+": "+r.name, func(t *testing.T) {
			got := runIn(t, bin, r.example, r.args...)
			if got.code != 2 || !strings.Contains(got.stderr, r.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s%s", got.code, r.want, got.stdout, got.stderr)
			}
		})
	}
}

// TestEveryPlannerPrintsThePlanTheSameWayAndSaysItsSource: -o yaml and -o json print the plan
// document, which records the demo as its source, and -o markdown opens with the source; the exit
// code is the plan's verdict (0 runnable, 3 blocked, 4 needs a waiver), the same for each format.
func TestEveryPlannerPrintsThePlanTheSameWayAndSaysItsSource(t *testing.T) {
	bin := build(t)
	for _, e := range planners {
		t.Run(e, func(t *testing.T) {
			codes := map[string]int{}
			for _, o := range []string{"markdown", "yaml", "json"} {
				got := runIn(t, bin, e, append(demoArgs[e], "-o", o, "--today", "2026-11-30")...)
				codes[o] = got.code
				if got.code != 0 && got.code != 3 && got.code != 4 {
					t.Fatalf("-o %s: exit %d, want a verdict (0, 3 or 4):\n%s", o, got.code, got.stderr)
				}
				if o == "markdown" {
					if !strings.HasPrefix(got.stdout, "Source: the embedded demo mesh") {
						t.Errorf("-o markdown does not open with its source:\n%.300s", got.stdout)
					}
					continue
				}
				p, err := plan.Decode([]byte(got.stdout))
				if err != nil {
					t.Fatalf("-o %s does not decode: %v\n%.500s", o, err, got.stdout)
				}
				if p.Metadata.Source != plan.SourceDemo || p.Kind != plan.DocumentKind {
					t.Errorf("-o %s: source %q, kind %q; want %q, %q", o, p.Metadata.Source, p.Kind, plan.SourceDemo, plan.DocumentKind)
				}
			}
			if codes["markdown"] != codes["yaml"] || codes["yaml"] != codes["json"] {
				t.Errorf("the exit code depends on -o: %v", codes)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
