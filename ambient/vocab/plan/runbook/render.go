package runbook

import (
	"fmt"
	"io"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/words"
)

// Options configure RenderWith.
type Options struct {
	// Full renders every step on its own, with every command, as the plan's YAML and JSON hold them:
	// the runbook of a 1,000-node upgrade then runs to tens of thousands of lines. Without it, the
	// steps many nodes go through alike are rendered once, as a wave template with a table of the
	// nodes (sets of fewer than eight nodes are always rendered step by step), and long command
	// lists are cut after a few.
	Full bool
	// FullFlag is how a reader of a runbook whose long command lists are cut asks for all of them
	// (a program's flag, "--full"); empty means "Options{Full: true}".
	FullFlag string
	// Probes say what the probes health gates ask look at, by probe name (ProbeDoc), so each gate
	// names its signals, threshold and the commands that show them by hand. The program that runs
	// the plan registers the probes, so it describes them; a gate whose probe is not described says
	// that the caller's probe decides.
	Probes map[string]ProbeDoc
	// Resume is the command that continues the plan after a failed step (the program's own:
	// "upgrade --resume --plan-file p.yaml"), named once in the header; empty leaves it out.
	Resume string
	// OptionName gives a program's own name for a caller's option a finding's remedy names (a flag,
	// "--local-storage evict"), so that the runbook says what its reader types (Finding.RemedyWith);
	// nil, or "" for an option, keeps the library's name.
	OptionName func(plan.RemedyOption) string
}

// ProbeDoc describes, for the runbook, a probe that health gates ask.
type ProbeDoc struct {
	// What says what the probe looks at: the signals, how they are read and the threshold at which
	// it says unhealthy.
	What string
	// Commands show the same signals by hand; each exits non-zero when the probe would say
	// unhealthy.
	Commands []string
}

// minTemplateNodes is the fewest nodes whose wave steps the runbook renders once, as a template:
// the steps of fewer nodes read shorter one by one, and are run by hand as written.
const minTemplateNodes = 8

// maxCommands is how many commands of a step the runbook shows without Options.Full.
const maxCommands = 8

// Render writes the plan as a runbook for review: RenderWith without options.
func Render(w io.Writer, p *plan.Plan) error {
	return RenderWith(w, p, Options{})
}

