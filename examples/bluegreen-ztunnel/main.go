// Command bluegreen-ztunnel replaces the ztunnel of an Istio ambient mesh by node pool
// (ztunnel.BlueGreenZtunnel): it plans, prints the runbook, asks for confirmation and applies it with
// progress: blue nodes moved of all, pods evicted, what waits on which PodDisruptionBudget, and an
// estimate of the time left. --resume continues a run that stopped. From a dump (--from-dir) or the
// embedded demo mesh (--demo), or with --plan-only, it plans and stops there.
//
//	go run ./examples/bluegreen-ztunnel [--kubeconfig F --context C | --from-dir DIR | --demo] [--target 1.31.5]
//	    [--green-nodepools P,... | --relabel NODE,... | --green-nodes N] [--batch-size N] [--drain-timeout D]
//	    [--jobs wait|evict] [--local-storage ask|evict] [--charts DIR|URL|oci://REF] [--chart-index FILE|URL]
//	    [--waive CODE,...] [--today YYYY-MM-DD] [-o markdown|yaml|json] [--plan-file F] [--plan-only | --dry-run] [--yes]
//	    [--saved | --resume | --rollback STEP] [--rbac FILE [--rbac-account NS/NAME]] [--log-format text|json]
package main

import (
	"context"
	"io"
	"os"
	"os/signal"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
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
	target := c.String(cli.Spec{Name: "target", Arg: "VERSION", Usage: "green's version (default: that of the istiod blue connects to, when newer than blue; else blue's own)", Example: "--target 1.31.5"}, "")
	var nf cli.NodeFlags
	nf.Register(c, "", "")
	var charts cli.Charts
	charts.Register(c)
	var cf cli.Common
	cf.Register(c)
	var ap cli.Apply
	ap.Register(c, "ambientkit-bluegreen.plan.yaml", false)
	c.Sections = append(c.Sections, cli.ExitCodesSection("the plan was applied (or planned only and runnable, dry-run, or the step rolled back)"))
	if err := c.Parse(args); err != nil {
		return err
	}
	if err := charts.CheckTarget(*target); err != nil {
		return err
	}
	cf.Resume = ap.ResumeCommand()
	run := cli.Run{Source: &src, Helm: true, Does: "move the workloads off the blue nodes", In: stdin, Out: stdout, Err: stderr,
		Print: func(w io.Writer, p *plan.Plan) error { return cf.Print(w, p, nil) }}
	if ap.Planning() {
		snap, source, err := src.Observe(ctx)
		if err != nil {
			return err
		}
		opts := ztunnel.BlueGreenOptions{Strategy: nf.BlueGreen(), Charts: charts.Source(), Waive: cf.Waivers(), Today: cf.Date()}
		if opts.Releases, err = charts.Releases(ctx, snap); err != nil {
			return err
		}
		if *target != "" {
			if opts.Target, err = cli.CheckTarget(*target, opts.Releases); err != nil {
				return err
			}
		} else {
			opts.Target = ztunnel.DefaultTarget(snap)
		}
		if run.Plan, run.PlanErr = ztunnel.BlueGreenZtunnel(snap, opts); run.Plan == nil {
			return run.PlanErr
		}
		run.Plan.Metadata.Source, run.Snapshot = source, snap
	}
	return ap.Run(ctx, run)
}
