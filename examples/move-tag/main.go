// Command move-tag prints what each revision tag reaches (its blast radius), the tags in risk order,
// and the plan of moving one tag to another revision. It changes nothing.
//
//	go run ./examples/move-tag [--kubeconfig F --context C | --from-dir DIR | --demo] [--tag prod-stable]
//	    [--revision 1-31-4] [--assume-installed 1.31.4] [--skip-restart] [--waive CODE,...] [-o markdown|yaml|json]
//
// On the embedded demo mesh only one revision runs, so --demo --assume-installed 1.31.4 plans as if
// revision 1-31-4 (1.31.4) were installed and ready, and moves the lowest-risk tag to it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/tags"
)

const synopsis = `Prints what each revision tag reaches (its blast radius), the tags in risk order, and the plan of
moving one tag to another revision. --assume-installed plans as if a ready revision of that version
were installed beside the running ones (the embedded demo mesh runs only 1-30-3).`

func main() {
	os.Exit(cli.Exit("move-tag", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}

func run(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	c := cli.NewCommand("move-tag", synopsis, stdout)
	var src cli.Source
	src.Register(c, true)
	tag := c.String(cli.Spec{Name: "tag", Arg: "NAME", Usage: "tag to move (default: the lowest-risk tag)", Example: "--tag prod-canary"}, "")
	rev := c.String(cli.Spec{Name: "revision", Arg: "REV", Usage: "revision to point it at (default: the --assume-installed revision)", Example: "--revision 1-31-4"}, "")
	assume := c.String(cli.Spec{Name: "assume-installed", Arg: "VERSION", Usage: "plan as if a ready revision of this version were installed", Example: "--demo --assume-installed 1.31.4"}, "")
	skip := c.Bool(cli.Spec{Name: "skip-restart", Usage: "do not restart the workloads the tag injects (they move at their next restart)", Example: "--skip-restart"})
	var cf cli.Common
	cf.Register(c)
	c.Sections = append(c.Sections, cli.ExitCodesSection("the plan is runnable"))
	if err := c.Parse(args); err != nil {
		return err
	}
	v, err := mesh.ParseVersion(*assume)
	if *assume != "" && err != nil {
		err = cli.UsageError("--assume-installed: %v", err)
	} else {
		err = nil
	}
	if err := errors.Join(err, cli.CheckName("tag", *tag, false), cli.CheckName("revision", *rev, false)); err != nil {
		return err
	}
	snap, source, err := src.Observe(ctx)
	if err != nil {
		return err
	}
	if *assume != "" {
		if _, ok := snap.Revision(v.RevisionName()); !ok && len(snap.Revisions) > 0 {
			// A snapshot is data: add the revision the way observation would see it once installed.
			r := snap.Revisions[0]
			r.Name, r.Deployment, r.Version, r.Image, r.HelmRelease = v.RevisionName(), "istiod-"+v.RevisionName(), v, "", ""
			snap.Revisions = append(snap.Revisions, r)
			snap.Normalize()
		}
		if *rev == "" {
			*rev = v.RevisionName()
		}
	}
	ranked := tags.Order(snap)
	switch {
	case len(ranked) == 0:
		return fmt.Errorf("the mesh has no revision tags")
	case *rev == "":
		return cli.UsageError("say where the tag goes: --revision REV (or --assume-installed VERSION)")
	case *tag == "":
		*tag = ranked[0].Radius.Tag
	}
	p, planErr := tags.MoveTag(snap, *tag, *rev, tags.MoveOptions{SkipRestart: *skip, Waive: cf.Waivers(), Today: cf.Date()})
	if p == nil {
		return planErr
	}
	p.Metadata.Source = source
	err = cf.Print(stdout, p, func(w io.Writer) error {
		fmt.Fprintln(w, "# Tags, lowest risk first")
		fmt.Fprintln(w)
		for _, r := range ranked {
			fmt.Fprintf(w, "- **%s** → %s: %s\n", r.Radius.Tag, r.Radius.Revision, r.Reason)
			for _, wl := range r.Radius.Workloads {
				fmt.Fprintf(w, "  - restarts %s\n", wl)
			}
			for _, g := range append(append([]mesh.ObjectRef(nil), r.Radius.Gateways...), r.Radius.Waypoints...) {
				fmt.Fprintf(w, "  - moves %s\n", g)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return cli.Verdict(p, planErr, c)
}
