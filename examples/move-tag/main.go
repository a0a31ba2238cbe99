// Command move-tag prints what each revision tag reaches (its blast radius), the tags in risk order,
// and the plan of moving one tag to another revision.
//
//	go run ./examples/move-tag [--tag prod-stable] [--revision 1-31-4] [--assume-installed 1.31.4]
//	    [--skip-restart] [-o markdown|yaml|json] [--from-dir DIR | --kubeconfig F --context C]
//
// On the embedded demo mesh only one revision runs, so by default the example assumes revision 1-31-4
// (1.31.4) is installed and ready, and plans the move of the lowest-risk tag to it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/tags"
)

const synopsis = `Prints what each revision tag reaches (its blast radius), the tags in risk order, and the plan of
moving one tag to another revision. With no flags it works on the embedded demo mesh, assuming a
ready revision 1-31-4 is installed beside 1-30-3.`

func main() {
	os.Exit(cli.Exit("move-tag", run(context.Background(), os.Args[1:], os.Stdout), os.Stderr))
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	c := cli.NewCommand("move-tag", synopsis, stdout)
	var src cli.Source
	src.Register(c, true)
	tag := c.String(cli.Spec{Name: "tag", Arg: "NAME", Usage: "tag to move (default: the lowest-risk tag)", Example: "--tag prod-canary"}, "")
	rev := c.String(cli.Spec{Name: "revision", Arg: "REV", Usage: "revision to point it at (default: the --assume-installed revision)", Example: "--revision 1-31-4"}, "")
	assume := c.String(cli.Spec{Name: "assume-installed", Arg: "VERSION", Usage: "plan as if a ready revision of this version were installed (empty: do not)", Example: "--assume-installed ''"}, "1.31.4")
	skip := c.Bool(cli.Spec{Name: "skip-restart", Usage: "do not restart the workloads the tag injects (they move at their next restart)", Example: "--skip-restart"})
	out := c.String(cli.Spec{Name: "o", Arg: "markdown|yaml|json", Usage: "how the plan is printed", Example: "-o yaml"}, "markdown")
	c.Sections = append(c.Sections, cli.ExitCodesSection("the plan was printed", false))
	if err := c.Parse(args); err != nil {
		return err
	}
	pf := cli.Plan{Output: *out}
	if err := pf.CheckOutput(); err != nil {
		return err
	}
	snap, err := src.Observe(ctx)
	if err != nil {
		return err
	}
	if *assume != "" {
		v, err := mesh.ParseVersion(*assume)
		if err != nil {
			return fmt.Errorf("%w: --assume-installed: %v", cli.ErrUsage, err)
		}
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
	if len(ranked) == 0 {
		return fmt.Errorf("the mesh has no revision tags")
	}
	if *tag == "" {
		*tag = ranked[0].Radius.Tag
	}
	p, err := tags.MoveTag(snap, *tag, *rev, tags.MoveOptions{SkipRestart: *skip})
	if err != nil {
		return err
	}
	return pf.Print(stdout, p, func(w io.Writer) error {
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
}
