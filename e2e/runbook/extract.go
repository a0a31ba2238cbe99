package runbook

import (
	"strings"
)

// What a runbook line asks a person to type.
const (
	// Run is a command of a step's shell block: it changes the cluster, or waits.
	Run = "run"
	// Before is a printed precondition: it must exit 0 before the step runs.
	Before = "before"
	// Verify is a printed postcondition: it must exit 0 once the step is done.
	Verify = "verify"
)

// Command is one thing the runbook asks a person to type, in the order it does.
type Command struct {
	// Step is the ID of the step it belongs to, as the step's heading names it.
	Step string
	// What is Run, Before or Verify.
	What string
	// Text is the shell text: a whole block of a step (Run) or one check.
	Text string
}

// Extract returns, in order, every shell command and printed check of a Markdown runbook
// (runbook.RenderWith): the shell blocks of each step, the "before:" and "verify:" items
// that name a command. Undo commands (the block or backquotes after "undo:") and the blocks of the
// runbook's preamble are not part of a run and are left out; so are a block's comment lines.
func Extract(md string) []Command {
	var out []Command
	step := ""
	inBlock, undo := false, false
	var block []string
	for _, line := range strings.Split(md, "\n") {
		switch {
		case inBlock && line == "```":
			inBlock = false
			if text := strings.TrimSpace(strings.Join(block, "\n")); text != "" && step != "" && !undo {
				out = append(out, Command{Step: step, What: Run, Text: text})
			}
			block = nil
		case inBlock:
			if !strings.HasPrefix(strings.TrimSpace(line), "#") {
				block = append(block, line)
			}
		case line == "```sh":
			inBlock = true
		case strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "#### "):
			step, undo = stepID(line), false
		case strings.HasPrefix(line, "- undo:"):
			undo = true
		case strings.HasPrefix(line, "- before: ") || strings.HasPrefix(line, "- verify: "):
			what := Before
			if strings.HasPrefix(line, "- verify: ") {
				what = Verify
			}
			if cmd, ok := itemCommand(line); ok && step != "" {
				out = append(out, Command{Step: step, What: what, Text: cmd})
			}
		case strings.HasPrefix(line, "- "):
			undo = false
		}
	}
	return out
}

// stepID reads the ID of a step's heading, "### 4. `cni/upgrade` · HelmUpgrade · risk medium";
// "" for a heading that is no step's.
func stepID(heading string) string {
	_, rest, ok := strings.Cut(heading, "`")
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, "`")
	if !ok {
		return ""
	}
	return id
}

// itemCommand reads the command an item ends with: "- verify: what (`command`)".
func itemCommand(line string) (string, bool) {
	if !strings.HasSuffix(line, "`)") {
		return "", false
	}
	i := strings.LastIndex(line, " (`")
	if i < 0 {
		return "", false
	}
	return line[i+3 : len(line)-2], true
}
