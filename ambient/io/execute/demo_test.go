package execute_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// The planner's own plan for the embedded demo mesh, observed live from a fake cluster seeded with
// the demo's objects, passes the staleness check and dry-runs (up to a blocked step, if it has one).
func TestTheDemoUpgradePlanDryRunsAgainstALiveObservationOfTheDemoCluster(t *testing.T) {
	ctx := context.Background()
	objs, err := demo.Objects()
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, objs...)
	snap, err := observe.Live(ctx, w.Base, observe.Options{})
	if err != nil {
		t.Fatalf("observe the fake demo cluster: %v", err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: mesh.MustParseVersion(toV),
		Waive: []plan.Code{plan.CodeNamespaceSidecarAndAmbient, plan.CodePDBBlocksDrain}})
	if err != nil {
		t.Fatalf("PlanUpgrade: %v", err)
	}
	var rels []execute.Release
	for _, h := range snap.HelmReleases {
		rels = append(rels, execute.Release{Name: h.Name, Namespace: h.Namespace, Chart: h.Chart, ChartVersion: h.ChartVersion,
			Revision: h.Revision, Status: h.Status, Values: h.Values})
	}
	w.Helm = w.NewHelm(rels...)
	until := ""
	for i, st := range p.Steps {
		if st.Blocked != "" {
			until = p.Steps[i-1].ID
			break
		}
	}
	e := w.Executor(func(o *execute.Options) {
		o.DryRun = true
		o.Snapshot = func(ctx context.Context) (*mesh.Snapshot, error) {
			return observe.Live(ctx, w.Client, observe.Options{})
		}
	})
	before := w.State()
	_, err = e.Apply(ctx, p, execute.ApplyOptions{})
	if until != "" && (err == nil || !strings.Contains(err.Error(), "is blocked")) {
		t.Fatalf("Apply of the whole demo plan: %v, want it refused for its blocked step", err)
	}
	if until == "" {
		t.Logf("the plan has no blocked step; dry-running all %d steps", len(p.Steps))
	}
	res, err := e.Apply(ctx, p, execute.ApplyOptions{Until: until})
	if err != nil {
		t.Fatalf("dry run up to %s: %v", until, err)
	}
	kinds := map[plan.Kind]int{}
	for _, sr := range res.Steps {
		if sr.Status != execute.StatusWouldRun {
			t.Errorf("step %s: %s", sr.StepID, sr.Status)
		}
		kinds[sr.Kind]++
	}
	t.Logf("dry run of %d of %d demo steps (until %q): %v", len(res.Steps), len(p.Steps), until, kinds)
	if eff := w.Effects(); len(eff) != 0 {
		t.Errorf("the dry run changed the cluster: %v", eff)
	}
	if d := cmp.Diff(before, w.State()); d != "" {
		t.Errorf("the dry run changed the cluster (-before +after):\n%s", d)
	}
	for _, sr := range res.Steps {
		if sr.Kind == plan.KindDrain {
			t.Logf("%s: %s", sr.StepID, sr.Changes[0])
			break
		}
	}
}
