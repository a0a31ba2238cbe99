package runbook

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/nodename"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/words"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/estimate"
)

func (ws waveSet) nodeCount() int { return countBlocks(ws) }

// summary says what is done to how many nodes in how many waves: "drain 14 nodes in 5 waves", named
// after the segment of the steps' IDs before the node ("node" goes unsaid).
func (ws waveSet) summary() string {
	s := words.Plural(ws.nodeCount(), "node", "nodes")
	head, _, _ := strings.Cut(ws.name, "/"+nodename.Node)
	if label := head[strings.LastIndex(head, "/")+1:]; label != "node" && label != "nodes" && label != "" {
		s = label + " " + s
	}
	if len(ws.waves) > 1 {
		s += fmt.Sprintf(" in %d waves", len(ws.waves))
	}
	return s
}

// allBlocks returns the blocks of every wave, in order.
func (ws waveSet) allBlocks() []plan.NodeBlock {
	var out []plan.NodeBlock
	for _, w := range ws.waves {
		out = append(out, w.blocks...)
	}
	return out
}

// templateBlock picks the plan.NodeBlock most nodes of the set share (what may hold a drain aside), the
// first of them on a tie.
func templateBlock(steps []plan.Step, ws waveSet) plan.NodeBlock {
	count := map[string]int{}
	var best plan.NodeBlock
	bestKey := ""
	for _, bl := range ws.allBlocks() {
		key := bl.Shape
		for _, st := range generic(steps, bl) {
			key += "\x00" + stepKey(st)
		}
		count[key]++
		if bestKey == "" || count[key] > count[bestKey] {
			best, bestKey = bl, key
		}
	}
	return best
}

// generic returns a block's steps with its node replaced by the placeholder.
func generic(steps []plan.Step, bl plan.NodeBlock) []plan.Step {
	out := make([]plan.Step, 0, bl.End-bl.Start)
	for i := bl.Start; i < bl.End; i++ {
		out = append(out, withNode(steps[i], bl.Node, nodename.Node))
	}
	return out
}

