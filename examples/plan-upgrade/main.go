// Command plan-upgrade prints the compatibility report and the upgrade plan of an Istio ambient mesh.
// With no flags it plans the embedded demo mesh's upgrade to the newest patch of the next minor.
//
//	go run ./examples/plan-upgrade [-o markdown|yaml|json] [--target 1.31.4] [--strategy revision|in-place]
//	    [--ztunnel node-by-node|in-place] [--batch-size N] [--waive CODE,...] [--from-dir DIR | --kubeconfig F --context C]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/ztunnel"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "plan-upgrade:", err)
		if errors.Is(err, ambient.ErrBlocked) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("plan-upgrade", flag.ContinueOnError)
	var src cli.Source
	src.Register(fs)
	out := fs.String("o", "markdown", "output: markdown, yaml or json")
	target := fs.String("target", "", "Istio version to reach (default: newest patch of the next minor)")
	strategy := fs.String("strategy", "", "control plane: revision (default) or in-place")
	zt := fs.String("ztunnel", "", "ztunnel: node-by-node (default) or in-place")
	batch := fs.Int("batch-size", 0, "nodes replaced at once by node-by-node (default 1)")
	waive := fs.String("waive", "", "comma-separated waivable finding codes to accept")
	today := fs.String("today", time.Now().UTC().Format(time.DateOnly), "date end of life is judged at (YYYY-MM-DD)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cli.CheckFormat(*out); err != nil {
		return err
	}
	snap, err := src.Observe(ctx)
	if err != nil {
		return err
	}
	day, err := time.Parse(time.DateOnly, *today)
	if err != nil {
		return fmt.Errorf("--today %q: want YYYY-MM-DD", *today)
	}
	ztStrategy, err := ztunnel.ParseStrategy(*zt)
	if err != nil {
		return fmt.Errorf("--ztunnel: %w", err)
	}
	if nbn, ok := ztStrategy.(ztunnel.NodeByNode); ok {
		nbn.BatchSize = *batch
		ztStrategy = nbn
	} else if *batch != 0 {
		return fmt.Errorf("--batch-size applies to --ztunnel node-by-node")
	}
	opts := ambient.UpgradeOptions{Strategy: ambient.Strategy(*strategy), Ztunnel: ztStrategy, Today: day}
	for _, c := range strings.Split(*waive, ",") {
		if c = strings.TrimSpace(c); c != "" {
			opts.Waive = append(opts.Waive, plan.Code(c))
		}
	}
	if opts.Target, err = pickTarget(snap, *target); err != nil {
		return err
	}
	p, planErr := ambient.PlanUpgrade(snap, opts)
	if p == nil {
		return planErr
	}
	if done, err := cli.WriteEncoded(stdout, p, *out); done || err != nil {
		if err != nil {
			return err
		}
		return planErr
	}
	compat, err := ambient.ComputeCompatibility(snap, ambient.CompatibilityOptions{Target: opts.Target,
		Strategy: opts.Strategy, Today: opts.Today, Waive: opts.Waive})
	if err != nil {
		return err
	}
	if err := ambient.RenderCompatibility(stdout, compat); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	if err := plan.RenderMarkdown(stdout, p); err != nil {
		return err
	}
	return planErr
}

// pickTarget parses --target, or takes the newest patch of the minor after the running control plane.
func pickTarget(snap *mesh.Snapshot, flagValue string) (mesh.Version, error) {
	if flagValue != "" {
		return mesh.ParseVersion(flagValue)
	}
	cps := snap.ControlPlaneVersions()
	if len(cps) == 0 {
		return mesh.Version{}, fmt.Errorf("no istiod found to upgrade from; pass --target")
	}
	next, ok := ambient.DefaultReleases().Next(cps[len(cps)-1])
	if !ok {
		return mesh.Version{}, fmt.Errorf("the release data knows no minor after %s; pass --target", cps[len(cps)-1])
	}
	return next, nil
}
