// Command migrate-namespace moves one namespace from sidecars to ambient: it prints the readiness
// report and the plan as a Markdown runbook, asks, and applies it step by step; --rollback undoes
// the saved plan back to a step (its first step undoes it all). From a dump (--from-dir) or the
// embedded demo mesh (--demo), or with --plan-only, it reports and plans only, and writes no plan
// file unless --plan-file is given.
//
//	go run ./examples/migrate-namespace --namespace shop [--waypoint waypoint] [--apply all] [--delete Kind/name,...]
//	    [--kubeconfig F --context C | --from-dir DIR | --demo] [--plan-only | --dry-run] [--yes] [--plan-file F]
//	    [--saved | --resume | --rollback STEP] [--waive CODE,...] [-o markdown|yaml|json]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/migrate"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

const synopsis = `Moves one namespace from sidecars to ambient in the order of Istio's migration guide: its
readiness report (policies as ztunnel reads them, routes, the waypoint it needs), then the plan that
labels, restarts and validates it, each step gated and reversible; asks, and applies it.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(cli.Exit("migrate-namespace", run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := cli.NewCommand("migrate-namespace", synopsis, stdout)
	var src cli.Source
	src.Register(c, true)
	ns := c.String(cli.Spec{Name: "namespace", Arg: "NAME", Usage: "namespace to migrate (required)", Example: "--namespace shop"}, "")
	waypoint := c.String(cli.Spec{Name: "waypoint", Arg: "NAME", Usage: "waypoint to create and use when the namespace names none", Example: "--waypoint waypoint"}, "")
	apply := c.String(cli.Spec{Name: "apply", Arg: "all|KIND/NAME,...", Usage: "proposals to apply: all, or the objects they replace", Example: "--apply all"}, "")
	del := c.String(cli.Spec{Name: "delete", Arg: "KIND/NAME,...", Usage: "more sidecar-era objects to delete after the backup", Example: "--delete DestinationRule/web"}, "")
	backup := c.String(cli.Spec{Name: "backup", Arg: "FILE", Usage: "file the namespace's Istio and Gateway API objects are backed up to", Example: "--backup shop-backup.json"}, "migrate-backup.json")
	var cf cli.Common
	cf.Register(c)
	var ap cli.Apply
	ap.Register(c, "migrate.plan.yaml", true)
	c.Sections = append(c.Sections, cli.ExitCodesSection("the plan was applied (or planned only and runnable, dry-run, or rolled back)"))
	if err := c.Parse(args); err != nil {
		return err
	}
	if *ns == "" {
		return cli.UsageError("--namespace is required: the namespace to migrate")
	}
	applied, aerr := cli.Refs("apply", *apply, *ns, true)
	deleted, derr := cli.Refs("delete", *del, *ns, false)
	if err := errors.Join(cli.CheckName("namespace", *ns, false), cli.CheckName("waypoint", *waypoint, false), aerr, derr); err != nil {
		return err
	}
	cf.Resume = ap.ResumeCommand()
	var report *migrate.Report
	run := cli.Run{Source: &src, Does: "migrate namespace " + *ns + " to ambient", In: stdin, Out: stdout, Err: stderr,
		Print: func(w io.Writer, p *plan.Plan) error {
			return cf.Print(w, p, func(w io.Writer) error { return printReadiness(w, c, *ns, report) })
		},
		Step: func(p *plan.Plan, id string) string {
			if _, ok := p.Step(id); !ok {
				return "migrate/" + *ns + "/" + id
			}
			return id
		}}
	if ap.Planning() {
		snap, source, err := src.Observe(ctx)
		if err != nil {
			return err
		}
		opts := migrate.Options{Apply: applied, Delete: deleted, Waive: cf.Waivers(), Today: cf.Date()}
		if opts.BackupFile, err = filepath.Abs(*backup); err != nil {
			return err
		}
		if *waypoint != "" {
			opts.Waypoint, opts.CreateWaypoint = &migrate.WaypointRef{Name: *waypoint}, true
		}
		if report, err = migrate.Readiness(snap, *ns, migrate.ReadinessOptions{Waypoint: opts.Waypoint, Waive: opts.Waive}); err != nil {
			return err
		}
		var offered []mesh.ObjectRef
		for _, pr := range report.Proposals {
			offered = append(offered, pr.For)
		}
		if err := cli.CheckChosen("apply", "proposal", applied, offered); err != nil {
			return err
		}
		if *apply == "all" {
			opts.Apply = offered
		}
		if run.Plan, run.PlanErr = migrate.MigrateNamespace(snap, *ns, opts); run.Plan == nil {
			return run.PlanErr
		}
		run.Plan.Metadata.Source, run.Snapshot = source, snap
	}
	return ap.Run(ctx, run)
}

// printReadiness prints the readiness report: the findings, their remedies naming the flags, and the
// proposals that --apply applies.
func printReadiness(w io.Writer, c *cli.Command, ns string, r *migrate.Report) error {
	var md strings.Builder
	c.FlagRemedies(r.Findings)
	runbook.RenderFindings(&md, r.Findings)
	fmt.Fprintf(w, "# Readiness of namespace %s (ready: %v)\n\n%s", ns, r.Ready, md.String())
	for _, pr := range r.Proposals {
		fmt.Fprintf(w, "- proposal: %s replaces %s (--apply %s/%s, or --apply all)\n", pr.Ref(), pr.For, pr.For.Kind, pr.For.Name)
	}
	return nil
}
