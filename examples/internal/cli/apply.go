package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/helmsdk"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Apply holds the flags of the examples that change the cluster (upgrade, bluegreen-ztunnel,
// migrate-namespace) and runs their plans, all the same way: print and save the plan, say where
// it was made from, ask, apply with progress and Kubernetes Events, and say what to do after a
// failure.
type Apply struct {
	// PlanFile, Rollback and LogFormat are --plan-file, --rollback and --log-format.
	PlanFile, Rollback, LogFormat string
	// PlanOnly, DryRun, Yes, Saved and Resume are their flags.
	PlanOnly, DryRun, Yes, Saved, Resume bool
	// RBAC is --rbac and --rbac-account.
	RBAC

	rollbackTo bool
	cmd        *Command
}

// Register adds the apply flags; planFile is --plan-file's default, and rollbackTo makes
// --rollback STEP undo the saved plan back to a step, inclusive, instead of the one step. Every
// example spells it --rollback; --rollback-to, migrate-namespace's old spelling, is refused naming it.
func (a *Apply) Register(c *Command, planFile string, rollbackTo bool) {
	a.cmd = c
	str := func(p *string, s Spec, def string) { c.add(s); c.fs.StringVar(p, s.Name, def, s.Usage) }
	boolean := func(p *bool, s Spec) { c.add(s); c.fs.BoolVar(p, s.Name, false, s.Usage) }
	str(&a.PlanFile, Spec{Name: "plan-file", Arg: "FILE", Usage: "where the plan is saved before it is applied, and read back by --saved, --resume and the rollback; with --plan-only (or a plan not made from a live cluster) it is written only when given",
		Example: "--plan-file prod.plan.yaml"}, planFile)
	boolean(&a.PlanOnly, Spec{Name: "plan-only", Usage: "plan and print, then stop: change nothing (the exit code says whether the plan can run, as plan-upgrade's)", Example: "--plan-only -o yaml > plan.yaml"})
	boolean(&a.DryRun, Spec{Name: "dry-run", Usage: "change nothing: save the plan and say what each step would do", Example: "--dry-run"})
	boolean(&a.Yes, Spec{Name: "yes", Usage: "do not ask: apply, approve approval steps; health gates then rely on the mesh's own signals", Example: "--yes"})
	boolean(&a.Saved, Spec{Name: "saved", Usage: "apply the plan saved in --plan-file (reviewed, perhaps edited) instead of planning again; its journal continues it", Example: "--saved --plan-file prod.plan.yaml"})
	boolean(&a.Resume, Spec{Name: "resume", Usage: "continue the saved plan from its journal (a run that stopped)", Example: "--resume"})
	a.rollbackTo = rollbackTo
	if rollbackTo {
		str(&a.Rollback, Spec{Name: "rollback", Arg: "STEP", Usage: "undo the saved plan back to this step, inclusive (its first step undoes it all), then stop", Example: "--rollback waypoint"}, "")
		var old string // the old spelling, not in --help: refused, naming the new one
		c.fs.StringVar(&old, "rollback-to", "", "")
		c.check(func() error {
			if c.IsSet("rollback-to") {
				return usage("--rollback-to is now --rollback STEP (it undoes the saved plan back to STEP, inclusive, as --rollback-to did): %s", c.Line([]string{"rollback-to"}, "--rollback", old))
			}
			return nil
		})
	} else {
		str(&a.Rollback, Spec{Name: "rollback", Arg: "STEP", Usage: "run the rollback of one step of the saved plan that ran (the step an unhealthy health gate names), then stop", Example: "--rollback cni/upgrade"}, "")
	}
	str(&a.LogFormat, LogFormatSpec, "text")
	a.RBAC.Register(c)
	c.check(func() error {
		_, err := NewProgress(io.Discard, a.LogFormat)
		return errors.Join(err, a.RBAC.Check(), c.AtMostOne("plan-only", "saved", "resume", "rollback"), c.AtMostOne("plan-only", "dry-run"))
	})
}

// ResumeCommand is the command that continues a run of the saved plan from its journal. A plan of
// the demo mesh or of a dump is applied to a cluster only once planned from it, so its command names
// the cluster to pass (--kubeconfig FILE) rather than one that would be refused as typed.
func (a *Apply) ResumeCommand() string {
	if !a.cmd.IsSet("kubeconfig") && !a.cmd.IsSet("context") {
		return a.cmd.Line(a.cmd.Only(sessionFlags...), "--kubeconfig", "FILE", "--resume")
	}
	return a.cmd.Line(a.cmd.Only(sessionFlags...), "--resume")
}

// Planning reports whether the run plans (rather than reading the saved plan).
func (a *Apply) Planning() bool { return !a.Saved && !a.Resume && a.Rollback == "" }

