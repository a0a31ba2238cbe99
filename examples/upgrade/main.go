// Command upgrade plans the Istio ambient upgrade of a live cluster, prints the plan, asks for
// confirmation and applies it with progress on the terminal (or plain lines, or JSON), recording
// what it does as Kubernetes Events on the plan's journal. Ctrl-C stops it cleanly; --resume
// continues the saved plan from its journal, --rollback undoes one step. After a failure it says what
// to do next. Its exit code says whether the plan could run (see --help).
//
//	go run ./examples/upgrade [--kubeconfig F --context C | --demo --dry-run] --target 1.31.4 [--charts DIR|URL|oci://REF]
//	    [planning flags as plan-upgrade] [--plan-only | --dry-run] [--yes] [--plan-file F] [--saved | --resume | --rollback STEP]
//	    [--rbac FILE [--rbac-account NS/NAME]] [--log-format text|json]
package main

import (
	"context"
	"io"
	"os"
	"os/signal"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

const synopsis = `Plans the upgrade of the live cluster (as plan-upgrade does), prints it, saves it to --plan-file,
asks for confirmation and applies it. Before anything changes the executor refuses a stale plan and
a plan whose chart versions are not in the chart source; a saved plan made from a dump or another
cluster is named as such first, one of the demo mesh refused. Every event is also recorded as a
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
	src.RegisterDemoRun(c)
	var pf cli.Plan
	pf.Register(c)
	var ap cli.Apply
	ap.Register(c, "ambientkit-upgrade.plan.yaml", false)
	c.Sections = append(c.Sections, cli.ExitCodesSection("the plan was applied (or planned only and runnable, dry-run, or the step rolled back)"))
	if err := c.Parse(args); err != nil {
		return err
	}
	pf.Resume = ap.ResumeCommand()
	run := cli.Run{Source: &src, Helm: true, Does: "apply the upgrade", In: stdin, Out: stdout, Err: stderr,
		Print: func(w io.Writer, p *plan.Plan) error { return pf.Print(w, p, nil) }}
	if ap.Planning() {
		cl, err := src.Connect()
		if err != nil {
			return err
		}
		if run.Snapshot, err = cl.Observe(ctx); err != nil {
			return err
		}
		opts, err := pf.Options(ctx, run.Snapshot)
		if err != nil {
			return err
		}
		if run.Plan, run.PlanErr = ambient.PlanUpgrade(run.Snapshot, opts); run.Plan == nil {
			return run.PlanErr
		}
		run.Plan.Metadata.Source, run.Cluster = cl.Source, cl
	}
	return ap.Run(ctx, run)
}
