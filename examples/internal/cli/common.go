package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

// Common holds the flags every example has besides the source: the gate's --waive and --today,
// and how the plan is printed (-o, --full).
type Common struct {
	// Waive, Today and Output are --waive, --today and -o; Full is --full.
	Waive, Today, Output string
	Full                 bool
	// Resume is the command that continues a failed run of the plan, for the runbook's header
	// (Apply.ResumeCommand); empty for the examples that only plan.
	Resume string

	cmd *Command
}

// Register adds --waive, --today, -o and --full, and their checks.
func (f *Common) Register(c *Command) {
	f.cmd = c
	str := func(p *string, s Spec, def string) { c.add(s); c.fs.StringVar(p, s.Name, def, s.Usage) }
	str(&f.Waive, Spec{Name: "waive", Arg: "CODE,...", Usage: "waivable finding codes to accept (--list-codes lists them)", Example: "--waive PDB_BLOCKS_DRAIN,TARGET_END_OF_LIFE"}, "")
	str(&f.Today, Spec{Name: "today", Arg: "YYYY-MM-DD", Usage: "the date end of life is judged at", Example: "--today 2027-01-15"}, time.Now().UTC().Format(time.DateOnly))
	str(&f.Output, Spec{Name: "o", Arg: "markdown|yaml|json", Usage: "how the plan is printed: a Markdown runbook with the helm and kubectl commands, or the versioned plan document", Example: "-o yaml > plan.yaml"}, "markdown")
	c.add(Spec{Name: "full", Usage: "-o markdown: every step on its own with every command, also for waves of many nodes (the default shows the steps of 8 or more nodes once, as a template)", Example: "--full"})
	c.fs.BoolVar(&f.Full, "full", false, "")
	c.check(f.Check)
}

// Check refuses an -o other than markdown, yaml and json, a --today that is not a date and a --waive
// that names an unknown code.
func (f *Common) Check() error {
	var errs []error
	switch f.Output {
	case "markdown", "yaml", "json":
	default:
		errs = append(errs, usage("-o %q: want markdown, yaml or json", f.Output))
	}
	if _, err := time.Parse(time.DateOnly, f.Today); err != nil {
		errs = append(errs, usage("--today %q: want YYYY-MM-DD", f.Today))
	}
	_, err := Waivers(f.Waive)
	return errors.Join(append(errs, err)...)
}

// Waivers returns the codes of --waive (checked by Parse).
func (f *Common) Waivers() []plan.Code {
	codes, _ := Waivers(f.Waive)
	return codes
}

// Date returns --today (checked by Parse).
func (f *Common) Date() time.Time {
	t, _ := time.Parse(time.DateOnly, f.Today)
	return t
}

