package ambient_test

import (
	"context"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/demo"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

func TestDemoUpgradePlanRBACIsDerivedFromItsSteps(t *testing.T) {
	snap, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 3}, Today: today})
	if err != nil {
		t.Fatal(err)
	}
	ps := plan.RequiredPermissions(p, plan.PermissionOptions{})
	golden(t, "upgrade/demo-revision-1.30-to-1.31.rbac.yaml", plan.RenderRBAC(ps, plan.RBACOptions{}))
}
