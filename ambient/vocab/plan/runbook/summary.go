package runbook

import (
	"fmt"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/words"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/estimate"
)

// The summary at the top of the runbook, after kubeadm's and clusterctl's upgrade plans: what
// changes, the findings, the phases and their time, what needs a person.

func renderSummary(b *strings.Builder, p *plan.Plan, sets []waveSet) {
	b.WriteString("## Summary\n\n### What changes\n\n")
	renderComponents(b, p, sets)
	b.WriteString("### Findings\n\n")
	inWaves := map[string]bool{}
	for _, ws := range sets {
		for _, w := range ws.waves {
			for _, bl := range w.blocks {
				inWaves[bl.Node] = true
			}
		}
	}
	renderFindingsTable(b, p.Findings, inWaves)
	if len(p.Steps) > 0 {
		b.WriteString("### Phases\n\n")
		renderPhases(b, p, sets)
	}
	b.WriteString("### What needs a person\n\n")
	renderNeeds(b, p)
}

// ---- what changes ----

type component struct {
	name, current, target string
	how                   []string
	risk                  plan.Risk
	last                  int
}

func renderComponents(b *strings.Builder, p *plan.Plan, sets []waveSet) {
	var order []string
	byKey := map[string]*component{}
	get := func(key, name, current string) *component {
		c, ok := byKey[key]
		if !ok {
			c = &component{name: name, current: current, last: -1}
			byKey[key] = c
			order = append(order, key)
		}
		return c
	}
	next := 0
	for i := range p.Steps {
		s := &p.Steps[i]
		if next < len(sets) && sets[next].start == i {
			// A wave set is a row of its own: what its nodes go through.
			ws := sets[next]
			c := get(fmt.Sprintf("nodes %d", i), fmt.Sprintf("%s (`%s`)", words.Plural(ws.nodeCount(), "node", "nodes"), familyName(ws.name)), "–")
			c.target = "–"
			c.how = []string{strings.Join(slotNames(p.Steps, ws), " → ")}
			if n := len(ws.waves); n > 1 {
				c.how[0] += fmt.Sprintf(", in %d waves", n)
			}
			for k := ws.start; k < ws.end; k++ {
				c.risk = maxRisk(c.risk, p.Steps[k].Risk)
			}
			next++
		}
		spec, ok := kindTexts[s.Kind()]
		if !ok {
			continue
		}
		row, ok := spec.summary(s)
		if !ok {
			continue
		}
		c := get(row.key, row.name, row.current)
		c.target = row.target
		if n := len(c.how); n == 0 || c.how[n-1] != row.how {
			c.how = append(c.how, row.how)
		}
		c.risk = maxRisk(c.risk, s.Risk)
		c.last = i
	}
	if len(order) == 0 {
		b.WriteString("No Helm release or revision tag changes; the steps below say what does change.\n\n")
		return
	}
	b.WriteString("| component | current | target | how | risk |\n|---|---|---|---|---|\n")
	for _, k := range order {
		c := byKey[k]
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", cell(c.name), c.current, c.target, cell(strings.Join(c.how, " → ")), c.risk)
	}
	b.WriteString("\n")
}

// summaryRow is what one step does to a component, for the runbook's "What changes" table: the steps
// of one key make one row, named as the first of them says, with the target the last one leaves.
type summaryRow struct {
	// key tells components apart ("helm istio-system/istiod", "tag prod").
	key string
	// name is the component as the table names it; current is its state before the plan ("–" for
	// none, "?" when unknown).
	name, current string
	// target is what the step leaves the component at; how is what it does ("upgrade", "move").
	target, how string
}

// helmRow is the summary row of a step on a Helm release.
func helmRow(ns, release, chart, current, target, how string) summaryRow {
	return summaryRow{key: "helm " + ns + "/" + release, name: helmName(ns, release, chart), current: current, target: target, how: how}
}

func helmName(ns, release, chart string) string {
	if chart == "" {
		return fmt.Sprintf("Helm release %s/%s", ns, release)
	}
	return fmt.Sprintf("Helm release %s/%s (chart %s)", ns, release, chart)
}

// rank orders risks: none or unknown, low, medium, high.
func rank(r plan.Risk) int {
	switch r {
	case plan.RiskLow:
		return 1
	case plan.RiskMedium:
		return 2
	case plan.RiskHigh:
		return 3
	}
	return 0
}

func maxRisk(a, b plan.Risk) plan.Risk {
	if rank(b) > rank(a) || a == "" {
		return b
	}
	return a
}

// ---- phases and their time ----

// phaseOf names the phase of a step: the first segment of its ID, after the version of a chained
// hop ("1.30.8/ztunnel/...").
func phaseOf(id string) string {
	segs := strings.SplitN(id, "/", 3)
	if len(segs) > 1 {
		if _, err := mesh.ParseVersion(segs[0]); err == nil {
			return segs[0] + " " + segs[1]
		}
	}
	return segs[0]
}

