// Command plan-upgrade prints the compatibility report and the upgrade plan of an Istio ambient mesh:
// a live cluster (the kubeconfig's, as kubectl reads it), a dump saved with kubectl (--from-dir), or
// the embedded demo mesh (--demo). It changes nothing. Its output opens with where the mesh was read
// from, and its exit code says whether the plan can run (see --help).
//
//	go run ./examples/plan-upgrade [--kubeconfig F --context C | --from-dir DIR | --demo] [--target 1.31.4]
//	    [--strategy revision|in-place] [--ztunnel node-by-node|in-place|blue-green] [--batch-size N] [--drain-timeout D]
//	    [--charts DIR|URL|oci://REF] [--chart-index FILE|URL] [--waive CODE,...] [--today YYYY-MM-DD] [-o markdown|yaml|json] [--full]
package main

import (
	"context"
	"io"
	"os"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

const synopsis = `Prints the compatibility report and the upgrade plan of an Istio ambient mesh, as a Markdown
runbook with the helm and kubectl commands, or as the versioned plan document (-o yaml|json) that
examples/upgrade applies. It reads the live cluster of the kubeconfig unless told to read a dump
(--from-dir) or the embedded demo mesh (--demo), and says which first.`

func main() {
	os.Exit(cli.Exit("plan-upgrade", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}

func run(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	c := cli.NewCommand("plan-upgrade", synopsis, stdout)
	var src cli.Source
	src.Register(c, true)
	var pf cli.Plan
	pf.Register(c)
	c.Sections = append(c.Sections, cli.ExitCodesSection("the plan is runnable"))
	if err := c.Parse(args); err != nil {
		return err
	}
	snap, source, err := src.Observe(ctx)
	if err != nil {
		return err
	}
	opts, err := pf.Options(ctx, snap)
	if err != nil {
		return err
	}
	p, planErr := ambient.PlanUpgrade(snap, opts)
	if p == nil {
		return planErr
	}
	p.Metadata.Source = source
	err = pf.Print(stdout, p, func(w io.Writer) error {
		compat, err := ambient.CompatibilityReport(snap, ambient.CompatibilityOptions{Target: opts.Target,
			Strategy: opts.Strategy, Releases: opts.Releases, Today: opts.Today, Waive: opts.Waive})
		if err != nil {
			return err
		}
		c.FlagRemedies(compat.Findings)
		return ambient.RenderCompatibility(w, compat)
	})
	if err != nil {
		return err
	}
	return cli.Verdict(p, planErr, c)
}
