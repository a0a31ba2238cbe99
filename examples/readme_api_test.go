package examples_test

import (
	"context"
	"errors"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"
	"github.com/ambientkit/ambientkit/tags"
	"github.com/ambientkit/ambientkit/ztunnel"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

// readmeAPI is the README's Go block, compiled: TestTheREADMEsGoBlockIsTheBodyOfReadmeAPI holds the
// block equal to the lines between the README markers, so the README shows code that builds. c is
// a client.NewWithWatch (waits wake on its watches), discovery the cluster's version, helm the Helm
// SDK adapter (helmsdk.New), progress the embedder's own observer.
func readmeAPI(ctx context.Context, c client.WithWatch, discovery observe.VersionGetter, helm execute.HelmClient, progress func(execute.Event)) error {
	// README begin
	live := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Live(ctx, c, observe.Options{ServerVersion: discovery}) // or observe.Dir, demo.Snapshot
	}
	snap, err := live(ctx)
	if err != nil {
		return err
	}
	v, today := mesh.MustParseVersion("1.31.4"), time.Now() // end of life is judged at today
	report, err := ambient.CompatibilityReport(snap, ambient.CompatibilityOptions{Target: v, Today: today})
	if err != nil {
		return err
	}
	ambient.RenderCompatibility(os.Stdout, report) // the gate every primitive runs, per component and node
	show := func(q *plan.Plan, err error) error {  // every primitive returns a plan, and plan.ErrBlocked with it
		if err != nil && !errors.Is(err, plan.ErrBlocked) {
			return err
		}
		return runbook.Render(os.Stdout, q) // the runbook: summary, findings, steps
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{
		Target:  v,                                       // chained through 1.30.x when needed
		Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 5}, // waves of 5 nodes: cordon, drain, swap, wait, uncordon
		Charts:  ambient.ChartSource{Dir: "/srv/charts"}, // or Repository (a mirror), OCI; default: Istio's
		Today:   today,
	})
	if errors.Is(err, plan.ErrBlocked) {
		runbook.Render(os.Stdout, p) // its findings and blocked steps say why
	}
	if err != nil {
		return err
	}
	if err := errors.Join(
		show(ztunnel.BlueGreenZtunnel(snap, ztunnel.BlueGreenOptions{Target: v, Strategy: ztunnel.BlueGreen{BatchSize: 10}})),
		show(tags.MoveTag(snap, "prod", "1-31-4", tags.MoveOptions{})),
		show(migrate.MigrateNamespace(snap, "payments", migrate.Options{BackupFile: "/var/backups/payments.json"})),
	); err != nil {
		return err
	}
	doc, err := plan.EncodeYAML(p) // the versioned plan document, to review and keep; plan.Decode reads it
	if err != nil {
		return err
	}
	os.Stdout.Write(doc)
	hash, err := execute.PlanHash(p)
	if err != nil {
		return err
	}
	ex, err := execute.New(c, execute.Options{Helm: helm, Snapshot: live,
		Gates:    ambient.Gates(), // the gate and revision references, judged as the planner judged them
		Observer: execute.Observers(progress, execute.KubernetesEvents(c, execute.KubernetesEventsOptions{PlanHash: hash})),
	})
	if err != nil {
		return err
	}
	_, err = ex.Apply(ctx, p, execute.ApplyOptions{}) // errors.Is(err, execute.ErrPlanStale), ErrChartMissing, ...
	return err
	// README end
}
