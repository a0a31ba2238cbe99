// Package clitest holds the command-line contract every example keeps, as a table each example's
// tests run against its own program: the same exit codes (0 runnable or done, 1 error, 2 bad
// flags, 3 blocked, 4 needs a waiver), the same refusal of bad input, --list-codes, --waive with the
// nearest code, no client-go hint when no kubeconfig is found, and -o that prints the same plan
// document, with its source, whatever the format.
package clitest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

// Program is an example's run function.
type Program func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// Result is one run of a program.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs the program as main does, with no kubeconfig to be found (HOME and KUBECONFIG point at
// nothing), so that nothing a test does reaches a cluster.
func Run(t *testing.T, name string, run Program, args ...string) Result {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "none"))
	t.Chdir(home)
	var out, errOut bytes.Buffer
	code := cli.Exit(name, run(context.Background(), args, strings.NewReader(""), &out, &errOut), &errOut)
	return Result{code, out.String(), errOut.String()}
}

// Row is one row of the contract: the arguments, the exit code, and what the output holds or not.
// Args may hold the sources Source, Demo, Dump and Unreachable, which Contract replaces with the
// flags that name them; Needs are the flags a program must have for the row to be its (a row about
// --rbac is not move-tag's).
type Row struct {
	Name      string
	Args      []string
	Code      int
	Want, Not []string
	Needs     []string
}

// The sources a row's Args may name; Contract replaces each with its flags.
const (
	// Source is the source a program plans without a cluster: Demo when it has --demo, else
	// Unreachable.
	Source = "{source}"
	// Demo is --demo, the embedded demo mesh.
	Demo = "{demo}"
	// Dump is --from-dir with a small dump of the corpus (DumpDir).
	Dump = "{dump}"
	// Unreachable is --kubeconfig of a kubeconfig whose API server nothing listens at (loopback).
	Unreachable = "{unreachable}"
)

// DumpDir is the small dump of the corpus Dump names, relative to an example's package folder.
const DumpDir = "../../testdata/broken/c04-stale-default-validator/dump"

// CorpusDump is the absolute path of the dump of a corpus state (testdata/broken/<id>/dump), for a
// row of its own.
func CorpusDump(id string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(dumpDir)), id, "dump")
}

// dumpDir is DumpDir made absolute when the test binary starts, in the package's folder (Run
// changes into a temporary one).
var dumpDir, dumpErr = filepath.Abs(DumpDir)

