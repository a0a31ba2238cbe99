// Command upgrade plans the Istio ambient upgrade of a live cluster, prints the plan as a Markdown
// runbook, asks for confirmation and applies it, with one progress line per event. Ctrl-C stops it
// cleanly; --resume continues the saved plan from its journal.
//
//	go run ./examples/upgrade --kubeconfig ~/.kube/config [--context C] --target 1.31.4 [--yes]
//	    [--waive CODE,...] [--plan-file F] [--resume] [--dry-run]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/execute"
	"github.com/ambientkit/ambientkit/ambient/execute/helmsdk"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/observe"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "\nupgrade:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: the usual rules)")
	kubeContext := fs.String("context", "", "kubeconfig context")
	target := fs.String("target", "", "Istio version to reach (required unless --resume), e.g. 1.31.4")
	waive := fs.String("waive", "", "comma-separated waivable finding codes to accept")
	planFile := fs.String("plan-file", "ambientkit-upgrade.plan.yaml", "where the plan is saved, and read back by --resume")
	resume := fs.Bool("resume", false, "continue the saved plan from its journal instead of planning again")
	yes := fs.Bool("yes", false, "do not ask: apply, approve approval steps; health gates then rely on the mesh's own signals")
	dryRun := fs.Bool("dry-run", false, "change nothing; say what each step would do")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{CurrentContext: *kubeContext}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	c, cerr := client.New(cfg, client.Options{Scheme: observe.Scheme()})
	dc, derr := discovery.NewDiscoveryClientForConfig(cfg)
	if err := errors.Join(cerr, derr); err != nil {
		return err
	}
	live := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Live(ctx, c, observe.Options{ServerVersion: dc})
	}
	in := bufio.NewReader(os.Stdin)
	ask := func(q string) bool { // --yes answers yes to everything
		if *yes {
			return true
		}
		fmt.Printf("\n%s [y/N] ", q)
		a, _ := in.ReadString('\n')
		return strings.HasPrefix(strings.ToLower(strings.TrimSpace(a)), "y")
	}

	var p *plan.Plan
	if *resume {
		b, err := os.ReadFile(*planFile)
		if err != nil {
			return fmt.Errorf("--resume needs the saved plan: %w", err)
		}
		if p, err = plan.Decode(b); err != nil {
			return err
		}
	} else {
		snap, err := live(ctx)
		if err != nil {
			return err
		}
		v, err := mesh.ParseVersion(*target)
		if err != nil {
			return fmt.Errorf("--target: %w", err)
		}
		opts := ambient.UpgradeOptions{Target: v}
		for _, code := range strings.FieldsFunc(*waive, func(r rune) bool { return r == ',' || r == ' ' }) {
			opts.Waive = append(opts.Waive, plan.Code(code))
		}
		p, err = ambient.PlanUpgrade(snap, opts)
		if p == nil {
			return err
		}
		if rerr := plan.RenderMarkdown(os.Stdout, p); rerr != nil {
			return rerr
		}
		if errors.Is(err, ambient.ErrBlocked) {
			return err
		}
		b, _ := plan.EncodeYAML(p)
		if err := os.WriteFile(*planFile, b, 0o600); err != nil {
			return err
		}
		fmt.Printf("\nplan saved to %s\n", *planFile)
		if !*dryRun && !ask(fmt.Sprintf("apply these %d steps to context %q?", len(p.Steps), *kubeContext)) {
			return errors.New("not confirmed; nothing was changed")
		}
	}

	helm, herr := helmsdk.New(helmsdk.Options{Config: cfg})
	approve := func(_ context.Context, st plan.Step) (bool, error) {
		return ask("approve: " + st.Approval.Message + "?"), nil
	}
	healthy := execute.AllProbes(execute.MeshProbe(live), func(_ context.Context, scope string) (bool, string, error) {
		return ask("is the mesh healthy after " + scope + "? (check your dashboards)"), "the operator said no", nil
	}) // the mesh's own signals first, then the operator's
	ex, err := execute.New(c, execute.Options{Helm: helm, Snapshot: live, DryRun: *dryRun, Observer: progress, Approve: approve,
		Probes: map[string]execute.Probe{"mesh-health": healthy}})
	if err := errors.Join(herr, err); err != nil {
		return err
	}
	res, err := ex.Apply(ctx, p, execute.ApplyOptions{Resume: *resume})
	if err != nil {
		return fmt.Errorf("%w\n(fix the cause, then run again with --resume --plan-file %s)", err, *planFile)
	}
	fmt.Printf("\ndone: %d steps, resumed=%v, dry run=%v\n", len(res.Steps), res.Resumed, res.DryRun)
	return nil
}

// progress prints one line per event; progress inside a step rewrites the current line.
func progress(ev execute.Event) {
	end := "\n"
	if ev.Type == execute.EventStepProgress || ev.Type == execute.EventRetry {
		end = ""
	}
	fmt.Printf("\r\033[K[%d/%d] %s %s: %.160s%s", ev.Index, ev.Total, ev.Type, ev.StepID, ev.Message, end)
	if ev.Type == execute.EventDryRun {
		fmt.Printf("    %s\n", strings.Join(ev.Changes, "\n    "))
	}
}
