package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

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
	if len(s.Verification) > 0 {
		b.WriteString("Verify:\n")
		for _, c := range s.Verification {
			fmt.Fprintf(b, "- %s", c.Description)
			if cmd := checkCommand(c); cmd != "" {
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

func mutates(s *Step) bool {
	switch s.Kind() {
	case KindVerify, KindWaitFor, KindApproval, KindHealthGate, KindBackup:
		return false
	}
	return true
}

// Commands returns the helm and kubectl commands a person would type to do the step by hand.
func Commands(s *Step) []string {
	switch s.Kind() {
	case KindHelmInstall:
		return []string{helmCommand("install", s.HelmInstall)}
	case KindHelmUpgrade:
		return []string{helmCommand("upgrade", s.HelmUpgrade)}
	case KindHelmUninstall:
		return []string{fmt.Sprintf("helm uninstall %s -n %s", s.HelmUninstall.Release, s.HelmUninstall.Namespace)}
	case KindHelmRollback:
		r := s.HelmRollback
		return []string{fmt.Sprintf("helm rollback %s %d -n %s --wait", r.Release, r.Revision, r.Namespace)}
	case KindApplyObject:
		y, _ := yaml.Marshal(s.ApplyObject.Object)
		return []string{"kubectl apply --server-side --field-manager=ambientkit -f - <<'EOF'\n" + strings.TrimSpace(string(y)) + "\nEOF"}
	case KindDeleteObject:
		return []string{fmt.Sprintf("kubectl delete %s", kubectlTarget(s.DeleteObject.Object))}
	case KindPatchLabels:
		var args []string
		for _, k := range sortedKeys(s.PatchLabels.Set) {
			args = append(args, k+"="+s.PatchLabels.Set[k])
		}
		for _, k := range s.PatchLabels.Remove {
			args = append(args, k+"-")
		}
		return []string{fmt.Sprintf("kubectl label --overwrite %s %s", kubectlTarget(s.PatchLabels.Object), strings.Join(args, " "))}
	case KindMoveTag:
		m := s.MoveTag
		return []string{
			fmt.Sprintf("istioctl tag set %s --revision %s --overwrite -n %s", m.Tag, m.To, m.Namespace),
			fmt.Sprintf("# or, with Helm: helm template istiod istio/istiod -s templates/revision-tags-mwc.yaml -s templates/revision-tags-svc.yaml --set revisionTags=\"{%s}\" --set revision=%s -n %s | kubectl apply -f -", m.Tag, m.To, m.Namespace),
		}
	case KindCordon:
		return []string{"kubectl cordon " + s.Cordon.Node}
	case KindUncordon:
		return []string{"kubectl uncordon " + s.Uncordon.Node}
	case KindDrain:
		d := s.Drain
		c := "kubectl drain " + d.Node
		if d.IgnoreDaemonSets {
			c += " --ignore-daemonsets"
		}
		if d.DeleteEmptyDirData {
			c += " --delete-emptydir-data"
		}
		if d.TimeoutSeconds > 0 {
			c += fmt.Sprintf(" --timeout=%ds", d.TimeoutSeconds)
		}
		if d.AmbientOnly {
			return []string{"# evict only the pods ambient captures on " + d.Node + " (usually none); list them with:",
				"kubectl get pods -A --field-selector spec.nodeName=" + d.Node + " -o wide  # ambient namespaces, not istio.io/dataplane-mode=none, no sidecar"}
		}
		return []string{c}
	case KindDeletePod:
		p := s.DeletePod
		c := fmt.Sprintf("kubectl delete pod -n %s -l %s", p.Namespace, selectorString(p.Selector))
		if p.Node != "" {
			c += " --field-selector spec.nodeName=" + p.Node
		}
		return []string{c}
	case KindRestart:
		var out []string
		for _, w := range s.Restart.Workloads {
			out = append(out, fmt.Sprintf("kubectl rollout restart %s/%s -n %s", strings.ToLower(w.Kind), w.Name, w.Namespace))
		}
		return out
	case KindWaitFor:
		if c := checkCommand(s.WaitFor.Check); c != "" {
			return []string{c}
		}
	case KindVerify:
		var out []string
		for _, c := range s.Verify.Checks {
			if cmd := checkCommand(c); cmd != "" {
				out = append(out, cmd)
			}
		}
		return out
	case KindBackup:
		var out []string
		for _, o := range s.Backup.Objects {
			if o.HelmRelease != "" {
				out = append(out, fmt.Sprintf("helm get all %s -n %s > backup/helm-%s.yaml", o.HelmRelease, o.Object.Namespace, o.HelmRelease))
				continue
			}
			out = append(out, fmt.Sprintf("kubectl get %s -o yaml > backup/%s.yaml", kubectlTarget(o.Object), backupFile(o.Object)))
		}
		return out
	case KindApproval:
		return []string{"# pause: " + s.Approval.Message}
	case KindHealthGate:
		return []string{fmt.Sprintf("# health gate %q on %s: check error rate, TCP resets and latency before going on", s.HealthGate.Probe, s.HealthGate.Scope)}
	}
	return nil
}

func helmCommand(verb string, h *HelmRelease) string {
	chart := h.Chart.Path
	switch {
	case h.Chart.Repository != "":
		chart = h.Chart.Name + " --repo " + h.Chart.Repository
	case h.Chart.OCI != "":
		chart = strings.TrimSuffix(h.Chart.OCI, "/")
	}
	c := fmt.Sprintf("helm %s %s %s -n %s", verb, h.Release, chart, h.Namespace)
	if h.Chart.Version != "" && h.Chart.Path == "" {
		c += " --version " + h.Chart.Version
	}
	if h.ReuseValues {
		c += " --reuse-values"
	}
	for _, kv := range flattenValues("", h.Values) {
		c += " --set " + kv
	}
	if verb == "upgrade" {
		c += " --wait"
	}
	return c
}

// flattenValues turns nested values into sorted key=value strings as --set takes them.
func flattenValues(prefix string, v map[string]any) []string {
	var out []string
	for _, k := range sortedKeys(v) {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch x := v[k].(type) {
		case map[string]any:
			out = append(out, flattenValues(key, x)...)
		case []any:
			var parts []string
			for _, e := range x {
				parts = append(parts, fmt.Sprint(e))
			}
			out = append(out, fmt.Sprintf("%s={%s}", key, strings.Join(parts, ",")))
		case string:
			if strings.ContainsAny(x, ", ") {
				out = append(out, fmt.Sprintf("%s=%q", key, x))
			} else {
				out = append(out, key+"="+x)
			}
		default:
			out = append(out, fmt.Sprintf("%s=%v", key, x))
		}
	}
	return out
}

func checkCommand(c Check) string {
	o := c.Object
	switch c.Type {
	case CheckDeploymentReady:
		return fmt.Sprintf("kubectl rollout status deployment/%s -n %s", o.Name, o.Namespace)
	case CheckDaemonSetRolledOut:
		return fmt.Sprintf("kubectl rollout status daemonset/%s -n %s", o.Name, o.Namespace)
	case CheckTagPointsTo:
		return fmt.Sprintf("kubectl get mutatingwebhookconfiguration %s -o jsonpath='{.metadata.labels.istio\\.io/rev}'", o.Name)
	case CheckHelmReleaseVersion:
		return fmt.Sprintf("helm ls -n %s --filter '^%s$'", o.Namespace, o.Name)
	case CheckNodeSchedulable, CheckNodeDrained:
		return fmt.Sprintf("kubectl get node %s", o.Name)
	case CheckPodsRedirected:
		return "kubectl get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.annotations.ambient\\.istio\\.io/redirection}{\"\\n\"}{end}'"
	case CheckNoSandboxFailures:
		return "kubectl get events -A --field-selector reason=FailedCreatePodSandBox"
	case CheckNodeAgentReady:
		if node := c.Params["node"]; node != "" {
			return fmt.Sprintf("kubectl get pods -n %s -o wide --field-selector spec.nodeName=%s", o.Namespace, node)
		}
		return fmt.Sprintf("kubectl rollout status daemonset/%s -n %s", o.Name, o.Namespace)
	case CheckDefaultRevision:
		return "kubectl get validatingwebhookconfiguration istiod-default-validator -o jsonpath='{.metadata.labels.istio\\.io/rev}'"
	}
	return ""
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
