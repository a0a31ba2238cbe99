package ambient_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

func TestPlanUpgradeOfTheDemoMesh(t *testing.T) {
	snap, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 3}, Today: today})
	if err != nil {
		t.Fatal(err)
	}
	y, err := plan.EncodeYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "upgrade/demo-revision-1.30-to-1.31.plan.yaml", y)
	var md strings.Builder
	if err := runbook.Render(&md, p); err != nil {
		t.Fatal(err)
	}
	golden(t, "upgrade/demo-revision-1.30-to-1.31.plan.md", []byte(md.String()))
	// The RBAC a run of it needs, derived from its steps.
	golden(t, "upgrade/demo-revision-1.30-to-1.31.rbac.yaml", rbac.Render(rbac.RequiredPermissions(p, rbac.Options{}), rbac.RenderOptions{}))
	assertHopsComplete(t, p)

	// The demo's postgres budget allows no disruption: the plan names it and is not runnable until
	// the finding is waived; waived, it is.
	if p.Runnable() || !containsCode(plan.Codes(plan.Stopping(p.Findings)), plan.CodePDBBlocksDrain) {
		t.Fatalf("the demo plan must wait for PDB_BLOCKS_DRAIN to be waived; stopping: %v", plan.Codes(plan.Stopping(p.Findings)))
	}
	waived, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 3}, Today: today, Waive: []plan.Code{plan.CodePDBBlocksDrain}})
	if err != nil || !waived.Runnable() {
		t.Fatalf("waived plan should be runnable: %v %v", err, plan.Stopping(waived.Findings))
	}
	// Every tag moves, and the old revision is removed at the end with nothing blocking it.
	for _, id := range []string{"tags/canary/move", "tags/prod-stable/move", "tags/default/move", "istiod/1-30-3/remove"} {
		st, ok := p.Step(id)
		if !ok || st.Blocked != "" {
			t.Errorf("step %s missing or blocked: %+v", id, st)
		}
	}
}
