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
	"flag"
	"fmt"
	"os"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/tags"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "move-tag:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("move-tag", flag.ContinueOnError)
	var src cli.Source
	src.Register(fs)
	tag := fs.String("tag", "", "tag to move (default: the lowest-risk tag)")
	rev := fs.String("revision", "", "revision to point it at (default: the --assume-installed revision)")
	assume := fs.String("assume-installed", "1.31.4", "plan as if a ready revision of this version were installed (empty: do not)")
	skip := fs.Bool("skip-restart", false, "do not restart the workloads the tag injects")
	out := fs.String("o", "markdown", "output: markdown, yaml or json")
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
	if *assume != "" {
		v, err := mesh.ParseVersion(*assume)
		if err != nil {
			return fmt.Errorf("--assume-installed: %w", err)
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
	if done, err := cli.WriteEncoded(os.Stdout, p, *out); done || err != nil {
		return err
	}
	fmt.Println("# Tags, lowest risk first")
	fmt.Println()
	for _, r := range ranked {
		fmt.Printf("- **%s** → %s: %s\n", r.Radius.Tag, r.Radius.Revision, r.Reason)
		for _, w := range r.Radius.Workloads {
			fmt.Printf("  - restarts %s\n", w)
		}
		for _, g := range append(append([]mesh.ObjectRef(nil), r.Radius.Gateways...), r.Radius.Waypoints...) {
			fmt.Printf("  - moves %s\n", g)
		}
	}
	fmt.Println()
	return plan.RenderMarkdown(os.Stdout, p)
}
