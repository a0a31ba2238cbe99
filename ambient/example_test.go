package ambient_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// The compatibility gate of an upgrade of the demo mesh to 1.31.4: a plan of findings and the one
// step that re-checks them when applied.
func ExampleComputeCompatibility() {
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		panic(err)
	}
	p, err := ambient.ComputeCompatibility(s, ambient.CompatibilityOptions{
		Target: mesh.MustParseVersion("1.31.4"),
		Today:  time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	})
	if errors.Is(err, plan.ErrBlocked) {
		fmt.Println("blocked:", plan.Codes(plan.Stopping(p.Findings)))
		return
	}
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Metadata.Name)
	fmt.Println("runnable:", p.Runnable())
	for _, st := range p.Steps {
		fmt.Println("step:", st.ID)
	}
	// Output:
	// compatibility of an upgrade to 1.31.4
	// runnable: true
	// step: prechecks
}

// An upgrade of the demo mesh to 1.31.4 with a new istiod revision and ztunnel node by node, three
// nodes at a time. The demo's postgres budget allows no disruption, so the plan waits for a waiver.
func ExamplePlanUpgrade() {
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		panic(err)
	}
	opts := ambient.UpgradeOptions{
		Target:  mesh.MustParseVersion("1.31.4"),
		Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 3},
		Today:   time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	}
	p, err := ambient.PlanUpgrade(s, opts)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Metadata.Name, "runnable:", p.Runnable())
	for _, f := range plan.Stopping(p.Findings)[:1] {
		fmt.Println("waits for:", f.Code, "on", f.Object)
	}

	opts.Waive = []plan.Code{plan.CodePDBBlocksDrain}
	p, err = ambient.PlanUpgrade(s, opts)
	if err != nil {
		panic(err)
	}
	fmt.Println("waived, runnable:", p.Runnable(), "steps:", len(p.Steps))
	for _, id := range []string{"prechecks", "base/upgrade", "istiod/1-31-4/install", "cni/upgrade"} {
		st, _ := p.Step(id)
		fmt.Printf("%s: %s\n", st.ID, st.Description)
	}
	// Output:
	// upgrade Istio 1.30.3 → 1.31.4 runnable: false
	// waits for: PDB_BLOCKS_DRAIN on PodDisruptionBudget data/postgres
	// waived, runnable: true steps: 99
	// prechecks: re-run the compatibility gate against the live cluster
	// base/upgrade: upgrade the Istio CRDs (release istio-base) to 1.31.4
	// istiod/1-31-4/install: install istiod revision 1-31-4 (1.31.4) beside 1-30-3 (1.30.3)
	// cni/upgrade: upgrade istio-cni in place from 1.30.3 to 1.31.4
}
