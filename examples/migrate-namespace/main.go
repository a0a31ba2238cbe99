// Command migrate-namespace moves one namespace from sidecars to ambient: it prints the readiness
// report and the plan as a Markdown runbook, asks, and applies it step by step; --rollback-to undoes
// the saved plan back to a step (its first step undoes it all). --from-dir only reports and plans.
//
//	go run ./examples/migrate-namespace --namespace shop --waypoint waypoint --apply all [--context C] [--from-dir DIR]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/execute"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/observe"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/migrate"
)

var (
	kubeContext = flag.String("context", "", "context of the kubeconfig ($KUBECONFIG or ~/.kube/config)")
	fromDir     = flag.String("from-dir", "", "observe kubectl get -o yaml output in this folder (report and plan only)")
	ns          = flag.String("namespace", "", "namespace to migrate (required)")
	waypoint    = flag.String("waypoint", "", "waypoint to create and use when the namespace names none")
	apply       = flag.String("apply", "", `proposals to apply: "all", or the objects they replace (Kind/name,...)`)
	del         = flag.String("delete", "", "more sidecar-era objects to delete after the backup (Kind/name,...)")
	backup      = flag.String("backup", "migrate-backup.json", "file the namespace's Istio and Gateway API objects are backed up to")
	waive       = flag.String("waive", "", "comma-separated waivable finding codes to accept")
	planFile    = flag.String("plan-file", "migrate.plan.yaml", "where the plan is saved, and read back by --rollback-to")
	rollbackTo  = flag.String("rollback-to", "", "undo the saved plan back to this step, inclusive (waypoint, restart, ...)")
	yes         = flag.Bool("yes", false, "do not ask; health gates then rely on the mesh's own signals")
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	flag.Parse()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "\nmigrate-namespace:", err)
		os.Exit(1)
	}
}

func ask(q string) bool {
	fmt.Printf("\n%s [y/N] ", q)
	a := "y"
	if !*yes {
		a = ""
		_, _ = fmt.Scanln(&a)
	}
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(a)), "y")
}

func run(ctx context.Context) error {
	if *ns == "" {
		return errors.New("--namespace is required")
	}
	var c client.Client
	observeMesh := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Dir(ctx, *fromDir, observe.Options{})
	}
	if *fromDir == "" {
		cfg, err := config.GetConfigWithContext(*kubeContext)
		if err != nil {
			return err
		}
		dc, derr := discovery.NewDiscoveryClientForConfig(cfg)
		if c, err = client.New(cfg, client.Options{Scheme: observe.Scheme()}); errors.Join(err, derr) != nil {
			return errors.Join(err, derr)
		}
		observeMesh = func(ctx context.Context) (*mesh.Snapshot, error) {
			return observe.Live(ctx, c, observe.Options{ServerVersion: dc})
		}
	}
	newExecutor := func() (*execute.Executor, error) {
		healthy := execute.AllProbes(execute.MeshProbe(observeMesh, ambient.Gates()), func(_ context.Context, scope string) (bool, string, error) {
			return ask("is " + scope + " healthy? (check your dashboards)"), "the operator said no", nil
		}) // the mesh's own signals first, then the operator's
		approve := func(_ context.Context, st plan.Step) (bool, error) {
			return ask("approve: " + st.Approval.Message + "?"), nil
		}
		return execute.New(c, execute.Options{Gates: ambient.Gates(), Snapshot: observeMesh, Observer: progress, Approve: approve,
			Probes: map[string]execute.Probe{migrate.DefaultProbe: healthy}})
	}
	if *rollbackTo != "" {
		b, err := os.ReadFile(*planFile)
		p, derr := plan.Decode(b)
		ex, xerr := newExecutor()
		if err := errors.Join(err, derr, xerr); err != nil {
			return fmt.Errorf("--rollback-to needs the saved plan: %w", err)
		}
		if _, ok := p.Step(*rollbackTo); !ok {
			*rollbackTo = "migrate/" + *ns + "/" + *rollbackTo
		}
		res, err := ex.RollbackTo(ctx, p, *rollbackTo)
		fmt.Printf("\nrolled back %d steps\n", len(res))
		return err
	}

	snap, err := observeMesh(ctx)
	if err != nil {
		return err
	}
	opts := migrate.MigrateOptions{Delete: refs(*del)}
	if opts.BackupFile, err = filepath.Abs(*backup); err != nil {
		return err
	}
	for _, code := range strings.FieldsFunc(*waive, func(r rune) bool { return r == ',' }) {
		opts.Waive = append(opts.Waive, plan.Code(code))
	}
	if *waypoint != "" {
		opts.Waypoint, opts.CreateWaypoint = &migrate.WaypointRef{Name: *waypoint}, true
	}
	report, err := migrate.Readiness(snap, *ns, migrate.ReadinessOptions{Waypoint: opts.Waypoint, Waive: opts.Waive})
	if err != nil {
		return err
	}
	var md strings.Builder
	plan.RenderFindings(&md, report.Findings)
	fmt.Printf("# Readiness of namespace %s (ready: %v)\n\n%s", *ns, report.Ready, md.String())
	opts.Apply = refs(*apply)
	for _, pr := range report.Proposals {
		fmt.Printf("- proposal: %s replaces %s\n", pr.Ref(), pr.For)
		if *apply == "all" {
			opts.Apply = append(opts.Apply, pr.For)
		}
	}
	p, err := migrate.MigrateNamespace(snap, *ns, opts)
	if p == nil {
		return err
	}
	fmt.Println()
	if rerr := plan.RenderMarkdown(os.Stdout, p); rerr != nil || errors.Is(err, migrate.ErrBlocked) {
		return errors.Join(err, rerr)
	}
	b, _ := plan.EncodeYAML(p)
	if err := os.WriteFile(*planFile, b, 0o600); err != nil || *fromDir != "" {
		return err // observed from files: there is nothing to apply to
	}
	if !ask(fmt.Sprintf("plan saved to %s; apply its %d steps to namespace %s?", *planFile, len(p.Steps), *ns)) {
		return errors.New("not confirmed; nothing was changed")
	}
	ex, err := newExecutor()
	if err == nil {
		_, err = ex.Apply(ctx, p, execute.ApplyOptions{})
	}
	if err != nil {
		return fmt.Errorf("%w\n(undo what ran with --rollback-to %s)", err, p.Steps[0].ID)
	}
	fmt.Printf("\nnamespace %s runs in ambient; undo it with --rollback-to %s\n", *ns, p.Steps[0].ID)
	return nil
}

func progress(ev execute.Event) {
	fmt.Printf("[%d/%d] %s %s: %.160s\n", ev.Index, ev.Total, ev.Type, ev.StepID, ev.Message)
}

// refs reads "Kind/name,..." as objects of the namespace ("all" and "" as none).
func refs(list string) []mesh.ObjectRef {
	var out []mesh.ObjectRef
	for _, s := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' }) {
		if kind, name, ok := strings.Cut(strings.TrimSpace(s), "/"); ok {
			out = append(out, mesh.ObjectRef{Kind: kind, Namespace: *ns, Name: name})
		}
	}
	return out
}