// spanCells formats a span as the Phases table's "at least", "expected" and "at most" cells.
func spanCells(sp estimate.Span) (least, expected, most string) {
	cell := func(d time.Duration) string {
		if d <= 0 {
			return "–"
		}
		return words.Seconds(int64((d + time.Second/2) / time.Second))
	}
	least, expected, most = cell(sp.Least), cell(sp.Expected), cell(sp.Most)
	if sp.Open {
		if most == "–" {
			most = "0s"
		}
		most += " +"
	}
	return least, expected, most
}

func renderPhases(b *strings.Builder, p *plan.Plan, sets []waveSet) {
	est := estimate.Time(p, estimate.Options{})
	b.WriteString("| # | phase | steps | nodes | waits for | at least | expected | at most |\n|---|---|---|---|---|---|---|---|\n")
	var total estimate.Waits
	nodes := 0
	n := 0
	for i := 0; i < len(p.Steps); {
		name := phaseOf(p.Steps[i].ID)
		j := i
		var t estimate.Waits
		var sp estimate.Span
		for j < len(p.Steps) && phaseOf(p.Steps[j].ID) == name {
			t.Add(&p.Steps[j])
			sp.Add(est.Steps[j])
			j++
		}
		for _, w := range est.Waves {
			if w.Start >= i && w.Start < j {
				sp.Add(w.Span)
			}
		}
		var waves []string
		for _, ws := range sets {
			if ws.start >= i && ws.end <= j {
				waves = append(waves, ws.summary())
				nodes += ws.nodeCount()
			}
		}
		n++
		least, expected, most := spanCells(sp)
		fmt.Fprintf(b, "| %d | %s | %d | %s | %s | %s | %s | %s |\n", n, name, j-i, orDash(strings.Join(waves, "; ")), t.List(), least, expected, most)
		total.Merge(t)
		i = j
	}
	nodeCell := "–"
	if nodes > 0 {
		nodeCell = fmt.Sprintf("%d node passes", nodes)
	}
	least, expected, most := spanCells(est.Total)
	fmt.Fprintf(b, "| | **all** | %d | %s | | %s | %s | %s |\n\n", len(p.Steps), nodeCell, least, expected, most)
	o := estimate.Options{}.WithDefaults()
	if nodes > 0 {
		b.WriteString("The nodes of a wave go through their steps at the same time, so a wave takes as long as its slowest node. ")
	}
	fmt.Fprintf(b, "*At least* counts only what nothing shortens: the health gates letting the mesh settle and new ztunnels turning ready (%s), every evicted pod gone at once; "+
		"*expected* has every evicted pod take its whole grace period (as the plan's snapshot showed them), PodDisruptionBudgets letting them go as fast as they allow (a replacement ready in %s), "+
		"each Helm change take %s with its rollout, each batch of a restart %s and new nodes %s; "+
		"*at most* runs every drain and wait to its timeout (+: some leave it to the executor's default).",
		o.ZtunnelReady, o.ReplacementReady, o.HelmChange, o.Restart, o.NodeProvisioning)
	if total.Approvals > 0 {
		b.WriteString(" Not counted: " + words.Plural(total.Approvals, "approval", "approvals") + ".")
	}
	b.WriteString("\n\n")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// ---- what needs a person ----

// maxListed is how many approvals or blocked steps the summary names one by one.
const maxListed = 20

func renderNeeds(b *strings.Builder, p *plan.Plan) {
	var items []string
	var approvals, blocked []string
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Approval != nil {
			approvals = append(approvals, fmt.Sprintf("approve `%s`: %s", s.ID, s.Approval.Message))
		}
		if s.Blocked != "" {
			blocked = append(blocked, fmt.Sprintf("`%s` is blocked: %s", s.ID, s.Blocked))
		}
	}
	items = append(items, capList(approvals, "approvals")...)
	stopping := plan.Stopping(p.Findings)
	for i := 0; i < len(stopping); {
		j := i + 1
		for j < len(stopping) && stopping[j].Code == stopping[i].Code {
			j++
		}
		f := stopping[i]
		var objs []string
		for _, g := range stopping[i:j] {
			objs = append(objs, g.Object.String())
		}
		what := "must be fixed, then re-plan"
		if f.Severity == plan.Waivable {
			what = "waive the code or fix it"
		}
		items = append(items, fmt.Sprintf("%s finding `%s` on %s: %s (%s)", f.Severity, f.Code, plan.ListSome(compactStrings(objs), 5), what, f.Remedy))
		i = j
	}
	items = append(items, capList(blocked, "blocked steps")...)
	if len(items) == 0 {
		b.WriteString("Nothing but this review: no approval step, no finding to waive or fix, no blocked step.\n\n")
		return
	}
	writeItems(b, items)
	b.WriteString("\n")
}

func capList(items []string, what string) []string {
	if len(items) <= maxListed {
		return items
	}
	return append(items[:maxListed:maxListed], fmt.Sprintf("and %d more %s (Options{Full: true} lists every step)", len(items)-maxListed, what))
}

// compactStrings drops repeats that follow each other.
func compactStrings(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
