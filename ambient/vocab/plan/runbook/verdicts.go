package runbook

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// maxVerdictNames is how many objects a verdict row names; more are counted.
const maxVerdictNames = 3

// renderVerdicts writes the plan's verdicts as one table: objects of one kind with the same outcome
// and reason share a row (so a mesh of thousands of objects gives a table of its kinds), changes
// first, then what was not assessed, then what is unaffected.
func renderVerdicts(b *strings.Builder, p *plan.Plan) {
	if len(p.Verdicts) == 0 {
		return
	}
	type row struct {
		v     plan.Verdict
		names []string
		codes []string
	}
	var rows []*row
	index := map[string]*row{}
	for _, outcome := range []plan.Outcome{plan.Changes, plan.NotAssessed, plan.Unaffected} {
		for _, v := range p.Verdicts {
			if v.Outcome != outcome {
				continue
			}
			key := strings.Join([]string{string(v.Outcome), v.Object.Group, v.Object.Kind, v.Reason}, "\x00")
			r := index[key]
			if r == nil {
				r = &row{v: v}
				index[key] = r
				rows = append(rows, r)
			}
			name := v.Object.Name
			switch {
			case name == "":
				name = "all of them"
			case v.Object.Namespace != "":
				name = v.Object.Namespace + "/" + name
			}
			r.names = append(r.names, name)
			for _, c := range v.Codes {
				if !containsString(r.codes, string(c)) {
					r.codes = append(r.codes, string(c))
				}
			}
		}
	}
	counts := map[plan.Outcome]int{}
	for _, v := range p.Verdicts {
		counts[v.Outcome]++
	}
	fmt.Fprintf(b, "## Configuration objects (%d: %d change, %d not assessed, %d unaffected)\n\n", len(p.Verdicts),
		counts[plan.Changes], counts[plan.NotAssessed], counts[plan.Unaffected])
	b.WriteString("Every object of Istio's API groups and the Gateway API that the operation concerns, with its verdict.\n\n")
	b.WriteString("| verdict | kind | objects | why | findings |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		names := r.names
		more := ""
		if len(names) > maxVerdictNames {
			more = fmt.Sprintf(" and %d more", len(names)-maxVerdictNames)
			names = names[:maxVerdictNames]
		}
		codes := ""
		if len(r.codes) > 0 {
			codes = "`" + strings.Join(r.codes, "`, `") + "`"
		}
		fmt.Fprintf(b, "| %s | %s.%s | %s%s | %s | %s |\n", r.v.Outcome, r.v.Object.Kind, r.v.Object.Group, cell(strings.Join(names, ", ")), more, cell(r.v.Reason), codes)
	}
	b.WriteString("\n")
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
