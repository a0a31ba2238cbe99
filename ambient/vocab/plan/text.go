package plan

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/words"
)

// Words the plan's status, its findings and its kinds' commands share with the runbook.

var (
	seconds   = words.Seconds
	plural    = words.Plural
	orUnknown = words.OrUnknown
)

func sortedKeys[V any](m map[string]V) []string { return words.SortedKeys(m) }

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

// ListSome joins the first n items with commas and says how many more there are ("a, b and 3
// more"), for messages that name objects.
func ListSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
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

// OfCodes names findings by their codes, as a plan's status and the examples say it: "of code X",
// "of codes X, Y" (waivable findings of code X stop it).
func OfCodes(codes []string) string {
	if len(codes) == 1 {
		return "of code " + codes[0]
	}
	return "of codes " + strings.Join(codes, ", ")
}