// Run is one run of a plan: planned now (Plan), or read from --plan-file.
type Run struct {
	// Plan and PlanErr are what the planner returned; a nil Plan reads the saved plan.
	Plan    *plan.Plan
	PlanErr error
	// Source is where the mesh was read from; Cluster the live cluster (connected when nil), and
	// Snapshot its mesh (observed when nil).
	Source   *Source
	Cluster  *Cluster
	Snapshot *mesh.Snapshot
	// Helm: the plan's steps install, upgrade or remove Helm releases.
	Helm bool
	// Does says what the run does, for the confirmation ("apply the upgrade").
	Does string
	// Print prints a plan planned now.
	Print func(w io.Writer, p *plan.Plan) error
	// Step maps the step --rollback names to its ID (nil: as given).
	Step func(p *plan.Plan, id string) string
	// In, Out and Err are the program's streams.
	In       io.Reader
	Out, Err io.Writer
}

// Run prints and saves the plan planned now, or reads the saved one, and unless planning only,
// applies it to the live cluster (or dry-runs it, writes its RBAC, rolls a step back), as the flags
// ask. A plan not made from this cluster is named as such first, and one of the demo mesh refused.
func (a *Apply) Run(ctx context.Context, r Run) error {
	prog, _ := NewProgress(r.Out, a.LogFormat)
	say := r.Out // the plan and messages; with JSON progress stdout is for events only
	if prog.JSON() {
		say = r.Err
	}
	p, err := a.plan(r, say)
	if err != nil || p == nil {
		return err
	}
	cl := r.Cluster
	if cl == nil {
		if cl, err = r.Source.Connect(); err != nil {
			return err
		}
	}
	ask := &Asker{In: r.In, Out: say, Yes: a.Yes || cl.InMemory()}
	if cl.InMemory() {
		fmt.Fprintf(say, "\ntrying the plan on the in-memory demo cluster: the executor runs every step for real on it (approvals granted, the clock skips the waits; the budget data/postgres, which allows no eviction in the demo mesh, relaxed to one at a time so that the run ends); nothing outside this process changes\n")
	}
	if err := a.checkSource(p, cl, say, ask); err != nil {
		return err
	}
	snap := r.Snapshot
	if snap == nil { // the preflight checks what observation needs too, which depends on the mesh
		if snap, err = cl.Observe(ctx); err != nil {
			return err
		}
	}
	if a.RBAC.File == "" && !a.DryRun && !a.Resume && a.Rollback == "" &&
		!ask.Ask(fmt.Sprintf("%s (%d steps) on %s?", r.Does, len(p.Steps), plan.SourceText(cl.Source))) {
		return errors.New("not confirmed; nothing was changed")
	}
	ex, next, nodes, err := a.executor(cl, p, snap, r, prog, ask, say)
	if err != nil {
		return err
	}
	if a.RBAC.File != "" {
		return a.RBAC.Write(say, ex, p, snap)
	}
	defer prog.End()
	if a.Rollback != "" {
		return a.rollback(ctx, ex, p, r, next, say)
	}
	res, err := ex.Apply(ctx, p, execute.ApplyOptions{Resume: a.Resume})
	if err != nil {
		return next.Wrap(err)
	}
	prog.End()
	switch {
	case cl.InMemory():
		fmt.Fprintf(say, "\ndone on the in-memory demo cluster: %d steps (%s); nothing outside this process was changed\n", len(res.Steps), nodes)
	case res.DryRun:
		fmt.Fprintf(say, "\ndry run done: %d steps checked (%s); nothing was changed\n", len(res.Steps), nodes)
	default:
		fmt.Fprintf(say, "\ndone: %d steps applied (%s), resumed=%v\n", len(res.Steps), nodes, res.Resumed)
	}
	return nil
}

// plan prints and saves the plan planned now, or reads the saved one; nil without error when the
// run stops after planning (the verdict is the error then).
func (a *Apply) plan(r Run, say io.Writer) (*plan.Plan, error) {
	c := a.cmd
	if p := r.Plan; p != nil {
		if err := r.Print(say, p); err != nil {
			return nil, err
		}
		onlyPlan := a.PlanOnly || !r.Source.Live() && !r.Source.InMemory()
		if (!onlyPlan && len(p.Steps) > 0 && !r.Source.InMemory()) || c.IsSet("plan-file") {
			b, _ := plan.EncodeYAML(p)
			if err := os.WriteFile(a.PlanFile, b, 0o600); err != nil {
				return nil, err
			}
			fmt.Fprintf(say, "\nplan saved to %s\n", a.PlanFile)
		}
		if err := Verdict(p, r.PlanErr, c); err != nil || onlyPlan {
			return nil, err
		}
		return p, nil
	}
	b, err := os.ReadFile(a.PlanFile)
	if err != nil {
		return nil, fmt.Errorf("--plan-file: %w (plan and save one first: %s --plan-only --plan-file %s)", err, c.Invocation, a.PlanFile)
	}
	p, err := plan.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("--plan-file %s: %w", a.PlanFile, err)
	}
	if err := Verdict(p, nil, c); err != nil && a.Rollback == "" {
		return nil, err
	}
	return p, nil
}