// Print writes the plan as -o asks, opening with where the mesh was read from (the plan's
// Metadata.Source): the Markdown runbook after a source and status line and the given preamble, or
// the plan document (YAML after a comment naming the source; JSON holds it in metadata.source).
func (f *Common) Print(w io.Writer, p *plan.Plan, preamble func(io.Writer) error) error {
	switch f.Output {
	case "yaml", "json":
		enc := plan.EncodeYAML
		if f.Output == "json" {
			enc = plan.EncodeJSON
		} else {
			fmt.Fprintf(w, "# source: %s\n", plan.SourceText(p.Metadata.Source))
		}
		b, err := enc(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	fmt.Fprintf(w, "Source: %s\n", plan.SourceText(p.Metadata.Source))
	if why := plan.NotRunnable(p); len(why) > 0 {
		fmt.Fprintf(w, "Status: not runnable: %s (the plan below says more)\n", strings.Join(why, "; "))
	} else {
		fmt.Fprintln(w, "Status: runnable once reviewed")
	}
	fmt.Fprintln(w)
	if preamble != nil {
		if err := preamble(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return runbook.RenderWith(w, p, f.Markdown())
}

// Markdown returns the runbook options of this command: its --full, its flag names for the
// options findings' remedies name, what its probes look at, and the command that resumes a run.
func (f *Common) Markdown() runbook.Options {
	return runbook.Options{Full: f.Full, FullFlag: "--full", Probes: ProbeDocs(), Resume: f.Resume, OptionName: f.cmd.OptionName}
}

// flagsOf are the flags the examples offer for the options findings' remedies name (a
// plan.RemedyOption's Option), as their remedies should read.
var flagsOf = map[string]func(value string) (flag, text string){
	"ReadinessOptions.Waypoint":  func(string) (string, string) { return "waypoint", "--waypoint NAME" },
	"BlueGreen.LocalStorage":     func(v string) (string, string) { return "local-storage", "--local-storage " + v },
	"BlueGreen.Jobs":             func(v string) (string, string) { return "jobs", "--jobs " + v },
	"BlueGreen.DrainTimeout":     func(v string) (string, string) { return "drain-timeout", "--drain-timeout " + v },
	"NodeByNode.DrainTimeout":    func(v string) (string, string) { return "drain-timeout", "--drain-timeout " + v },
	"releases.LoadFile":          func(string) (string, string) { return "chart-index", "--chart-index FILE" },
	"releases.LoadHelmIndexFile": func(string) (string, string) { return "chart-index", "--chart-index FILE" },
	"Today":                      func(string) (string, string) { return "today", "--today YYYY-MM-DD" },
	"UpgradeOptions.Strategy":    func(v string) (string, string) { return "strategy", "--strategy " + v },
	// Not flags of the command: another example, or the file of the embedded data ("" applies to all).
	"tags.MoveTag": func(v string) (string, string) {
		return "", "{examples}move-tag{source} --tag " + v + " --revision REVISION"
	},
	"advisories.Default().Advisory(id)": func(string) (string, string) { return "", "ambient/knowledge/advisories/advisories.yaml, under its id" },
}

// OptionName names a caller's option a finding's remedy names as this command's flag ("--jobs
// evict"), or "" when the command has no flag for it (the remedy then names the library's option).
func (c *Command) OptionName(o plan.RemedyOption) string {
	f, ok := flagsOf[o.Option]
	if !ok {
		return ""
	}
	name, text := f(o.Value)
	if name != "" && !c.Has(name) {
		return ""
	}
	source := strings.TrimPrefix(c.Line(c.Only(sourceFlags...)), c.Invocation)
	return strings.NewReplacer("{examples}", strings.TrimSuffix(c.Invocation, c.Name), "{source}", source).Replace(text)
}

// sourceFlags are the flags that say where the mesh is read from, which a command naming another
// example passes on.
var sourceFlags = []string{"kubeconfig", "context", "from-dir", "demo"}

// FlagRemedies rewrites the remedies of findings the command prints outside a runbook (a
// readiness or compatibility report) to name its flags.
func (c *Command) FlagRemedies(fs []plan.Finding) {
	for i := range fs {
		fs[i].Remedy = fs[i].RemedyWith(c.OptionName)
	}
}

// ProbeDocs says, for the runbook, what the examples' "mesh-health" probe looks at: the compatibility
// gate of the live mesh (execute.MeshProbe with ambient.Gates()), then the operator's answer; the
// commands show its main signals by hand.
func ProbeDocs() map[string]runbook.ProbeDoc {
	return map[string]runbook.ProbeDoc{"mesh-health": {
		What: "it observes the mesh again and runs the compatibility gate, which says unhealthy at the first blocking finding " +
			"(threshold: none), such as an istiod revision with unready replicas or a node whose ztunnel or istio-cni pod is not ready; " +
			"then, unless --yes, it asks you to check your own signals (error rate, TCP resets, latency) and answer. By hand:",
		Commands: []string{
			"kubectl get deployments -A -l app=istiod -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}|{.spec.replicas}|{.status.readyReplicas}{\"\\n\"}{end}' | " +
				"awk -F'|' '$2 != $3 {print \"istiod not ready: \" $1 \" (\" $3 \" of \" $2 \" replicas)\"; bad=1} END {exit bad}'",
			"kubectl get daemonsets -A -l 'app.kubernetes.io/name in (ztunnel,istio-cni)' -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}|{.status.desiredNumberScheduled}|{.status.numberReady}{\"\\n\"}{end}' | " +
				"awk -F'|' '$2 != $3 {print \"not ready on every node: \" $1 \" (\" $3 \" of \" $2 \")\"; bad=1} END {exit bad}'",
		},
	}}
}

// Verdict says whether the plan can run: nil when it can; an error wrapping ErrBlocked when blocking
// findings or blocked steps stop it; an error wrapping ErrNeedsWaiver, naming the codes and the
// command that waives them, when only waivable findings do. Other planning errors pass through.
func Verdict(p *plan.Plan, planErr error, c *Command) error {
	if planErr != nil && !errors.Is(planErr, ambient.ErrBlocked) {
		return planErr
	}
	if p == nil {
		return planErr
	}
	if err := refuseBlockingWaivers(p, c); err != nil {
		return err
	}
	var blocking, waivable []string
	for _, f := range plan.Stopping(p.Findings) {
		if f.Severity == plan.Blocking {
			blocking = appendOnce(blocking, string(f.Code))
		} else {
			waivable = appendOnce(waivable, string(f.Code))
		}
	}
	var blocked []string
	for _, s := range p.Steps {
		if s.Blocked != "" {
			why := s.Blocked
			if r := []rune(why); len(r) > 200 { // the plan printed above says it all
				why = string(r[:200]) + "…"
			}
			blocked = append(blocked, fmt.Sprintf("%s (%s)", s.ID, why))
		}
	}
	var why []string
	if len(blocking) > 0 {
		why = append(why, "blocking findings "+plan.OfCodes(blocking))
	}
	if len(blocked) > 0 {
		why = append(why, "blocked steps "+strings.Join(blocked, "; "))
	}
	if len(why) > 0 {
		also := ""
		if len(waivable) > 0 {
			also = fmt.Sprintf(" (waivable findings %s also stop it)", plan.OfCodes(waivable))
		}
		return &blockedError{fmt.Sprintf("the plan is blocked: %s%s; fix the cause (each finding's remedy), then plan again: %s", strings.Join(why, "; "), also, c.Line(c.Only(keepReplan...)))}
	}
	if len(waivable) > 0 {
		codes := strings.Join(waivable, ",")
		if f := c.fs.Lookup("waive"); f != nil && f.Value.String() != "" {
			codes = f.Value.String() + "," + codes
		}
		what := "waivable findings " + plan.OfCodes(waivable) + " stop it"
		return fmt.Errorf("%w: %s; review them and their remedies, and to accept them, plan again with: %s",
			ErrNeedsWaiver, what, c.Line(append(c.Only(keepReplan...), "waive"), "--waive", codes))
	}
	return nil
}

// refuseBlockingWaivers refuses a --waive of a code the plan has blocking findings of: a blocking
// finding cannot be waived, and a waiver that seems to accept it must not pass in silence (nor be
// copied into the command that plans again). A code never raised waivable is refused as the flag is
// read (Waivers); for a code raised blocking or waivable, which case it is is known once planned.
// The error names each such finding.
func refuseBlockingWaivers(p *plan.Plan, c *Command) error {
	f := c.fs.Lookup("waive")
	if f == nil || f.Value.String() == "" {
		return nil
	}
	waived, _ := Waivers(f.Value.String())
	var bad []string
	for _, fd := range p.Findings {
		if fd.Severity == plan.Blocking && slices.Contains(waived, fd.Code) {
			bad = append(bad, fmt.Sprintf("%s on %s", fd.Code, fd.Object))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return usage("--waive: the plan's finding %s is blocking, and no waiver accepts a blocking finding: fix its cause (its remedy in the plan above) and leave it out of --waive",
		strings.Join(bad, ", finding "))
}

// keepReplan are the flags a command to plan again keeps.
var keepReplan = []string{"kubeconfig", "context", "from-dir", "demo", "namespace", "waypoint", "apply", "delete", "backup", "tag", "revision", "assume-installed", "skip-restart",
	"target", "strategy", "ztunnel", "batch-size", "drain-timeout", "green-nodepools", "relabel", "green-nodes", "jobs", "local-storage",
	"charts", "chart-index", "waive", "today", "o", "full", "plan-file", "plan-only", "dry-run", "log-format"}

func appendOnce(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}

// blockedError is a verdict of blocked: its message says why and how to plan again; it is
// ErrBlocked to errors.Is.
type blockedError struct{ msg string }

func (e *blockedError) Error() string { return e.msg }
func (e *blockedError) Unwrap() error { return ErrBlocked }
