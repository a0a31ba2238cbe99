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
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/plan"
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
type Row struct {
	Name      string
	Args      []string
	Code      int
	Want, Not []string
}

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
	}
}

// Contract runs the rows, and more of the program's own, against it.
func Contract(t *testing.T, name string, run Program, rows []Row) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.Name, func(t *testing.T) {
			got := Run(t, name, run, r.Args...)
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
		})
	}
}

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