// checkSource says where a saved plan was made from when that is not this cluster, and asks before
// a new run applies it; a plan of the demo mesh applies to no cluster.
func (a *Apply) checkSource(p *plan.Plan, cl *Cluster, say io.Writer, ask *Asker) error {
	kind, _, server, _ := plan.ParseSource(p.Metadata.Source)
	_, _, here, _ := plan.ParseSource(cl.Source)
	switch {
	case kind == plan.SourceDemo && cl.InMemory():
		return nil
	case kind == plan.SourceDemo:
		return usage("--plan-file %s was made from %s: it applies to no cluster; plan from the cluster itself", a.PlanFile, plan.SourceText(p.Metadata.Source))
	case kind == "live" && server == here:
		return nil
	}
	fmt.Fprintf(say, "\nnote: the plan in %s was made from %s, not from %s; the executor applies it only if this cluster is still exactly as that snapshot was (same fingerprint)\n",
		a.PlanFile, plan.SourceText(p.Metadata.Source), plan.SourceText(cl.Source))
	if a.Saved && !a.DryRun && a.RBAC.File == "" && !ask.Ask("apply a plan made elsewhere to this cluster?") {
		return errors.New("not confirmed; nothing was changed")
	}
	return nil
}

// executor builds the executor of the run: Helm when the plan needs it, progress, advice and node
// progress, Kubernetes Events (not in a dry run), the "mesh-health" probe and the approvals.
func (a *Apply) executor(cl *Cluster, p *plan.Plan, snap *mesh.Snapshot, r Run, prog *Progress, ask *Asker, say io.Writer) (*execute.Executor, *Next, *NodeProgress, error) {
	var helm execute.HelmClient
	if r.Helm && cl.InMemory() {
		helm = cl.memory.helm()
	} else if r.Helm {
		h, err := helmsdk.New(helmsdk.Options{Config: cl.Config})
		if err != nil {
			return nil, nil, nil, err
		}
		helm = h
	}
	dryRun := a.DryRun && !cl.InMemory() // in memory, the run is real on a cluster nothing else sees
	var clock execute.Clock
	if cl.InMemory() {
		clock = cl.memory.clock()
	}
	next := &Next{Cmd: a.cmd, DryRun: a.DryRun, Namespace: execute.DefaultNamespace, InMemory: cl.InMemory()}
	nodes := NewNodeProgress(say)
	observers := []func(execute.Event){prog.Observe, next.Observe, nodes.Observe}
	events := "" // the plan hash the run's Kubernetes Events are recorded for; none in a dry run
	if !dryRun {
		events, _ = execute.PlanHash(p)
		log := slog.New(slog.NewTextHandler(r.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
		observers = append(observers, execute.KubernetesEvents(cl.Client, execute.KubernetesEventsOptions{PlanHash: events, Logger: log, Clock: clock}))
	}
	healthy := execute.AllProbes(execute.MeshProbe(cl.Observe, ambient.Gates()), func(_ context.Context, scope string) (bool, string, error) {
		return ask.Ask("is the mesh healthy after " + scope + "? (check your dashboards)"), "the operator said no", nil
	}) // the mesh's own signals first, then the operator's
	ex, err := execute.New(cl.Client, execute.Options{Helm: helm, Gates: ambient.Gates(), Snapshot: cl.Observe, DryRun: dryRun, Clock: clock, Observer: execute.Observers(observers...),
		Permissions: RunPermissions(snap, events),
		Approve: func(_ context.Context, st plan.Step) (bool, error) {
			return ask.Ask("approve: " + st.Approval.Message + "?"), nil
		},
		Probes: map[string]execute.Probe{"mesh-health": healthy}})
	return ex, next, nodes, err
}

// rollback runs --rollback: one step, or back to a step (rollbackTo).
func (a *Apply) rollback(ctx context.Context, ex *execute.Executor, p *plan.Plan, r Run, next *Next, say io.Writer) error {
	id := a.Rollback
	if r.Step != nil {
		id = r.Step(p, id)
	}
	if a.rollbackTo {
		res, err := ex.RollbackTo(ctx, p, id)
		if err != nil {
			return next.Wrap(err)
		}
		fmt.Fprintf(say, "\nrolled back %d steps, back to %s\n", len(res), id)
		return nil
	}
	if _, err := ex.Rollback(ctx, p, id); err != nil {
		return next.Wrap(err)
	}
	fmt.Fprintf(say, "\nstep %s rolled back; the rest of the plan assumed it: plan again: %s\n", id, next.Replan())
	return nil
}
