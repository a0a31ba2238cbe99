package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// MarkdownOptions configure RenderMarkdownWith.
type MarkdownOptions struct {
	// Full renders every step on its own, with every command, as the plan's YAML and JSON hold them:
	// the runbook of a 1,000-node upgrade then runs to tens of thousands of lines. Without it, the
	// steps many nodes go through alike are rendered once, as a wave template with a table of the
	// nodes (sets of fewer than eight nodes are always rendered step by step), and long command
	// lists are cut after a few.
	Full bool
	// FullFlag is how a reader of a runbook whose long command lists are cut asks for all of them
	// (a program's flag, "--full"); empty means "MarkdownOptions{Full: true}".
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
	OptionName func(RemedyOption) string
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

// maxCommands is how many commands of a step the runbook shows without MarkdownOptions.Full.
const maxCommands = 8

// RenderMarkdown writes the plan as a runbook for review: RenderMarkdownWith without options.
func RenderMarkdown(w io.Writer, p *Plan) error { return RenderMarkdownWith(w, p, MarkdownOptions{}) }

// RenderMarkdownWith writes the plan as a runbook. It opens with a summary a reviewer reads in a
// minute: what changes (component, current, target, how, risk), the findings, the phases with their
// step counts and how long they take (at least the health gates' settle time, at most every drain
// and wait running to its timeout), and what needs a person (approvals, findings to waive, blocked
// steps). Then come the steps, each with what it does, why, the helm and kubectl commands a person
// would type, how it is verified and how it is undone; steps that many nodes go through alike come
// once, as a wave template with `<node>` for the node and a table of the waves' nodes, what may
// hold them and how a node's steps differ (see MarkdownOptions.Full for every step on its own).
// Everything is read from the plan; the output is deterministic.
func RenderMarkdownWith(w io.Writer, p *Plan, opts MarkdownOptions) error {
	var b strings.Builder
	all := waveSets(p.Steps)
	if opts.OptionName != nil {
		p = withRemedies(p, opts.OptionName)
	}
	renderHeader(&b, p, opts)
	renderSummary(&b, p, all)
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

func previousID(steps []Step, i int) string {
	if i == 0 {
		return ""
	}
	return steps[i-1].ID
}

// withRemedies returns a copy of the plan whose findings name the caller's options as name says.
func withRemedies(p *Plan, name func(RemedyOption) string) *Plan {
	cp := *p
	cp.Findings = make([]Finding, len(p.Findings))
	for i, f := range p.Findings {
		f.Remedy = f.RemedyWith(name)
		cp.Findings[i] = f
	}
	return &cp
}

func renderHeader(b *strings.Builder, p *Plan, opts MarkdownOptions) {
	fmt.Fprintf(b, "# %s\n\n", p.Metadata.Name)
	if p.Metadata.Source != "" {
		fmt.Fprintf(b, "- source: **%s**\n", SourceText(p.Metadata.Source))
	}
	fmt.Fprintf(b, "- operation: `%s`\n", p.Metadata.Operation)
	if !p.Metadata.From.IsZero() || !p.Metadata.To.IsZero() {
		fmt.Fprintf(b, "- versions: %s → %s\n", p.Metadata.From, p.Metadata.To)
	}
	fmt.Fprintf(b, "- snapshot fingerprint: `%s`\n", p.Metadata.Fingerprint)
	if len(p.Metadata.Options) > 0 {
		var opts []string
		for _, k := range sortedKeys(p.Metadata.Options) {
			opts = append(opts, fmt.Sprintf("%s=%s", k, p.Metadata.Options[k]))
		}
		fmt.Fprintf(b, "- options: `%s`\n", strings.Join(opts, " "))
	}
	switch why := NotRunnable(p); {
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

// NotRunnable says why the plan cannot run, one reason each ("waivable findings of code
// `PDB_BLOCKS_DRAIN` stop it until waived or fixed"); none when it can (Runnable).
func NotRunnable(p *Plan) []string {
	var out []string
	var blocking, waivable []string
	for _, f := range Stopping(p.Findings) {
		if f.Severity == Blocking {
			blocking = appendNew(blocking, "`"+string(f.Code)+"`")
		} else {
			waivable = appendNew(waivable, "`"+string(f.Code)+"`")
		}
	}
	if len(blocking) > 0 {
		what := "fix the cause, then plan again"
		if len(p.Steps) == 0 {
			what += " (the plan has no steps until then)"
		}
		out = append(out, fmt.Sprintf("blocking findings %s stop it: %s", OfCodes(blocking), what))
	}
	if len(waivable) > 0 {
		out = append(out, fmt.Sprintf("waivable findings %s stop it until waived or fixed", OfCodes(waivable)))
	}
	var blocked []string
	for _, s := range p.Steps {
		if s.Blocked != "" {
			blocked = append(blocked, "`"+s.ID+"`")
		}
	}
	if len(blocked) > 0 {
		out = append(out, fmt.Sprintf("%s blocked: %s", plural(len(blocked), "step is", "steps are"), ListSome(blocked, 3)))
	}
	return out
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// RenderFindings writes findings as a Markdown section, "None." when there are none. A code found on
// many objects takes one row.
func RenderFindings(b *strings.Builder, fs []Finding) {
	b.WriteString("## Findings\n\n")
	renderFindingsTable(b, fs, nil)
}

// maxFindingRows is how many findings of one code get a row each; more share one row.
const maxFindingRows = 3

func renderFindingsTable(b *strings.Builder, fs []Finding, inWaves map[string]bool) {
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

func severityCell(f Finding) string {
	if f.Waived {
		return string(f.Severity) + " (waived)"
	}
	return string(f.Severity)
}

// renderFindingGroup writes the findings of one code as one row: how many, the objects (up to ten),
// the first message as an example, and the remedy.
func renderFindingGroup(b *strings.Builder, group []Finding, inWaves map[string]bool) {
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
	where := fmt.Sprintf("%d findings on %s", len(group), ListSome(objs, 10))
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
func findingNode(f Finding) string {
	if f.Object.Kind == "Node" {
		return f.Object.Name
	}
	if n, ok := strings.CutPrefix(f.Component, "node/"); ok {
		return n
	}
	return ""
}

// ListSome joins the first n items with commas and says how many more there are ("a, b and 3
// more"), for messages that name objects.
func ListSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }

// stepView says how renderStep shows a step.
type stepView struct {
	opts MarkdownOptions
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
func renderStep(b *strings.Builder, prefix string, s *Step, v stepView) {
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
			wait = fmt.Sprintf("waits up to %s for: ", seconds(s.WaitFor.TimeoutSeconds))
		}
		items = append(items, wait+s.WaitFor.Check.Description)
	}
	if s.Verify != nil {
		for _, c := range s.Verify.Checks {
			item := "checks: " + c.Description
			if why := CheckExecutorOnly(c); why != "" {
				item += " (only the executor checks this: " + why + ")"
			}
			items = append(items, item)
		}
	}
	cmds := Commands(s)
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
	if spec, ok := specOf(s.Kind()); ok {
		failure = "if it fails: " + spec.failure(s)
	}
	var undo []string
	switch {
	case s.Rollback != nil:
		items = appendNonEmpty(items, failure)
		undo = Commands(s.Rollback)
		if len(undo) == 1 && !strings.Contains(undo[0], "\n") {
			items = append(items, fmt.Sprintf("undo: %s (`%s`)", s.Rollback.Description, undo[0]))
			undo = nil
		} else {
			items = append(items, "undo: "+s.Rollback.Description)
		}
	case s.HelmUninstall != nil && s.HelmUninstall.BackupStep != "":
		u := s.HelmUninstall
		items = appendNonEmpty(items, failure)
		if cmd := u.undoByHand(); cmd != "" {
			items = append(items, fmt.Sprintf("undo, by hand only (the executor does not reinstall): install the release again with the values the backup step `%s` saved (`%s`)", u.BackupStep, cmd))
		} else {
			items = append(items, fmt.Sprintf("undo, by hand only (the executor does not reinstall), and no command can be given: the plan names no chart at %s to install from; install the %s chart at that version as release %s with the values the backup step `%s` saved in %s",
				orUnknown(u.FromVersion), orUnknown(u.Chart), u.Release, u.BackupStep, helmValuesFile(u.Release)))
		}
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
func checkItem(prefix string, c Check, s *Step) string {
	item := prefix + c.Description
	if cmd := CheckCommand(c); cmd != "" {
		return withCommand(item, cmd)
	}
	if c.Type == CheckBackupReadable && s.Backup != nil {
		if files := backupFiles(s.Backup); len(files) > 0 {
			return fmt.Sprintf("%s (by hand, only that every file the step wrote is there and not empty: `for f in %s; do test -s \"$f\" || echo \"$f\"; done | %s`)",
				item, strings.Join(files, " "), failOn("", "missing or empty: ", "$0"))
		}
	}
	if why := CheckExecutorOnly(c); why != "" {
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
func healthGateText(g *HealthGate, probes map[string]ProbeDoc) (string, []string) {
	item := fmt.Sprintf("asks probe %q whether the mesh is healthy after %s", g.Probe, g.Scope)
	if g.SettleSeconds > 0 {
		item = fmt.Sprintf("lets the mesh settle %s, then asks probe %q whether the mesh is healthy after %s", seconds(g.SettleSeconds), g.Probe, g.Scope)
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
func fullFlag(opts MarkdownOptions) string {
	if opts.FullFlag != "" {
		return opts.FullFlag
	}
	return "MarkdownOptions{Full: true}"
}

// writeCommands writes commands as a shell block; without opts.Full, more than maxCommands of them
// are cut to the first half of that.
func writeCommands(b *strings.Builder, cmds []string, opts MarkdownOptions) {
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

func mutates(s *Step) bool { return s.Kind().ChangesMesh() }

// seconds writes a duration in seconds as 45s, 10m, 1h30m, 2d3h.
func seconds(s int64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		if m := s % 3600 / 60; m > 0 {
			return fmt.Sprintf("%dh%02dm", s/3600, m)
		}
		return fmt.Sprintf("%dh", s/3600)
	}
	if h := s % 86400 / 3600; h > 0 {
		return fmt.Sprintf("%dd%02dh", s/86400, h)
	}
	return fmt.Sprintf("%dd", s/86400)
}

func kubectlTarget(r mesh.ObjectRef) string {
	t := strings.ToLower(r.Kind) + "/" + r.Name
	if r.Namespace != "" {
		t += " -n " + r.Namespace
	}
	return t
}

func backupFile(r mesh.ObjectRef) string {
	parts := []string{strings.ToLower(r.Kind)}
	if r.Namespace != "" {
		parts = append(parts, r.Namespace)
	}
	return strings.Join(append(parts, r.Name), "-")
}

func selectorString(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// OfCodes names findings by their codes, as a plan's status and the examples say it: "of code X",
// "of codes X, Y" (waivable findings of code X stop it).
func OfCodes(codes []string) string {
	if len(codes) == 1 {
		return "of code " + codes[0]
	}
	return "of codes " + strings.Join(codes, ", ")
}
