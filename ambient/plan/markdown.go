package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// RenderMarkdown writes the plan as a runbook: the findings, then every step with what it does, why,
// the helm/kubectl commands a person would type, how it is verified and how it is undone.
func RenderMarkdown(w io.Writer, p *Plan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", p.Metadata.Name)
	fmt.Fprintf(&b, "- operation: `%s`\n", p.Metadata.Operation)
	if !p.Metadata.From.IsZero() || !p.Metadata.To.IsZero() {
		fmt.Fprintf(&b, "- versions: %s → %s\n", p.Metadata.From, p.Metadata.To)
	}
	fmt.Fprintf(&b, "- snapshot fingerprint: `%s`\n", p.Metadata.Fingerprint)
	if len(p.Metadata.Options) > 0 {
		keys := sortedKeys(p.Metadata.Options)
		var opts []string
		for _, k := range keys {
			opts = append(opts, fmt.Sprintf("%s=%s", k, p.Metadata.Options[k]))
		}
		fmt.Fprintf(&b, "- options: `%s`\n", strings.Join(opts, " "))
	}
	if p.Runnable() {
		b.WriteString("- status: **ready to apply** once reviewed\n")
	} else {
		b.WriteString("- status: **not runnable**: see the stopping findings and blocked steps below\n")
	}
	b.WriteString("\n")
	RenderFindings(&b, p.Findings)
	if len(p.Steps) > 0 {
		fmt.Fprintf(&b, "## Steps (%d)\n\n", len(p.Steps))
	}
	for i := range p.Steps {
		renderStep(&b, i+1, &p.Steps[i])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderFindings writes findings as a Markdown section; nothing when there are none.
func RenderFindings(b *strings.Builder, fs []Finding) {
	if len(fs) == 0 {
		b.WriteString("## Findings\n\nNone.\n\n")
		return
	}
	b.WriteString("## Findings\n\n| severity | code | object | finding | remedy |\n|---|---|---|---|---|\n")
	for _, f := range fs {
		sev := string(f.Severity)
		if f.Waived {
			sev += " (waived)"
		}
		fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s |\n", sev, f.Code, cell(f.Object.String()), cell(f.Message), cell(f.Remedy))
	}
	b.WriteString("\n")
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func renderStep(b *strings.Builder, n int, s *Step) {
	fmt.Fprintf(b, "### %d. `%s`\n\n", n, s.ID)
	fmt.Fprintf(b, "**What:** %s  \n", s.Description)
	if s.Reason != "" {
		fmt.Fprintf(b, "**Why:** %s  \n", s.Reason)
	}
	fmt.Fprintf(b, "**Action:** %s · **risk:** %s", s.Kind(), s.Risk)
	if len(s.DependsOn) > 0 {
		fmt.Fprintf(b, " · **after:** %s", "`"+strings.Join(s.DependsOn, "`, `")+"`")
	}
	b.WriteString("\n\n")
	if s.Blocked != "" {
		fmt.Fprintf(b, "> **Blocked:** %s\n\n", s.Blocked)
	}
	if len(s.Preconditions) > 0 {
		b.WriteString("Before: \n")
		for _, c := range s.Preconditions {
			fmt.Fprintf(b, "- %s\n", c.Description)
		}
		b.WriteString("\n")
	}
	var checks []Check
	if s.Verify != nil {
		checks = s.Verify.Checks
	}
	if s.WaitFor != nil {
		checks = []Check{s.WaitFor.Check}
		if s.WaitFor.TimeoutSeconds > 0 {
			fmt.Fprintf(b, "Waits up to %ds for:\n", s.WaitFor.TimeoutSeconds)
		}
	}
	for _, c := range checks {
		fmt.Fprintf(b, "- %s\n", c.Description)
	}
	if len(checks) > 0 {
		b.WriteString("\n")
	}
	if cmds := Commands(s); len(cmds) > 0 {
		b.WriteString("```sh\n")
		for _, c := range cmds {
			b.WriteString(c)
			b.WriteString("\n")
		}
		b.WriteString("```\n\n")
	}
	if s.Drain != nil && len(s.Drain.MayHold) > 0 {
		b.WriteString("May hold the drain:\n")
		for _, h := range s.Drain.MayHold {
			fmt.Fprintf(b, "- %s\n", h)
		}
		b.WriteString("\n")
	}
	for _, note := range s.Notes {
		fmt.Fprintf(b, "- note: %s\n", note)
	}
	if len(s.Notes) > 0 {
		b.WriteString("\n")
	}
	if len(s.Postconditions) > 0 {
		b.WriteString("Verify:\n")
		for _, c := range s.Postconditions {
			fmt.Fprintf(b, "- %s", c.Description)
			if cmd := CheckCommand(c); cmd != "" {
				fmt.Fprintf(b, " (`%s`)", cmd)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if s.Rollback != nil {
		fmt.Fprintf(b, "Undo: %s\n", s.Rollback.Description)
		if cmds := Commands(s.Rollback); len(cmds) > 0 {
			b.WriteString("```sh\n")
			for _, c := range cmds {
				b.WriteString(c)
				b.WriteString("\n")
			}
			b.WriteString("```\n")
		}
		b.WriteString("\n")
	} else if mutates(s) {
		b.WriteString("Undo: no automatic rollback for this step.\n\n")
	}
}

func mutates(s *Step) bool { return s.Kind().ChangesMesh() }

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
