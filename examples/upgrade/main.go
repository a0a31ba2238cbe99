// Command upgrade plans the Istio ambient upgrade of a live cluster, prints the plan, asks for
// confirmation and applies it with progress on the terminal (or plain lines, or JSON), recording
// what it does as Kubernetes Events on the plan's journal. Ctrl-C stops it cleanly; --resume
// continues the saved plan from its journal, --rollback undoes one step. After a failure it says what
// to do next. Its exit code says whether the plan could run (see --help).
//
//	go run ./examples/upgrade --kubeconfig ~/.kube/config [--context C] --target 1.31.4 [--charts DIR|URL|oci://REF]
//	    [planning flags as plan-upgrade] [--dry-run] [--yes] [--plan-file F] [--saved | --resume | --rollback STEP] [--rbac FILE [--rbac-account NS/NAME]] [--log-format text|json]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/execute"
	"github.com/ambientkit/ambientkit/ambient/execute/helmsdk"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

const synopsis = `Plans the upgrade of the live cluster (as plan-upgrade does), prints it, saves it to --plan-file,
asks for confirmation and applies it. Before anything changes the executor refuses a stale plan and
a plan whose chart versions are not in the chart source. Every event is also recorded as a
Kubernetes Event on the plan's journal ConfigMap: kubectl get events -n istio-system.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(cli.Exit("upgrade", run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := cli.NewCommand("upgrade", synopsis, stdout)
	var src cli.Source
	src.Register(c, false)
	var pf cli.Plan
	pf.Register(c)
	planFile := c.String(cli.Spec{Name: "plan-file", Arg: "FILE", Usage: "where the plan is saved, and read back by --saved, --resume and --rollback", Example: "--plan-file prod.plan.yaml"}, "ambientkit-upgrade.plan.yaml")
	dryRun := c.Bool(cli.Spec{Name: "dry-run", Usage: "change nothing: save the plan and say what each step would do", Example: "--dry-run --charts ./charts"})
	yes := c.Bool(cli.Spec{Name: "yes", Usage: "do not ask: apply, approve approval steps; health gates then rely on the mesh's own signals", Example: "--yes"})
	saved := c.Bool(cli.Spec{Name: "saved", Usage: "apply the plan saved in --plan-file (reviewed, perhaps edited) instead of planning again; its journal continues it", Example: "--saved --plan-file prod.plan.yaml"})
	resume := c.Bool(cli.Spec{Name: "resume", Usage: "continue the saved plan from its journal (a run that stopped)", Example: "--resume"})
	rollback := c.String(cli.Spec{Name: "rollback", Arg: "STEP", Usage: "run the rollback of one step of the saved plan that ran (the step an unhealthy health gate names), then stop", Example: "--rollback cni/upgrade"}, "")
	logFormat := c.String(cli.LogFormatSpec, "text")
	var rbac cli.RBAC
	rbac.Register(c)
	c.Sections = append(c.Sections, cli.ExitCodesSection("the plan was applied (or dry-run, or the step rolled back)", true))
	if err := c.Parse(args); err != nil {
		return err
	}
	prog, err := cli.NewProgress(stdout, *logFormat)
	if err := errors.Join(err, pf.Check(), rbac.Check(), c.AtMostOne("saved", "resume", "rollback")); err != nil {
		return err
	}
	say := stdout // the plan and messages; with JSON progress stdout is for events only
	if prog.JSON() {
		say = stderr
	}
	cl, err := src.Connect()
	if err != nil {
		return err
	}
	ask := &cli.Asker{In: stdin, Out: say, Yes: *yes}
	var p *plan.Plan
	var snap *mesh.Snapshot
	if !*saved && !*resume && *rollback == "" {
		if snap, err = cl.Observe(ctx); err != nil {
			return err
		}
		opts, err := pf.Options(ctx, snap)
		if err != nil {
			return err
		}
		var planErr error
		if p, planErr = ambient.PlanUpgrade(snap, opts); p == nil {
			return planErr
		}
		if err := pf.Print(say, p, nil); err != nil {
			return err
		}
		if len(p.Steps) > 0 {
			b, _ := plan.EncodeYAML(p)
			if err := os.WriteFile(*planFile, b, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(say, "\nplan saved to %s\n", *planFile)
		}
		if err := cli.Verdict(p, planErr, c); err != nil {
			return err
		}
	} else {
		b, err := os.ReadFile(*planFile)
		if err != nil {
			return fmt.Errorf("--plan-file: %w (plan and save one first: %s --dry-run)", err, c.Invocation)
		}
		if p, err = plan.Decode(b); err != nil {
			return err
		}
		if err := cli.Verdict(p, nil, c); err != nil && *rollback == "" {
			return err
		}
	}
	if snap == nil { // the preflight checks what observation needs too, which depends on the mesh
		if snap, err = cl.Observe(ctx); err != nil {
			return err
		}
	}
	if rbac.File == "" && !*dryRun && !*resume && *rollback == "" && !ask.Ask(fmt.Sprintf("apply these %d steps to the cluster at %s?", len(p.Steps), cl.Config.Host)) {
		return errors.New("not confirmed; nothing was changed")
	}

	helm, err := helmsdk.New(helmsdk.Options{Config: cl.Config})
	if err != nil {
		return err
	}
	next := &cli.Next{Cmd: c, DryRun: *dryRun, Namespace: execute.DefaultNamespace}
	nodes := cli.NewNodeProgress(say)
	observers := []func(execute.Event){prog.Observe, next.Observe, nodes.Observe}
	events := "" // the plan hash the run's Kubernetes Events are recorded for; none in a dry run
	if !*dryRun {
		events, _ = execute.PlanHash(p)
		log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		observers = append(observers, execute.KubernetesEvents(cl.Client, execute.KubernetesEventsOptions{PlanHash: events, Logger: log}))
	}
	healthy := execute.AllProbes(execute.MeshProbe(cl.Observe, ambient.Gates()), func(_ context.Context, scope string) (bool, string, error) {
		return ask.Ask("is the mesh healthy after " + scope + "? (check your dashboards)"), "the operator said no", nil
	}) // the mesh's own signals first, then the operator's
	ex, err := execute.New(cl.Client, execute.Options{Helm: helm, Gates: ambient.Gates(), Snapshot: cl.Observe, DryRun: *dryRun, Observer: execute.Observers(observers...),
		Permissions: cli.RunPermissions(snap, events),
		Approve: func(_ context.Context, st plan.Step) (bool, error) {
			return ask.Ask("approve: " + st.Approval.Message + "?"), nil
		},
		Probes: map[string]execute.Probe{"mesh-health": healthy}})
	if err != nil {
		return err
	}
	if rbac.File != "" {
		return rbac.Write(say, ex, p, snap)
	}
	defer prog.End()
	if *rollback != "" {
		if _, err := ex.Rollback(ctx, p, *rollback); err != nil {
			return next.Wrap(err)
		}
		fmt.Fprintf(say, "\nstep %s rolled back; the rest of the plan assumed it: plan again: %s\n", *rollback, next.Replan())
		return nil
	}
	res, err := ex.Apply(ctx, p, execute.ApplyOptions{Resume: *resume})
	if err != nil {
		return next.Wrap(err)
	}
	prog.End()
	fmt.Fprintf(say, "\ndone: %d steps (%s), resumed=%v, dry run=%v\n", len(res.Steps), nodes, res.Resumed, res.DryRun)
	return nil
}
