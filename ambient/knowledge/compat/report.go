package compat

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

// Render writes the verdict as Markdown: one row per component, nodes grouped by pool with
// every node that is not ok listed by name, then the findings.
func Render(w io.Writer, c *Report) error {
	var b strings.Builder
	target := "the running versions"
	if !c.To.IsZero() {
		target = c.To.String()
	}
	verdict := "**compatible**"
	if !c.OK() {
		verdict = fmt.Sprintf("**not compatible** (%d finding(s) stop it)", len(plan.Stopping(c.Findings)))
	}
	fmt.Fprintf(&b, "# Compatibility with %s: %s\n\n", target, verdict)
	b.WriteString("| component | version | status | codes |\n|---|---|---|---|\n")
	for _, v := range c.Components {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", v.Component, v.Current, v.Status, codeList(v.Codes))
	}
	type pool struct{ ok, warn, blocked int }
	pools := map[string]*pool{}
	var bad []NodeVerdict
	for _, n := range c.Nodes {
		p := pools[n.Pool]
		if p == nil {
			p = &pool{}
			pools[n.Pool] = p
		}
		switch n.Status {
		case StatusOK:
			p.ok++
		case StatusWarning:
			p.warn++
			bad = append(bad, n)
		default:
			p.blocked++
			bad = append(bad, n)
		}
	}
	names := make([]string, 0, len(pools))
	for n := range pools {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "\n## Nodes (%d)\n\n| pool | ok | warning | blocked |\n|---|---|---|---|\n", len(c.Nodes))
	for _, n := range names {
		p := pools[n]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", steps.OrDefault(n, "(none)"), p.ok, p.warn, p.blocked)
	}
	for _, n := range bad {
		fmt.Fprintf(&b, "- %s (%s): %s, cni %s, ztunnel %s, %d ambient workload(s): %s\n", n.Node, steps.OrDefault(n.Pool, "-"), n.Status, n.CNI, n.Ztunnel, n.AmbientWorkloads, codeList(n.Codes))
	}
	b.WriteString("\n")
	runbook.RenderFindings(&b, c.Findings)
	_, err := io.WriteString(w, b.String())
	return err
}

func codeList(cs []plan.Code) string {
	if len(cs) == 0 {
		return "-"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = "`" + string(c) + "`"
	}
	return strings.Join(parts, ", ")
}