// Rows are the rows every example passes; required are the flags a program cannot run without
// (migrate-namespace's --namespace), put before the row's arguments.
func Rows(required ...string) []Row {
	with := func(args ...string) []string { return append(append([]string(nil), required...), args...) }
	return []Row{
		{Name: "help exits 0 and documents the exit codes", Args: []string{"--help"}, Code: cli.ExitOK,
			Want: []string{"Exit codes:", "  2  bad flags", "  3  blocked", "  4  not runnable until waived", "--list-codes"}},
		{Name: "list-codes prints every code with its help", Args: []string{"--list-codes"}, Code: cli.ExitOK,
			Want: []string{string(plan.CodePDBBlocksDrain) + " ", plan.CodeHelp(plan.CodePDBBlocksDrain), string(plan.CodeEndOfLifeUnknown)}},
		{Name: "an unknown waiver is a usage error naming the nearest code, whatever its case", Args: with("--waive", "pdb_blocks_drian"), Code: cli.ExitUsage,
			Want: []string{"--waive pdb_blocks_drian: no such finding code; did you mean PDB_BLOCKS_DRAIN?"}},
		{Name: "an unknown output is a usage error", Args: with("-o", "xml"), Code: cli.ExitUsage, Want: []string{`-o "xml"`}},
		{Name: "a date that is none is a usage error", Args: with("--today", "tomorrow"), Code: cli.ExitUsage, Want: []string{"--today"}},
		{Name: "an unknown flag is a usage error", Args: with("--no-such-flag"), Code: cli.ExitUsage, Want: []string{"no-such-flag"}},
		{Name: "an argument is a usage error", Args: with("extra"), Code: cli.ExitUsage, Want: []string{`unexpected argument "extra"`}},
		{Name: "a kubeconfig that does not exist is a usage error naming the flag", Args: with("--kubeconfig", "missing/config"), Code: cli.ExitUsage,
			Want: []string{"--kubeconfig missing/config"}},
		{Name: "no source at all is refused, never a kubeconfig read by default", Args: with(), Code: cli.ExitUsage,
			Want: []string{"--kubeconfig FILE", "--context NAME"}, Not: []string{"KUBERNETES_MASTER", "no cluster to observe"}},
		{Name: "a context with no kubeconfig at all says which flag to pass, never client-go's hint", Args: with("--context", "prod"), Code: cli.ExitUsage,
			Want: []string{"--context prod", "--kubeconfig FILE"}, Not: []string{"KUBERNETES_MASTER"}},
		{Name: "a cluster that cannot be reached is an error, exit 1, naming its server", Args: with(Unreachable), Code: cli.ExitError, Want: []string{"127.0.0.1:1"}},
		{Name: "list-codes says which findings a waiver accepts", Args: []string{"--list-codes"}, Code: cli.ExitOK, Want: []string{"--waive CODE,... accepts", "blocking finding (fix that one)"}},
		{Name: "list-codes marks each code with the severities it is raised with", Args: []string{"--list-codes"}, Code: cli.ExitOK,
			Want: []string{cli.CodeLine(plan.CodePDBBlocksDrain), cli.CodeLine(plan.CodeIstiodMissing), cli.CodeLine(plan.CodeZtunnelPlacementOverlap), cli.CodeLine(plan.CodeUpgradeChained)}},
		{Name: "a waiver of a code never raised waivable is a usage error saying so", Args: with("--waive", string(plan.CodeIstiodMissing)), Code: cli.ExitUsage,
			Want: []string{"--waive ISTIOD_MISSING: findings of ISTIOD_MISSING are blocking, never waivable"}},
		{Name: "a waiver of an info-only code is a usage error too", Args: with("--waive", string(plan.CodeUpgradeChained)), Code: cli.ExitUsage,
			Want: []string{"UPGRADE_CHAINED are info, never waivable"}},

		// --target: a version the release data cannot target is a bad flag, before anything is observed.
		{Name: "an unknown target is refused with exit 2, naming the flag", Args: with(Source, "--target", "9.9.9"), Code: cli.ExitUsage, Needs: []string{"target"},
			Want: []string{"--target 9.9.9", "--chart-index"}, Not: []string{"releases.LoadFile"}},
		{Name: "a patch the release data does not know is refused with exit 2, naming the newest it has", Args: with(Source, "--target", "1.31.99"), Code: cli.ExitUsage,
			Needs: []string{"target"}, Want: []string{"--target 1.31.99", "1.31.4"}},
		{Name: "a target older than the running control plane is refused with exit 2", Args: with(Demo, "--target", "1.29.0"), Code: cli.ExitUsage,
			Needs: []string{"demo", "strategy"}, Want: []string{"--target 1.29.0 is older than the running control plane 1.30.3"}},
		{Name: "the running version as a revision upgrade's target is refused with exit 2", Args: with(Demo, "--target", "1.30.3"), Code: cli.ExitUsage,
			Needs: []string{"demo", "strategy"}, Want: []string{"--target 1.30.3", "--strategy in-place"}, Not: []string{"RevisionName", "tags.MoveTag"}},

		// A flag that does not apply to the source or mode is refused, never ignored (cli's inapplicables).
		{Name: "rbac with the demo mesh is refused, not ignored", Args: with(Demo, "--rbac", "r.yaml"), Code: cli.ExitUsage, Needs: []string{"demo", "rbac"},
			Want: []string{"--rbac does not apply with --demo or --from-dir"}},
		{Name: "rbac with a dump is refused, not ignored", Args: with(Dump, "--rbac", "r.yaml"), Code: cli.ExitUsage, Needs: []string{"from-dir", "rbac"},
			Want: []string{"--rbac does not apply with --demo or --from-dir"}},
		{Name: "resuming a plan of the demo mesh is refused", Args: with(Demo, "--resume"), Code: cli.ExitUsage, Needs: []string{"demo", "resume"},
			Want: []string{"--resume does not apply with --demo or --from-dir"}},
		{Name: "yes with plan-only is refused", Args: with(Unreachable, "--plan-only", "--yes"), Code: cli.ExitUsage, Needs: []string{"plan-only"},
			Want: []string{"--yes does not apply with --plan-only"}},
		{Name: "rbac with plan-only is refused", Args: with(Unreachable, "--plan-only", "--rbac", "r.yaml"), Code: cli.ExitUsage, Needs: []string{"plan-only"},
			Want: []string{"--rbac does not apply with --plan-only"}},
		{Name: "a dry run with rbac is refused: rbac runs nothing", Args: with(Unreachable, "--rbac", "r.yaml", "--dry-run"), Code: cli.ExitUsage, Needs: []string{"rbac"},
			Want: []string{"--dry-run does not apply with --rbac"}},
		{Name: "resuming a dry run is refused: it keeps no journal", Args: with(Unreachable, "--resume", "--dry-run"), Code: cli.ExitUsage, Needs: []string{"resume"},
			Want: []string{"--resume does not apply with --dry-run"}},
		{Name: "a waiver with resume is refused: the saved plan runs as planned", Args: with(Unreachable, "--resume", "--waive", "PDB_BLOCKS_DRAIN"), Code: cli.ExitUsage,
			Needs: []string{"resume"}, Want: []string{"--waive does not apply with --saved, --resume or --rollback"}},
		{Name: "a rollback is spelt --rollback in every example", Args: with(Unreachable, "--rollback-to", "x"), Code: cli.ExitUsage, Needs: []string{"rollback"},
			Want: []string{"rollback-to"}},
		{Name: "full with the plan document is refused: it shapes the runbook", Args: with(Source, "-o", "json", "--full"), Code: cli.ExitUsage,
			Want: []string{"--full does not apply with -o yaml or -o json"}},
	}
}

