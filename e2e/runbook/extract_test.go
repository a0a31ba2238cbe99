package runbook

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestExtractTakesEachStepsCommandsAndChecksInOrderButNoUndo(t *testing.T) {
	md := "# plan\n\n```sh\necho preamble\n```\n\n## Steps (2)\n\n" +
		"### 1. `a/drain` · Drain · risk high\n**What:** drain a\n- before: a is cordoned (`kubectl get node a`)\n" +
		"```sh\n# a comment\nkubectl drain a --ignore-daemonsets\n```\n" +
		"- verify: only DaemonSet pods are left on a (`kubectl get pods -A | awk 'END {exit 0}'`)\n" +
		"- verify: a says nothing by hand\n- undo: uncordon a (`kubectl uncordon a`)\n\n" +
		"### 2. `b/apply` · ApplyObject · risk low\n```sh\nkubectl apply -f - <<'EOF'\nkind: X\nEOF\n```\n- undo: delete it\n```sh\nkubectl delete x\n```\n"
	got := Extract(md)
	want := []Command{
		{Step: "a/drain", What: Before, Text: "kubectl get node a"},
		{Step: "a/drain", What: Run, Text: "kubectl drain a --ignore-daemonsets"},
		{Step: "a/drain", What: Verify, Text: "kubectl get pods -A | awk 'END {exit 0}'"},
		{Step: "b/apply", What: Run, Text: "kubectl apply -f - <<'EOF'\nkind: X\nEOF"},
	}
	if len(got) != len(want) {
		t.Fatalf("Extract = %#v\nwant %#v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("command %d = %#v, want %#v", i, got[i], want[i])
		}
	}
}

// TestEveryCommandOfTheGoldenRunbooksIsValidShell extracts the commands of every golden runbook of
// the planners and has sh parse each (sh -n): a command a person cannot paste into a shell is a
// failure of the runbook.
func TestEveryCommandOfTheGoldenRunbooksIsValidShell(t *testing.T) {
	files, _ := filepath.Glob("../../ambient/testdata/*/*.plan.md")
	more, _ := filepath.Glob("../../migrate/testdata/*/*.plan.md")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found %d golden runbooks, want the planners' (ambient/testdata, migrate/testdata)", len(files))
	}
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmds := Extract(string(b))
		if len(cmds) == 0 {
			t.Errorf("%s: no commands extracted", f)
		}
		total += len(cmds)
		for _, c := range cmds {
			sh := exec.Command("sh", "-n")
			sh.Stdin = strings.NewReader(c.Text + "\n")
			if out, err := sh.CombinedOutput(); err != nil {
				t.Errorf("%s: step %s: %s command is no valid shell (%v: %s):\n%s", filepath.Base(f), c.Step, c.What, err, out, c.Text)
			}
		}
	}
	t.Logf("%d commands of %d runbooks parse", total, len(files))
}
