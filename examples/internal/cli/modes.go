package cli

import (
	"strings"
)

// inapplicable is one row of the table of flags that do nothing in some source or mode: given
// there, they are refused (ExitUsage) instead of ignored, so that a run never looks as if it did
// what a flag asked.
type inapplicable struct {
	// flags are refused when mode holds; only those the command has and that were given count.
	flags []string
	// mode names the source or mode, as the error says it ("--demo or --from-dir").
	mode string
	// in reports whether the command line is in that mode.
	in func(c *Command) bool
	// why says what the flags do instead and what to type.
	why string
	// offline marks the row of the offline sources, whose --dry-run a command may run anyway
	// (Command.OfflineDryRun).
	offline bool
}

// planningFlags are the flags that shape a new plan: a run that applies, resumes or rolls back the
// saved plan reads none of them.
var planningFlags = []string{"target", "strategy", "ztunnel", "batch-size", "drain-timeout", "green-nodepools", "relabel", "green-nodes", "jobs", "local-storage",
	"charts", "chart-index", "waive", "today", "o", "full", "waypoint", "apply", "delete", "backup", "from-dir", "demo"}

// inapplicables is the one table of flags that do not apply to a source or mode. Command.Parse
// checks every command line against it.
var inapplicables = []inapplicable{
	{flags: []string{"rbac", "rbac-account", "yes", "saved", "resume", "rollback", "dry-run"}, mode: "--demo or --from-dir", offline: true,
		in: func(c *Command) bool { return c.IsSet("demo") || c.IsSet("from-dir") },
		why: "a plan of the demo mesh or of a dump is only printed, and these flags act on a live cluster; " +
			"plan from the cluster (--kubeconfig FILE or --context NAME) to use them"},
	{flags: []string{"rbac", "rbac-account", "yes", "saved", "resume", "rollback", "dry-run"}, mode: "--plan-only",
		in:  func(c *Command) bool { return c.IsSet("plan-only") },
		why: "--plan-only stops after printing the plan; leave it out to use them"},
	{flags: []string{"dry-run", "resume", "rollback", "yes"}, mode: "--rbac",
		in:  func(c *Command) bool { return c.IsSet("rbac") },
		why: "--rbac writes the roles the run needs and stops, running nothing; run without --rbac to use them"},
	{flags: []string{"resume", "rollback"}, mode: "--dry-run",
		in:  func(c *Command) bool { return c.IsSet("dry-run") },
		why: "a dry run changes nothing and keeps no journal, so there is nothing to continue or undo"},
	{flags: planningFlags, mode: "--saved, --resume or --rollback",
		in: func(c *Command) bool {
			return c.IsSet("saved") || c.IsSet("resume") || c.IsSet("rollback")
		},
		why: "the saved plan (--plan-file) runs as it was planned and reviewed; to change it, plan again without --saved, --resume or --rollback"},
	{flags: []string{"full"}, mode: "-o yaml or -o json",
		in:  func(c *Command) bool { f := c.fs.Lookup("o"); return f != nil && f.Value.String() != "markdown" },
		why: "--full shapes the Markdown runbook (-o markdown); the plan document always holds every step"},
}

// checkApplicable refuses the flags given in a source or mode they do not apply to
// (inapplicables), naming them, the mode and what to do.
func (c *Command) checkApplicable() error {
	for _, row := range inapplicables {
		if !row.in(c) {
			continue
		}
		var given []string
		for _, f := range row.flags {
			if c.IsSet(f) && !(f == "dry-run" && row.offline && c.OfflineDryRun) {
				given = append(given, c.dash(f))
			}
		}
		if len(given) > 0 {
			what := given[0] + " does"
			if len(given) > 1 {
				what = strings.Join(given, ", ") + " do"
			}
			return usage("%s not apply with %s: %s", what, row.mode, row.why)
		}
	}
	return nil
}

// dash is the flag as typed: -o, --full.
func (c *Command) dash(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
