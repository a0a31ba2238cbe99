package runbook

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

func TestEveryCheckTypeHasACommandOrSaysWhyOnlyTheExecutorChecksIt(t *testing.T) {
	// Params are strict per type: try each argument a check type may need, alone.
	params := []map[string]string{nil, {"revision": "1-31-4"}, {"node": "n1"}, {"selector": "a=b"}, {"tag": "t", "revision": "1-31-4"},
		{"file": "/tmp/b.json"}, {"workloads": "Deployment/shop/web"}}
	for _, ct := range plan.CheckTypes() {
		cmd, why := "", plan.CheckExecutorOnly(plan.Check{Type: ct})
		for _, p := range params {
			if cmd = plan.CheckCommand(plan.Check{Type: ct, Object: mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "x"}, Params: p}); cmd != "" {
				break
			}
		}
		if (cmd == "") == (why == "") {
			t.Errorf("check %s: command %q, executor-only reason %q: want exactly one", ct, cmd, why)
		}
	}
}

var (
	// unboundedLoop is a shell loop that only a person can stop.
	unboundedLoop = regexp.MustCompile(`(^|[;&|(]\s*)(until|while) `)
	// readLoop reads its input, lines a command printed: it ends with them.
	readLoop = regexp.MustCompile(`\| while read( -r)? [a-z_ ]+; do `)
	// boundedLoop is the loop the plan prints for a wait (bound.until): a count, then a message.
	boundedLoop = regexp.MustCompile(`^ok=; for i in \$\(seq [0-9]+\); do if .+; then ok=1; break; fi; sleep [0-9]+; done; \[ -n "\$ok" \] \|\| \{ echo '?gave up after [^;]+: .+; find out why, fix it, and run this again'? >&2; false; \}$`)
	// runbookItem is a verify, before, checks or undo line of a step.
	runbookItem = regexp.MustCompile(`^- (verify|before|checks|undo[^:]*): `)
)

// TestEveryStepOfEveryGoldenRunbookCanBeTypedOrSaysWhyNot renders every golden plan's full runbook
// and holds what a person follows to it: every verify, before and checks line has its command or
// says that only the executor checks it and why; every undo has a command (inline or in the block
// after it) or says there is none; no command is a shell comment standing in for one; and every
// loop has a bound and says what to do when it is reached.
func TestEveryStepOfEveryGoldenRunbookCanBeTypedOrSaysWhyNot(t *testing.T) {
	lines := 0
	for _, f := range plantest.GoldenPlanFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var md bytes.Buffer
		if err := RenderWith(&md, p, Options{Full: true}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all := strings.Split(md.String(), "\n")
		inBlock := false
		for i, l := range all {
			if strings.HasPrefix(l, "```") {
				inBlock = !inBlock
				continue
			}
			if inBlock {
				checkCommand(t, f, l)
				if j := i + 1; strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "# with istioctl: ") && j < len(all) && strings.HasPrefix(all[j], "```") && (i == 0 || strings.HasPrefix(all[i-1], "```")) {
					t.Errorf("%s: a block whose only line is a shell comment, where a command should be: %s", f, l)
				}
				continue
			}
			m := runbookItem.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			lines++
			for _, c := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(l, -1) {
				if strings.HasPrefix(c[1], "#") {
					t.Errorf("%s: a shell comment where a command should be: %s", f, l)
				}
				checkCommand(t, f, c[1])
			}
			typed := strings.Contains(l, "(`") || strings.Contains(l, "only the executor checks this: ") || strings.Contains(l, "by hand, only") || strings.Contains(l, "no command can be given: ")
			if strings.HasPrefix(m[1], "undo") {
				typed = typed || strings.Contains(l, "no automatic rollback") || i+1 < len(all) && strings.HasPrefix(all[i+1], "```sh")
			}
			if m[1] == "checks" {
				typed = true // a Verify step's commands are in its block; its executor-only checks say so (below)
			}
			if !typed {
				t.Errorf("%s: a person cannot type this line, and it does not say why:\n%s", f, l)
			}
		}
		for _, s := range p.Steps {
			var checks []plan.Check
			checks = append(checks, s.Preconditions...)
			checks = append(checks, s.Postconditions...)
			if s.Verify != nil {
				checks = append(checks, s.Verify.Checks...)
			}
			if s.WaitFor != nil {
				checks = append(checks, s.WaitFor.Check)
			}
			for _, c := range checks {
				if plan.CheckCommand(c) == "" && plan.CheckExecutorOnly(c) == "" && !(c.Type == plan.CheckBackupReadable && s.Backup != nil) {
					t.Errorf("%s: step %s: check %s (%q) has no command and no reason only the executor has one", f, s.ID, c.Type, c.Description)
				}
			}
		}
	}
	if lines < 100 {
		t.Errorf("read %d verify, before, checks and undo lines, want the goldens' (100 or more)", lines)
	}
}

// checkCommand fails on a loop a person cannot use as printed: a wait with no bound, or a bounded
// one that does not say what to do when the bound is reached.
func checkCommand(t *testing.T, file, c string) {
	t.Helper()
	c = strings.TrimSpace(c)
	if strings.HasPrefix(c, "ok=; for i in $(seq ") {
		if !boundedLoop.MatchString(c) {
			t.Errorf("%s: a wait loop that is not the bounded form (a count, then what to do):\n%s", file, c)
		}
		return
	}
	if unboundedLoop.MatchString(readLoop.ReplaceAllString(c, "| ")) {
		t.Errorf("%s: a loop with no bound; a person cannot tell when to give up:\n%s", file, c)
	}
}
