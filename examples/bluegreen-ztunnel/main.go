// Command bluegreen-ztunnel replaces the ztunnel of an Istio ambient mesh by node pool
// (ztunnel.BlueGreenZtunnel): it plans, prints the runbook, asks for confirmation and applies it with
// progress: blue nodes moved of all, pods evicted, what waits on which PodDisruptionBudget, and an
// estimate of the time left. --resume continues a run that stopped. Without a live cluster it plans
// the embedded demo mesh or a dump (--from-dir) and stops there.
//
//	go run ./examples/bluegreen-ztunnel [--kubeconfig F --context C | --from-dir DIR] [--target 1.31.5]
//	    [--green-nodepools P,... | --relabel NODE,... | --green-nodes N] [--batch-size N] [--drain-timeout D]
//	    [--jobs wait|evict] [--local-storage ask|evict] [--charts DIR|URL|oci://REF] [--waive CODE,...]
//	    [-o markdown|yaml|json] [--plan-file F] [--dry-run] [--yes] [--resume] [--rbac FILE [--rbac-account NS/NAME]]
//	    [--log-format text|json]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/execute"
	"github.com/ambientkit/ambientkit/ambient/execute/helmsdk"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/ztunnel"
)

const synopsis = `Plans the blue-green replacement of the mesh's ztunnel by node pool, prints it, saves it to
--plan-file, asks for confirmation and applies it: blue stays on its nodes, green runs on new (or
relabelled) nodes only, workloads move off the cordoned blue nodes in batches, then blue is removed
and istiod trusts green alone. No node ever runs two ztunnels.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(cli.Exit("bluegreen-ztunnel", run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := cli.NewCommand("bluegreen-ztunnel", synopsis, stdout)
	var src cli.Source
	src.Register(c, true)
	target := c.String(cli.Spec{Name: "target", Arg: "VERSION", Usage: "green's version (default: the running ztunnel's)", Example: "--target 1.31.5"}, "")
	var nf cli.NodeFlags
	nf.Register(c, "", "")
	charts := c.String(cli.Spec{Name: "charts", Arg: "DIR|URL|oci://REF", Usage: "where the charts come from: a folder of chart folders (ztunnel for the target; ztunnel@V and istiod@V for the running versions, which the plan upgrades in place), a repository URL or oci:// path", Example: "--charts ./charts"}, "")
	waive := c.String(cli.Spec{Name: "waive", Arg: "CODE,...", Usage: "waivable finding codes to accept", Example: "--waive PDB_BLOCKS_DRAIN"}, "")
	out := c.String(cli.Spec{Name: "o", Arg: "markdown|yaml|json", Usage: "how the plan is printed", Example: "-o yaml > plan.yaml"}, "markdown")
	planFile := c.String(cli.Spec{Name: "plan-file", Arg: "FILE", Usage: "where the plan is saved, and read back by --resume", Example: "--plan-file bg.plan.yaml"}, "ambientkit-bluegreen.plan.yaml")
	dryRun := c.Bool(cli.Spec{Name: "dry-run", Usage: "change nothing: say what each step would do", Example: "--dry-run"})
	yes := c.Bool(cli.Spec{Name: "yes", Usage: "do not ask: apply and approve approval steps", Example: "--yes"})
	resume := c.Bool(cli.Spec{Name: "resume", Usage: "continue the saved plan from its journal", Example: "--resume"})
	logFormat := c.String(cli.LogFormatSpec, "text")
	var rbac cli.RBAC
	rbac.Register(c)
	c.Sections = append(c.Sections, cli.ExitCodesSection("the plan was applied (or dry-run); without a live cluster: it is runnable", true))
	if err := c.Parse(args); err != nil {
		return err
	}
	g := nf.BlueGreen()
	source, err := cli.ParseCharts(*charts)
	if err := errors.Join(err, g.Validate()); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	pf := cli.Plan{Output: *out}
	prog, err := cli.NewProgress(stdout, *logFormat)
	if err := errors.Join(err, pf.CheckOutput(), rbac.Check()); err != nil {
		return err
	}
	say := stdout // the plan and messages; with JSON progress stdout is for events only
	if prog.JSON() {
		say = stderr
	}
	var p *plan.Plan
	var snap *mesh.Snapshot
	if *resume {
		b, err := os.ReadFile(*planFile)
		if err != nil {
			return fmt.Errorf("--plan-file: %w", err)
		}
		if p, err = plan.Decode(b); err != nil {
			return err
		}
	} else {
		if snap, err = src.Observe(ctx); err != nil {
			return err
		}
		opts := ztunnel.BlueGreenOptions{Strategy: g, Charts: source}
		for _, code := range cli.List(*waive) {
			opts.Waive = append(opts.Waive, plan.Code(code))
		}
		if opts.Target, err = mesh.ParseVersion(*target); *target == "" && len(snap.Ztunnels) > 0 {
			opts.Target, err = snap.Ztunnels[0].Version, nil
		}
		if err != nil {
			return fmt.Errorf("%w: --target: %w", cli.ErrUsage, err)
		}
		p, err = ztunnel.BlueGreenZtunnel(snap, opts)
		if p == nil {
			return err
		}
		if perr := pf.Print(say, p, nil); perr != nil {
			return perr
		}
		if verdict := cli.Verdict(p, err, c); verdict != nil || !src.Live() {
			return verdict // planned only: apply needs a live cluster
		}
		b, _ := plan.EncodeYAML(p)
		if err := os.WriteFile(*planFile, b, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(say, "\nplan saved to %s\n", *planFile)
	}
	cl, err := src.Connect()
	if err != nil {
		return err
	}
	if snap == nil { // the preflight checks what observation needs too, which depends on the mesh
		if snap, err = cl.Observe(ctx); err != nil {
			return err
		}
	}
	ask := &cli.Asker{In: stdin, Out: say, Yes: *yes}
	if rbac.File == "" && !*dryRun && !*resume && !ask.Ask(fmt.Sprintf("move the workloads of the blue nodes (%d steps) on %s?", len(p.Steps), cl.Config.Host)) {
		return errors.New("not confirmed; nothing was changed")
	}
	helm, err := helmsdk.New(helmsdk.Options{Config: cl.Config})
	if err != nil {
		return err
	}
	m := cli.NewNodeProgress(say)
	next := &cli.Next{Cmd: c, DryRun: *dryRun, Namespace: execute.DefaultNamespace}
	ex, err := execute.New(cl.Client, execute.Options{Helm: helm, Gates: ambient.Gates(), Snapshot: cl.Observe, DryRun: *dryRun,
		Observer: execute.Observers(prog.Observe, next.Observe, m.Observe),
		Approve: func(_ context.Context, st plan.Step) (bool, error) {
			return ask.Ask("approve: " + st.Approval.Message + "?"), nil
		},
		Probes:      map[string]execute.Probe{"mesh-health": execute.MeshProbe(cl.Observe, ambient.Gates())},
		Permissions: cli.RunPermissions(snap, "")})
	if err != nil {
		return err
	}
	if rbac.File != "" {
		return rbac.Write(say, ex, p, snap)
	}
	defer prog.End()
	res, err := ex.Apply(ctx, p, execute.ApplyOptions{Resume: *resume})
	if err != nil {
		return next.Wrap(err)
	}
	prog.End()
	fmt.Fprintf(say, "\ndone: %d steps (%s), resumed=%v\n", len(res.Steps), m, res.Resumed)
	return nil
}