// stepKey is a step as JSON without what the wave table shows per node or wave: its dependencies
// (on the wave before), its wave, its node's pool, what may hold its drain and what it is expected to evict.
func stepKey(s plan.Step) string {
	s.DependsOn, s.Wave = nil, nil
	if s.Drain != nil {
		d := *s.Drain
		d.MayHold, d.Expect = nil, nil
		s.Drain = &d
	}
	if s.Cordon != nil {
		c := *s.Cordon
		c.Pool = ""
		s.Cordon = &c
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func renderWaveSet(b *strings.Builder, p *plan.Plan, ws waveSet, sets []waveSet, opts Options) {
	steps := p.Steps
	sl := slotsOf(steps, ws)
	fmt.Fprintf(b, "### %d–%d. `%s` · %s\n\n", ws.start+1, ws.end, familyName(ws.name), ws.summary())
	fmt.Fprintf(b, "Each node goes through %s, `%s` standing for its name. The executor moves the nodes of a wave at the same time (as many at once as its run allows), each node's steps one after another", words.Plural(len(sl), "step", "steps"), nodename.Node)
	if len(ws.waves) > 1 {
		b.WriteString("; a wave starts once the steps that close the wave before it have passed")
	}
	b.WriteString(". A step some nodes take another way is shown in each of its variants (A, B, ...). The table below names each wave's nodes, how a node's steps differ from these, and what may hold them.\n\n")
	total := ws.nodeCount()
	for _, x := range sl {
		for v := range x.variants[:x.shown] {
			label := ""
			if x.shown > 1 {
				label = fmt.Sprintf("variant %s, %d of %d nodes: ", x.variants[v].label, len(x.variants[v].nodes), total)
			}
			view := stepView{opts: opts, template: true}
			if v > 0 {
				view.differs = "differs from A: " + strings.Join(stepDiff(&x.variants[0].rep, &x.variants[v].rep), "; ")
			}
			renderStep(b, label, &x.variants[v].rep, view)
		}
	}
	if trail := trailTemplate(steps, ws); len(trail) > 0 {
		for i := range trail {
			renderStep(b, "after each wave: ", &trail[i], stepView{opts: opts, template: true})
		}
	}
	renderWaveTiming(b, p, ws)
	renderWaveTable(b, p, ws, sl, sameNodes(ws, sets), lastSets(sets), opts)
}

// maxVariants is how many variants of one template step the runbook shows; a node whose step is
// none of them is told apart in the wave table.
const maxVariants = 3

// slot is one step of a wave template: its ID pattern and the ways nodes take it, the most common
// first.
type slot struct {
	pattern  string
	variants []variant
	// shown is how many variants are rendered.
	shown int
	// of is the variant of each node.
	of map[string]int
}

type variant struct {
	label string
	rep   plan.Step
	nodes []string
}

// slotsOf finds the steps of a wave set's template, in the order of the most common block, and the
// variants of each: steps that differ in more than their notes, what blocks them and the values their
// checks take per node.
func slotsOf(steps []plan.Step, ws waveSet) []slot {
	tb := templateBlock(steps, ws)
	var out []slot
	for _, t := range generic(steps, tb) {
		x := slot{pattern: t.ID, of: map[string]int{}}
		keys := map[string]int{}
		full := []map[string]int{}
		for _, bl := range ws.allBlocks() {
			for _, g := range generic(steps, bl) {
				if g.ID != t.ID {
					continue
				}
				k := variantKey(g)
				v, ok := keys[k]
				if !ok {
					v = len(x.variants)
					keys[k] = v
					x.variants = append(x.variants, variant{rep: g})
					full = append(full, map[string]int{})
				}
				x.variants[v].nodes = append(x.variants[v].nodes, bl.Node)
				full[v][stepKey(g)]++
				if n := full[v][stepKey(g)]; n > full[v][stepKey(x.variants[v].rep)] {
					x.variants[v].rep = g
				}
				x.of[bl.Node] = v
			}
		}
		// The most common variant first; ties keep the order first seen.
		order := make([]int, len(x.variants))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool { return len(x.variants[order[i]].nodes) > len(x.variants[order[j]].nodes) })
		sorted := make([]variant, len(order))
		rank := map[int]int{}
		for r, i := range order {
			sorted[r] = x.variants[i]
			sorted[r].label = string(rune('A' + min(r, 25)))
			rank[i] = r
		}
		for n, v := range x.of {
			x.of[n] = rank[v]
		}
		x.variants = sorted
		x.shown = min(len(sorted), maxVariants)
		out = append(out, x)
	}
	return out
}

// slotNames are the short names of a wave set's template steps ("cordon", "drain", ...).
func slotNames(steps []plan.Step, ws waveSet) []string {
	var out []string
	for _, bl := range generic(steps, templateBlock(steps, ws)) {
		out = append(out, shortName(bl.ID))
	}
	return out
}

// variantKey is stepKey without what the wave table tells per node: notes, what blocks the step and
// the params of its checks.
func variantKey(s plan.Step) string {
	s.Notes, s.Blocked = nil, ""
	s.Postconditions = withoutParams(s.Postconditions)
	s.Preconditions = withoutParams(s.Preconditions)
	return stepKey(s)
}

func withoutParams(cs []plan.Check) []plan.Check {
	out := make([]plan.Check, len(cs))
	for i, c := range cs {
		c.Params = nil
		out[i] = c
	}
	return out
}

// sameNodes returns, for a set of one wave, another set of several waves with the very same nodes in
// the same order (blue-green cordons every node its waves then drain), so its table need not list
// them again; nil when there is none.
func sameNodes(ws waveSet, sets []waveSet) *waveSet {
	if len(ws.waves) != 1 {
		return nil
	}
	seq := func(x waveSet) string {
		var ns []string
		for _, bl := range x.allBlocks() {
			ns = append(ns, bl.Node)
		}
		return strings.Join(ns, "\n")
	}
	for i := range sets {
		if o := &sets[i]; len(o.waves) > 1 && seq(*o) == seq(ws) {
			return o
		}
	}
	return nil
}

// familyName is a family's ID pattern up to the node: "ztunnel/node/{node}/…".
func familyName(f string) string {
	head, rest, _ := strings.Cut(f, nodename.Node)
	if rest == "" {
		return f
	}
	return head + nodename.Node + "/…"
}

// trailTemplate returns the steps that close the first wave that has any, its number replaced.
func trailTemplate(steps []plan.Step, ws waveSet) []plan.Step {
	for n, w := range ws.waves {
		if len(w.trail) == 0 {
			continue
		}
		var out []plan.Step
		for _, i := range w.trail {
			s := steps[i]
			num := fmt.Sprint(n + 1)
			if strings.Contains("/"+s.ID+"/", "/"+num+"/") {
				s = withNode(s, num, nodename.Wave)
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

// renderWaveTiming says what the waves of a set wait for and how long they take, by EstimateTime:
// the first wave and, when there are more, all of them, each with the steps that close it.
func renderWaveTiming(b *strings.Builder, p *plan.Plan, ws waveSet) {
	steps := p.Steps
	est := estimate.Time(p, estimate.Options{})
	var first estimate.Waits
	var firstSpan, all estimate.Span
	for n, w := range ws.waves {
		var t estimate.Waits
		var sp estimate.Span
		for _, i := range append(append([]int(nil), w.lead...), w.trail...) {
			t.Add(&steps[i])
			sp.Add(est.Steps[i])
		}
		for _, bl := range w.blocks {
			for i := bl.Start; i < bl.End; i++ {
				t.Add(&steps[i])
				if steps[i].Wave == nil { // a planner's batch without explicit waves: its steps one by one
					sp.Add(est.Steps[i])
				}
			}
		}
		for _, we := range est.Waves {
			if we.Start >= bl0(w) && we.Start < blEnd(w) {
				sp.Add(we.Span)
			}
		}
		if n == 0 {
			first, firstSpan = t, sp
		}
		all.Add(sp)
	}
	if all.Most == 0 && all.Expected == 0 && !all.Open && first.Approvals == 0 {
		return
	}
	least, expected, most := spanCells(firstSpan)
	fmt.Fprintf(b, "Time: the first wave (%s) waits for %s: at least %s, expected %s, at most %s.",
		words.Plural(len(ws.waves[0].blocks), "node", "nodes"), first.List(), least, expected, most)
	if len(ws.waves) > 1 {
		least, expected, most = spanCells(all)
		fmt.Fprintf(b, " All %d waves: at least %s, expected %s, at most %s.", len(ws.waves), least, expected, most)
	}
	b.WriteString("\n\n")
}

// bl0 and blEnd are the first step of a wave's first plan.NodeBlock and the end of its last.
func bl0(w wave) int   { return w.blocks[0].Start }
func blEnd(w wave) int { return w.blocks[len(w.blocks)-1].End }

// renderWaveTable writes a row per wave: its nodes, their pools, how their steps differ from the
// template, and what may hold them (what their drains name, the findings about them).
// lastSets gives each node the start of the last wave set it is in: the findings about a node are
// told there.
func lastSets(sets []waveSet) map[string]int {
	out := map[string]int{}
	for _, ws := range sets {
		for _, bl := range ws.allBlocks() {
			out[bl.Node] = ws.start
		}
	}
	return out
}

// maxWaveRows is how many rows the wave table has without Options.Full: past it, rows hold
// several consecutive waves each, every wave still named with its nodes, so that the runbook of a
// 1,000-node mesh stays a document a person reviews.
const maxWaveRows = 50

// waveRow is one wave's cells of the wave table.
type waveRow struct {
	nodes, differs, holds string
	pools                 map[string]int
}

func renderWaveTable(b *strings.Builder, p *plan.Plan, ws waveSet, sl []slot, same *waveSet, last map[string]int, opts Options) {
	steps := p.Steps
	pools := nodePools(steps)
	findings := map[string][]plan.Code{}
	for _, f := range p.Findings {
		if n := findingNode(f); n != "" {
			findings[n] = append(findings[n], f.Code)
		}
		for _, r := range f.Related { // one finding about many nodes is told at each of them
			if r.Kind == "Node" && r.Name != findingNode(f) {
				findings[r.Name] = append(findings[r.Name], f.Code)
			}
		}
	}
	b.WriteString("| wave | nodes | pools | differs from the steps above | may hold it |\n|---|---|---|---|---|\n")
	rows := make([]waveRow, 0, len(ws.waves))
	for _, w := range ws.waves {
		var nodes []string
		pc := map[string]int{}
		differs, holds := newGrouped(), newHolds()
		if same != nil {
			holds.add(fmt.Sprintf("as in steps %d–%d", same.start+1, same.end), "")
		}
		for _, i := range w.lead {
			differs.add("first: "+glueText(&steps[i]), "")
		}
		for _, bl := range w.blocks {
			nodes = append(nodes, bl.Node)
			if pool := pools[bl.Node]; pool != "" {
				pc[pool]++
			}
			for _, d := range deviations(sl, bl.Node, generic(steps, bl)) {
				differs.add(d, bl.Node)
			}
			for i := bl.Start; i < bl.End; i++ {
				if d := steps[i].Drain; d != nil && same == nil {
					for _, h := range d.MayHold {
						holds.add(nodename.Replace(h, bl.Node, nodename.Node), bl.Node)
					}
				}
			}
			if same == nil && last[bl.Node] == ws.start {
				for _, c := range compactCodes(findings[bl.Node]) {
					holds.add(fmt.Sprintf("finding `%s`", c), bl.Node)
				}
			}
		}
		list := strings.Join(nodes, ", ")
		if same != nil {
			list = fmt.Sprintf("the %d nodes of steps %d–%d (`%s`), in their order", len(nodes), same.start+1, same.end, familyName(same.name))
		}
		rows = append(rows, waveRow{nodes: list, differs: differs.text(len(nodes)), holds: holds.text(), pools: pc})
	}
	per := 1
	if !opts.Full && len(rows) > maxWaveRows {
		per = (len(rows) + maxWaveRows - 1) / maxWaveRows
	}
	for i := 0; i < len(rows); i += per {
		group := rows[i:min(i+per, len(rows))]
		pc := map[string]int{}
		var nodes, differs, holds []string
		for j, r := range group {
			for k, n := range r.pools {
				pc[k] += n
			}
			at := ""
			if len(group) > 1 {
				at = fmt.Sprintf("%d: ", i+j+1)
			}
			nodes = append(nodes, at+r.nodes)
			if r.differs != "" {
				differs = append(differs, at+r.differs)
			}
			if r.holds != "" {
				holds = append(holds, at+r.holds)
			}
		}
		var pl []string
		for _, k := range words.SortedKeys(pc) {
			pl = append(pl, fmt.Sprintf("%s %d", k, pc[k]))
		}
		wave := fmt.Sprint(i + 1)
		if len(group) > 1 {
			wave = fmt.Sprintf("%d–%d", i+1, i+len(group))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", wave, strings.Join(nodes, "; "), orDash(strings.Join(pl, ", ")),
			cell(orDash(strings.Join(differs, "; "))), cell(orDash(strings.Join(holds, "; "))))
	}
	if per > 1 {
		fmt.Fprintf(b, "\nEach row holds %d waves, one after another, each named by its number (one row per wave: %s).\n", per, fullFlag(opts))
	}
	b.WriteString("\n")
}

// nodePools reads the pool of each node from the plan's cordon and uncordon steps.
func nodePools(steps []plan.Step) map[string]string {
	out := map[string]string{}
	var visit func(s *plan.Step)
	visit = func(s *plan.Step) {
		for _, r := range []*plan.NodeRef{s.Cordon, s.Uncordon} {
			if r != nil && r.Pool != "" {
				out[r.Node] = r.Pool
			}
		}
		if s.Rollback != nil {
			visit(s.Rollback)
		}
	}
	for i := range steps {
		visit(&steps[i])
	}
	return out
}

func compactCodes(cs []plan.Code) []plan.Code {
	slices.Sort(cs)
	var out []plan.Code
	for i, c := range cs {
		if i == 0 || c != cs[i-1] {
			out = append(out, c)
		}
	}
	return out
}

// glueText says in a line what a step between waves does.
func glueText(s *plan.Step) string {
	if s.Approval != nil {
		return fmt.Sprintf("approval `%s`: %s", s.ID, s.Approval.Message)
	}
	return fmt.Sprintf("`%s`: %s", s.ID, s.Description)
}

// grouped collects texts with the nodes they hold for, in the order first seen.
type grouped struct {
	order []string
	nodes map[string][]string
}

func newGrouped() *grouped { return &grouped{nodes: map[string][]string{}} }

func (g *grouped) add(text, node string) {
	if _, ok := g.nodes[text]; !ok {
		g.order = append(g.order, text)
		g.nodes[text] = nil
	}
	if node != "" {
		g.nodes[text] = append(g.nodes[text], node)
	}
}

// text joins the texts, each with its nodes ("all" when they are every one of the wave's).
func (g *grouped) text(of int) string {
	var out []string
	sep := "; "
	if of == 0 {
		sep = ", "
	}
	for _, t := range g.order {
		switch ns := g.nodes[t]; {
		case len(ns) == 0:
			out = append(out, t)
		case len(ns) == of && of > 1:
			out = append(out, t+" (all)")
		default:
			out = append(out, t+" ("+strings.Join(ns, ", ")+")")
		}
	}
	return strings.Join(out, sep)
}

// holds collects what may hold a wave's nodes, "<object>: <what it does>", grouped by what it does,
// each object with the nodes it is on.
type holds struct {
	order    []string
	subjects map[string]*grouped
}

func newHolds() *holds { return &holds{subjects: map[string]*grouped{}} }

func (h *holds) add(text, node string) {
	subject, what, ok := strings.Cut(text, ": ")
	if !ok {
		subject, what = "", text
	}
	g, seen := h.subjects[what]
	if !seen {
		g = newGrouped()
		h.subjects[what] = g
		h.order = append(h.order, what)
	}
	g.add(subject, node)
}

// text writes "what: object (node), object (node, node); object: what (node); ...".
func (h *holds) text() string {
	var out []string
	for _, what := range h.order {
		g := h.subjects[what]
		if len(g.order) == 1 && g.order[0] == "" {
			if ns := g.nodes[""]; len(ns) > 0 {
				what += " (" + strings.Join(ns, ", ") + ")"
			}
			out = append(out, what)
			continue
		}
		if len(g.order) == 1 {
			out = append(out, g.order[0]+": "+what+" ("+strings.Join(g.nodes[g.order[0]], ", ")+")")
			continue
		}
		out = append(out, what+": "+g.text(0))
	}
	return strings.Join(out, "; ")
}

// deviations says how a node's steps (with the placeholder for its node) differ from the template:
// the variant it takes of a step, and what sets it apart from that variant.
func deviations(sl []slot, node string, got []plan.Step) []string {
	byID := map[string]*plan.Step{}
	for i := range got {
		byID[got[i].ID] = &got[i]
	}
	inTmpl := map[string]bool{}
	var out []string
	for _, x := range sl {
		inTmpl[x.pattern] = true
		name := shortName(x.pattern)
		g, ok := byID[x.pattern]
		if !ok {
			out = append(out, fmt.Sprintf("no `%s` step", name))
			continue
		}
		v := x.of[node]
		base := &x.variants[0].rep
		if v < x.shown {
			base = &x.variants[v].rep
			if v > 0 {
				out = append(out, fmt.Sprintf("`%s` %s", name, x.variants[v].label))
			}
		}
		for _, d := range stepDiff(base, g) {
			out = append(out, fmt.Sprintf("`%s`: %s", name, d))
		}
	}
	for i := range got {
		if !inTmpl[got[i].ID] {
			out = append(out, fmt.Sprintf("also `%s`: %s", shortName(got[i].ID), got[i].Description))
		}
	}
	return out
}

// shortName is the part of a template step's ID after the node ("drain"), or the part before it
// when the node comes last.
func shortName(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		if s == nodename.Node {
			if i+1 < len(segs) {
				return strings.Join(segs[i+1:], "/")
			}
			if i > 0 {
				return segs[i-1]
			}
		}
	}
	return id
}

// stepDiff lists what a reviewer sees differ between two steps of one pattern.
func stepDiff(t, g *plan.Step) []string {
	if stepKey(*t) == stepKey(*g) {
		return nil
	}
	var out []string
	if g.Description != t.Description {
		out = append(out, g.Description)
	}
	if g.Reason != t.Reason {
		out = append(out, "why: "+orDash(g.Reason))
	}
	if g.Risk != t.Risk {
		out = append(out, "risk "+string(g.Risk))
	}
	if g.Blocked != "" && g.Blocked != t.Blocked {
		out = append(out, "**blocked**: "+g.Blocked)
	}
	for _, n := range missing(g.Notes, t.Notes) {
		out = append(out, "note: "+n)
	}
	for _, n := range missing(t.Notes, g.Notes) {
		out = append(out, "without the note "+fmt.Sprintf("%q", n))
	}
	for _, c := range missing(checkTexts(g.Postconditions), checkTexts(t.Postconditions)) {
		out = append(out, "verifies also: "+c)
	}
	for _, c := range missing(checkTexts(t.Postconditions), checkTexts(g.Postconditions)) {
		out = append(out, "does not verify: "+c)
	}
	out = append(out, paramDiffs(t.Postconditions, g.Postconditions)...)
	if len(out) > 0 {
		return out
	}
	if gc, tc := plan.Commands(g), plan.Commands(t); strings.Join(gc, "\n") != strings.Join(tc, "\n") {
		return []string{"runs `" + strings.Join(gc, "; ") + "`"}
	}
	return []string{"its payload differs (Options{Full: true} or the YAML shows it)"}
}

// paramDiffs says, for the checks both lists describe alike, which params differ: "checks
// workloads 12 (a, b, c and 9 more)".
func paramDiffs(t, g []plan.Check) []string {
	byText := map[string]plan.Check{}
	for _, c := range t {
		byText[c.Description] = c
	}
	var out []string
	for _, c := range g {
		tc, ok := byText[c.Description]
		if !ok {
			continue
		}
		var ps []string
		for _, k := range words.SortedKeys(c.Params) {
			if v := c.Params[k]; v != tc.Params[k] {
				items := strings.Split(v, ",")
				v = strings.Join(items, ", ")
				if len(items) > 3 {
					v = fmt.Sprintf("%d (%s)", len(items), plan.ListSome(items, 3))
				}
				ps = append(ps, k+" "+v)
			}
		}
		if len(ps) > 0 {
			out = append(out, "checks "+strings.Join(ps, ", "))
		}
	}
	return out
}

func checkTexts(cs []plan.Check) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Description)
	}
	return out
}

// missing returns the items of a that b lacks, sorted as in a.
func missing(a, b []string) []string {
	has := map[string]bool{}
	for _, x := range b {
		has[x] = true
	}
	var out []string
	for _, x := range a {
		if !has[x] {
			out = append(out, x)
		}
	}
	return out
}
