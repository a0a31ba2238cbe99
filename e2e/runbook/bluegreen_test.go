//go:build e2e

package runbook

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// The blue-green the runbook carries out: a green ztunnel at the next patch beside istiod 1.30.3.
const (
	greenVersion = "1.30.4"
	greenRelease = "ztunnel-green"
)

// TestBlueGreenRunbookRunsByHand plans a blue-green replacement of ztunnel (1.30.3 → 1.30.4) on a
// 4-node kwok cluster (2 general, 2 batch), green capacity from relabelling one node of each pool,
// batches of one, and runs it as TestNodeByNodeRunbookRunsByHand does: every command and printed
// check of the full runbook by hand on one cluster, the executor on a twin, the end states
// (endState, with the green ztunnel in place of the blue) compared.
func TestBlueGreenRunbookRunsByHand(t *testing.T) {
	ctx := context.Background()
	byHand, byExecutor := runTwins(ctx, t, twins{
		name: "bg", cidrs: [2]string{"127.99.0.0/16", "127.100.0.0/16"}, nodesPerPool: 2,
		plan: planBlueGreen,
		// Each blue node is at least cordoned and drained, each relabelled node drained and labelled.
		minCommands: 4 * 2,
	})
	if byHand == nil || byExecutor == nil {
		return
	}
	if d := cmp.Diff(byExecutor, byHand); d != "" {
		t.Errorf("the state the runbook leaves differs from the executor's (-executor +by hand):\n%s", d)
	}
	if byHand.Ztunnel.Version != greenVersion {
		t.Errorf("ztunnel after the runbook: %+v, want green at %s alone", byHand.Ztunnel, greenVersion)
	}
}

// planBlueGreen plans the blue-green on h and fails the test unless the plan is runnable.
func planBlueGreen(ctx context.Context, t *testing.T, h *harness.Harness) *plan.Plan {
	t.Helper()
	paths, err := h.Helm.StampCharts(filepath.Join(h.Cluster.RunDir(), "charts-"+greenVersion), greenVersion)
	if err != nil {
		t.Fatal(err)
	}
	// Pinning blue upgrades its release at its running version: that version's charts, by chart@version.
	running, err := h.Helm.StampCharts(filepath.Join(h.Cluster.RunDir(), "charts-"+harness.IstioVersion), harness.IstioVersion)
	if err != nil {
		t.Fatal(err)
	}
	for chart, dir := range running {
		paths[chart+"@"+harness.IstioVersion] = dir
	}
	snap, err := observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
	if err != nil {
		t.Fatal(err)
	}
	relabel := []string{h.Nodes[harness.PoolGeneral][0], h.Nodes[harness.PoolBatch][0]}
	p, err := ztunnel.BlueGreenZtunnel(snap, ztunnel.BlueGreenOptions{
		Target: mesh.MustParseVersion(greenVersion),
		Strategy: ztunnel.BlueGreen{BatchSize: 1, LocalStorage: ztunnel.LocalStorageEvict,
			Capacity: ztunnel.GreenCapacity{Relabel: relabel}},
		Charts: ambient.ChartSource{Paths: paths},
		Values: map[string]map[string]any{greenRelease: {"tag": greenVersion, "global": map[string]any{"tag": greenVersion}}},
	})
	if err != nil {
		t.Fatalf("BlueGreenZtunnel: %v", err)
	}
	if !p.Runnable() {
		for _, f := range p.Findings {
			t.Logf("finding %s %s: %s", f.Severity, f.Code, f.Message)
		}
		t.Fatalf("the blue-green plan is not runnable: stopping findings %v", plan.Stopping(p.Findings))
	}
	return p
}