// RenderWith writes the plan as a runbook. It opens with a summary a reviewer reads in a
// minute: what changes (component, current, target, how, risk), the findings, the phases with their
// step counts and how long they take (at least the health gates' settle time, at most every drain
// and wait running to its timeout), and what needs a person (approvals, findings to waive, blocked
// steps). Then come the steps, each with what it does, why, the helm and kubectl commands a person
// would type, how it is verified and how it is undone; steps that many nodes go through alike come
// once, as a wave template with `<node>` for the node and a table of the waves' nodes, what may
// hold them and how a node's steps differ (see Options.Full for every step on its own).
// Everything is read from the plan; the output is deterministic.
func RenderWith(w io.Writer, p *plan.Plan, opts Options) error {
	var b strings.Builder
	all := waveSets(p.Steps)
	if opts.OptionName != nil {
		p = withRemedies(p, opts.OptionName)
	}
	renderHeader(&b, p, opts)
	renderSummary(&b, p, all)
	renderVerdicts(&b, p)
	var sets []waveSet
	for _, ws := range all {
		if !opts.Full && ws.nodeCount() >= minTemplateNodes {
			sets = append(sets, ws)
		}
	}
	if len(p.Steps) > 0 {
		fmt.Fprintf(&b, "## Steps (%d)\n\n", len(p.Steps))
	}
	next := 0
	for i := 0; i < len(p.Steps); {
		if next < len(sets) && sets[next].start == i {
			renderWaveSet(&b, p, sets[next], all, opts)
			i = sets[next].end
			next++
			continue
		}
		renderStep(&b, fmt.Sprintf("%d. ", i+1), &p.Steps[i], stepView{opts: opts, previous: previousID(p.Steps, i)})
		i++
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func previousID(steps []plan.Step, i int) string {
	if i == 0 {
		return ""
	}
	return steps[i-1].ID
}

// withRemedies returns a copy of the plan whose findings name the caller's options as name says.
func withRemedies(p *plan.Plan, name func(plan.RemedyOption) string) *plan.Plan {
	cp := *p
	cp.Findings = make([]plan.Finding, len(p.Findings))
	for i, f := range p.Findings {
		f.Remedy = f.RemedyWith(name)
		cp.Findings[i] = f
	}
	return &cp
}

func renderHeader(b *strings.Builder, p *plan.Plan, opts Options) {
	fmt.Fprintf(b, "# %s\n\n", p.Metadata.Name)
	if p.Metadata.Source != "" {
		fmt.Fprintf(b, "- source: **%s**\n", plan.SourceText(p.Metadata.Source))
	}
	fmt.Fprintf(b, "- operation: `%s`\n", p.Metadata.Operation)
	if !p.Metadata.From.IsZero() || !p.Metadata.To.IsZero() {
		fmt.Fprintf(b, "- versions: %s → %s\n", p.Metadata.From, p.Metadata.To)
	}
	fmt.Fprintf(b, "- snapshot fingerprint: `%s`\n", p.Metadata.Fingerprint)
	if len(p.Metadata.Options) > 0 {
		var opts []string
		for _, k := range words.SortedKeys(p.Metadata.Options) {
			opts = append(opts, fmt.Sprintf("%s=%s", k, p.Metadata.Options[k]))
		}
		fmt.Fprintf(b, "- options: `%s`\n", strings.Join(opts, " "))
	}
	switch why := plan.NotRunnable(p); {
	case len(why) > 0:
		fmt.Fprintf(b, "- status: **not runnable**: %s; see what needs a person below\n", strings.Join(why, "; "))
	case len(p.Steps) == 0:
		b.WriteString("- status: **nothing to do**: the plan has no steps\n")
	default:
		b.WriteString("- status: **ready to apply** once reviewed\n")
	}
	if len(p.Steps) > 0 && opts.Resume != "" {
		fmt.Fprintf(b, "- if a step fails: the step says what it leaves behind and what to do; the steps before it stay done; once fixed, continue the run with `%s` (it skips what is done)\n", opts.Resume)
	}
	b.WriteString("\n")
}

// RenderFindings writes findings as a Markdown section, "None." when there are none. A code found on
// many objects takes one row.
func RenderFindings(b *strings.Builder, fs []plan.Finding) {
	b.WriteString("## Findings\n\n")
	renderFindingsTable(b, fs, nil)
}

// maxFindingRows is how many findings of one code get a row each; more share one row.
const maxFindingRows = 3

func renderFindingsTable(b *strings.Builder, fs []plan.Finding, inWaves map[string]bool) {
	if len(fs) == 0 {
		b.WriteString("None.\n\n")
		return
	}
	b.WriteString("| severity | code | object | finding | remedy |\n|---|---|---|---|---|\n")
	for i := 0; i < len(fs); {
		j := i + 1
		for j < len(fs) && fs[j].Code == fs[i].Code && fs[j].Severity == fs[i].Severity && fs[j].Waived == fs[i].Waived {
			j++
		}
		group := fs[i:j]
		if len(group) <= maxFindingRows {
			for _, f := range group {
				fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s |\n", severityCell(f), f.Code, cell(f.Object.String()), cell(f.Message), cell(f.Remedy))
			}
		} else {
			renderFindingGroup(b, group, inWaves)
		}
		i = j
	}
	b.WriteString("\n")
}

func severityCell(f plan.Finding) string {
	if f.Waived {
		return string(f.Severity) + " (waived)"
	}
	return string(f.Severity)
}

// renderFindingGroup writes the findings of one code as one row: how many, the objects (up to ten),
// the first message as an example, and the remedy.
func renderFindingGroup(b *strings.Builder, group []plan.Finding, inWaves map[string]bool) {
	var objs []string
	seen := map[string]bool{}
	perNode := true
	for _, f := range group {
		if o := f.Object.String(); !seen[o] {
			seen[o] = true
			objs = append(objs, o)
		}
		perNode = perNode && inWaves[findingNode(f)]
	}
	where := fmt.Sprintf("%d findings on %s", len(group), plan.ListSome(objs, 10))
	if perNode {
		where += "; each is named in the table of its node's wave below"
	}
	remedy := group[0].Remedy
	for _, f := range group[1:] {
		if f.Remedy != remedy {
			remedy += " (remedies differ: see the plan's findings)"
			break
		}
	}
	fmt.Fprintf(b, "| %s | `%s` | %s | e.g. %s | %s |\n", severityCell(group[0]), group[0].Code, cell(where), cell(group[0].Message), cell(remedy))
}

// findingNode is the node a finding is about: its object when that is a Node, else the node its
// component names ("node/<name>"); "" when none.
func findingNode(f plan.Finding) string {
	if f.Object.Kind == "Node" {
		return f.Object.Name
	}
	if n, ok := strings.CutPrefix(f.Component, "node/"); ok {
		return n
	}
	return ""
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }

// stepView says how renderStep shows a step.
type stepView struct {
	opts Options
	// previous is the ID of the step before it: a dependency on it alone goes unsaid.
	previous string
	// template steps stand for many nodes: their dependencies and what may hold them are the
	// wave table's.
	template bool
	// differs says how a variant of a template step differs from the first.
	differs string
}

// renderStep writes a step as a heading and one block of lines: what and why, then what it waits
// for, its commands, notes, verification and undo. Lists and code fences may follow a paragraph
// without a blank line in CommonMark, so a step stays short.
func renderStep(b *strings.Builder, prefix string, s *plan.Step, v stepView) {
	level := "###"
	if v.template {
		level = "####"
	}
	fmt.Fprintf(b, "%s %s`%s` · %s · risk %s\n", level, prefix, s.ID, s.Kind(), s.Risk)
	fmt.Fprintf(b, "**What:** %s", s.Description)
	if s.Cordon != nil && s.Cordon.Pool != "" && !v.template {
		fmt.Fprintf(b, " (pool %s)", s.Cordon.Pool)
	}
	if s.Reason != "" {
		fmt.Fprintf(b, "  \n**Why:** %s", s.Reason)
	}
	b.WriteString("\n")
	if s.Blocked != "" {
		fmt.Fprintf(b, "- **blocked:** %s\n", s.Blocked)
	}
	var items []string
	if v.differs != "" {
		items = append(items, v.differs)
	}
	if !v.template && len(s.DependsOn) > 0 && !(len(s.DependsOn) == 1 && s.DependsOn[0] == v.previous) {
		items = append(items, "after: `"+strings.Join(s.DependsOn, "`, `")+"`")
	}
	for _, c := range s.Preconditions {
		items = append(items, checkItem("before: ", c, s))
	}
	if s.WaitFor != nil {
		wait := "waits for: "
		if s.WaitFor.TimeoutSeconds > 0 {
			wait = fmt.Sprintf("waits up to %s for: ", words.Seconds(s.WaitFor.TimeoutSeconds))
		}
		items = append(items, wait+s.WaitFor.Check.Description)
	}
	if s.Verify != nil {
		for _, c := range s.Verify.Checks {
			item := "checks: " + c.Description
			if why := plan.CheckExecutorOnly(c); why != "" {
				item += " (only the executor checks this: " + why + ")"
			}
			items = append(items, item)
		}
	}
	cmds := plan.Commands(s)
	if g := s.HealthGate; g != nil {
		item, probeCmds := healthGateText(g, v.opts.Probes)
		items = append(items, item)
		cmds = probeCmds
	}
	if comments(cmds) {
		// Nothing to type: a health gate or a pause says what a person checks.
		for _, c := range cmds {
			items = append(items, "by hand: "+strings.TrimPrefix(c, "# "))
		}
		cmds = nil
	}
	writeItems(b, items)
	writeCommands(b, cmds, v.opts)
	items = nil
	if s.Drain != nil && !v.template {
		for _, h := range s.Drain.MayHold {
			items = append(items, "may hold the drain: "+h)
		}
	}
	for _, n := range s.Notes {
		items = append(items, "note: "+n)
	}
	for _, c := range s.Postconditions {
		items = append(items, checkItem("verify: ", c, s))
	}
	failure := ""
	if k, ok := kindTexts[s.Kind()]; ok {
		failure = "if it fails: " + k.failure(s)
	}
	var undo []string
	switch {
	case s.Rollback != nil:
		items = appendNonEmpty(items, failure)
		undo = plan.Commands(s.Rollback)
		if len(undo) == 1 && !strings.Contains(undo[0], "\n") {
			items = append(items, fmt.Sprintf("undo: %s (`%s`)", s.Rollback.Description, undo[0]))
			undo = nil
		} else {
			items = append(items, "undo: "+s.Rollback.Description)
		}
	case plan.UndoByHand(s) != "":
		items = appendNonEmpty(items, failure)
		items = append(items, plan.UndoByHand(s))
	case mutates(s) && failure != "":
		items = append(items, failure+"; undo: no automatic rollback for this step")
	case mutates(s):
		items = append(items, "undo: no automatic rollback for this step")
	default:
		items = appendNonEmpty(items, failure)
	}
	writeItems(b, items)
	writeCommands(b, undo, v.opts)
	b.WriteString("\n")
}

func appendNonEmpty(items []string, s string) []string {
	if s == "" {
		return items
	}
	return append(items, s)
}

// withCommand puts a check's command after its item, in backquotes, when it has one.
// checkItem is the runbook line of a check of step s: its description with the command that shows
// it, or with why only the executor can check it. A backup's read-back has, by hand, the weaker
// check that every file the step wrote is there and not empty, and says so.
func checkItem(prefix string, c plan.Check, s *plan.Step) string {
	item := prefix + c.Description
	if cmd := plan.CheckCommand(c); cmd != "" {
		return withCommand(item, cmd)
	}
	if what, cmd := plan.CheckByHand(s, c); cmd != "" {
		return fmt.Sprintf("%s (by hand, %s: `%s`)", item, what, cmd)
	}
	if why := plan.CheckExecutorOnly(c); why != "" {
		return item + " (only the executor checks this: " + why + ")"
	}
	return item
}

func withCommand(item, cmd string) string {
	if cmd == "" {
		return item
	}
	return item + " (`" + cmd + "`)"
}

// healthGateText says what a health gate waits for and asks, naming what its probe looks at when
// the caller described it, and returns the commands that show the same by hand.
func healthGateText(g *plan.HealthGate, probes map[string]ProbeDoc) (string, []string) {
	item := fmt.Sprintf("asks probe %q whether the mesh is healthy after %s", g.Probe, g.Scope)
	if g.SettleSeconds > 0 {
		item = fmt.Sprintf("lets the mesh settle %s, then asks probe %q whether the mesh is healthy after %s", words.Seconds(g.SettleSeconds), g.Probe, g.Scope)
	}
	doc, ok := probes[g.Probe]
	if !ok {
		return item + "; the probe is the caller's, and the plan does not say what it looks at", nil
	}
	return item + ": " + doc.What, doc.Commands
}

// comments reports whether every command is a shell comment on one line.
func comments(cmds []string) bool {
	for _, c := range cmds {
		if !strings.HasPrefix(c, "#") || strings.Contains(c, "\n") {
			return false
		}
	}
	return len(cmds) > 0
}

func writeItems(b *strings.Builder, items []string) {
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
}

// fullFlag is how the reader asks for the whole runbook: the caller's flag, or the option.
func fullFlag(opts Options) string {
	if opts.FullFlag != "" {
		return opts.FullFlag
	}
	return "runbook.Options{Full: true}"
}

// writeCommands writes commands as a shell block; without opts.Full, more than maxCommands of them
// are cut to the first half of that.
func writeCommands(b *strings.Builder, cmds []string, opts Options) {
	if len(cmds) == 0 {
		return
	}
	b.WriteString("```sh\n")
	shown := cmds
	if !opts.Full && len(cmds) > maxCommands {
		shown = cmds[:maxCommands/2]
	}
	for _, c := range shown {
		b.WriteString(c)
		b.WriteString("\n")
	}
	if len(shown) < len(cmds) {
		fmt.Fprintf(b, "# ... and %d more like these (every command: %s, or the plan's YAML)\n", len(cmds)-len(shown), fullFlag(opts))
	}
	b.WriteString("```\n")
}

func mutates(s *plan.Step) bool { return s.Kind().ChangesMesh() }