// sources replaces the sources a row names with their flags; "" when the program has none of them
// (the row is not its).
func sources(t *testing.T, has func(string) bool, args []string) ([]string, bool) {
	t.Helper()
	var out []string
	for _, a := range args {
		if a == Source {
			a = Unreachable
			if has("demo") {
				a = Demo
			}
		}
		switch a {
		case Demo:
			if !has("demo") {
				return nil, false
			}
			out = append(out, "--demo")
			if has(demoRunOnly) { // upgrade: --demo is the in-memory demo cluster, run with --dry-run only
				out = append(out, "--dry-run")
			}
		case Dump:
			if !has("from-dir") {
				return nil, false
			}
			if dumpErr != nil {
				t.Fatal(dumpErr)
			}
			out = append(out, "--from-dir", dumpDir)
		case Unreachable:
			out = append(out, "--kubeconfig", unreachable(t))
		default:
			out = append(out, a)
		}
	}
	return out, true
}

// unreachable writes a kubeconfig whose API server is 127.0.0.1:1, where nothing listens: a live
// source that fails at once and reaches no cluster.
func unreachable(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "unreachable.kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`
	if err := os.WriteFile(f, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// demoRunOnly asks flags whether the program's --demo runs only with --dry-run (upgrade's
// in-memory demo cluster); Demo then names both.
const demoRunOnly = "{demo runs with --dry-run}"

// flags returns whether the program has a flag, from its --help.
func flags(t *testing.T, name string, run Program) func(string) bool {
	t.Helper()
	help := Run(t, name, run, "--help").Stdout
	return func(f string) bool {
		if f == demoRunOnly {
			return strings.Contains(help, "with --dry-run: plan the embedded demo mesh held by an in-memory cluster")
		}
		dash := "--" + f
		if len(f) == 1 {
			dash = "-" + f
		}
		return strings.Contains(help, "\n  "+dash+" ") || strings.Contains(help, "\n  "+dash+"\n")
	}
}

// Contract runs the rows, and more of the program's own, against it.
func Contract(t *testing.T, name string, run Program, rows []Row) {
	t.Helper()
	has := flags(t, name, run)
	ran := 0
	for _, r := range rows {
		if slices.ContainsFunc(r.Needs, func(f string) bool { return !has(f) }) {
			continue // a flag the program does not have: the row is not its
		}
		ran++
		t.Run(r.Name, func(t *testing.T) {
			args, ok := sources(t, has, r.Args)
			if !ok {
				t.Fatalf("%s has not the source of %q: name its flag in the row's Needs", name, r.Args)
			}
			got := Run(t, name, run, args...)
			all := got.Stdout + got.Stderr
			if got.Code != r.Code {
				t.Errorf("%s %q: exit %d, want %d:\n%s", name, r.Args, got.Code, r.Code, all)
			}
			for _, w := range r.Want {
				if !strings.Contains(all, w) {
					t.Errorf("%s %q: the output lacks %q:\n%s", name, r.Args, w, all)
				}
			}
			for _, w := range r.Not {
				if strings.Contains(all, w) {
					t.Errorf("%s %q: the output holds %q:\n%s", name, r.Args, w, all)
				}
			}
			if klogLine.MatchString(got.Stderr) {
				t.Errorf("%s %q: a klog line on stderr:\n%s", name, r.Args, got.Stderr)
			}
		})
	}
	if ran < len(rows)/2 {
		t.Errorf("%s: only %d of %d rows apply (its --help lists too few flags?)", name, ran, len(rows))
	}
}

// klogLine matches a line client-go's klog writes (I1206 19:40:01.123456 ...).
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d`)

// Verdicts plans the source of args (holding Demo, Dump or both, as Row.Args does) and checks the
// exit code is the plan's verdict: 0 runnable; 4 with the command that waives what stops it, which
// then exits 0; 3 with the blocking findings named. stderr holds the verdict alone (no klog line).
func Verdicts(t *testing.T, name string, run Program, args ...string) {
	t.Helper()
	has := flags(t, name, run)
	args, ok := sources(t, has, args)
	if !ok {
		t.Fatalf("%s has no source %q", name, args)
	}
	got := Run(t, name, run, args...)
	if klogLine.MatchString(got.Stderr) {
		t.Errorf("%s %q: a klog line on stderr:\n%s", name, args, got.Stderr)
	}
	if ids := goName.FindAllString(got.Stdout+got.Stderr, -1); len(ids) > 0 {
		t.Errorf("%s %q: the output names Go identifiers %q where a command-line user needs a flag or a command (cli's flagsOf)", name, args, ids)
	}
	switch got.Code {
	case cli.ExitOK:
		if got.Stderr != "" {
			t.Errorf("%s %q: a runnable plan prints nothing on stderr, got:\n%s", name, args, got.Stderr)
		}
	case cli.ExitBlocked:
		if !strings.Contains(got.Stderr, "the plan is blocked: blocking findings") && !strings.Contains(got.Stderr, "blocked steps") {
			t.Errorf("%s %q: exit 3 without the blocking findings:\n%s", name, args, got.Stderr)
		}
	case cli.ExitNeedsWaiver:
		m := waiveAgain.FindStringSubmatch(got.Stderr)
		if m == nil {
			t.Fatalf("%s %q: exit 4 without the command that waives:\n%s", name, args, got.Stderr)
		}
		again := Run(t, name, run, append(append([]string(nil), args...), "--waive", m[1])...)
		if again.Code != cli.ExitOK {
			t.Errorf("%s %q --waive %s: exit %d, want 0 once the verdict's codes are waived:\n%s", name, args, m[1], again.Code, again.Stderr)
		}
	default:
		t.Errorf("%s %q: exit %d, want a verdict (0, 3 or 4):\n%s", name, args, got.Code, got.Stderr)
	}
}

// goName matches what reads as a Go identifier of the library (tags.MoveTag,
// ReadinessOptions.Waypoint, advisories.Default): a remedy that names one is written for a caller of
// the library, not for the command's user.
var goName = regexp.MustCompile(`\b[A-Za-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b`)

// waiveAgain finds the codes of the command a needs-waiver verdict suggests.
var waiveAgain = regexp.MustCompile(`plan again with: .* --waive ([A-Z0-9_,]+)`)

// Outputs plans the demo mesh with each -o (demo holds the flags that make the program plan it):
// yaml and json print the plan document recording the demo as its source, markdown opens with the
// source, and the exit code is the plan's verdict (0, 3 or 4), the same for every format.
func Outputs(t *testing.T, name string, run Program, demo ...string) {
	t.Helper()
	codes := map[string]int{}
	for _, o := range []string{"markdown", "yaml", "json"} {
		got := Run(t, name, run, append(append([]string(nil), demo...), "-o", o, "--today", "2026-11-30")...)
		codes[o] = got.Code
		if got.Code != cli.ExitOK && got.Code != cli.ExitBlocked && got.Code != cli.ExitNeedsWaiver {
			t.Fatalf("%s -o %s: exit %d, want a verdict (0, 3 or 4):\n%s", name, o, got.Code, got.Stderr)
		}
		if o == "markdown" {
			if !strings.HasPrefix(got.Stdout, "Source: the embedded demo mesh") {
				t.Errorf("%s -o markdown does not open with its source:\n%.300s", name, got.Stdout)
			}
			continue
		}
		p, err := plan.Decode([]byte(got.Stdout))
		if err != nil {
			t.Fatalf("%s -o %s does not decode: %v\n%.500s", name, o, err, got.Stdout)
		}
		if p.Metadata.Source != plan.SourceDemo || p.Kind != plan.DocumentKind {
			t.Errorf("%s -o %s: source %q, kind %q; want %q, %q", name, o, p.Metadata.Source, p.Kind, plan.SourceDemo, plan.DocumentKind)
		}
	}
	if codes["markdown"] != codes["yaml"] || codes["yaml"] != codes["json"] {
		t.Errorf("%s: the exit code depends on -o: %v", name, codes)
	}
}
