package ambient_test

import (
	"errors"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func TestAnInPlaceBlueGreenUpgradeOfAnIstiodWithoutHelmIsBlockedOnGreensTrust(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 4)
	s.NodePools = []mesh.NodePool{{Name: "general"}, {Name: "batch"}}
	s.Revisions[0].HelmRelease = ""
	var keep []mesh.HelmRelease
	for _, h := range s.HelmReleases {
		if h.Chart != "istiod" {
			keep = append(keep, h)
		}
	}
	s.HelmReleases = keep
	s.Normalize()
	p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: v("1.31.4"), Strategy: ambient.StrategyInPlace,
		Ztunnel: ambient.ZtunnelBlueGreen{Capacity: ambient.ZtunnelGreenCapacity{NodePools: []string{"general", "batch"}}},
		Waive:   []plan.Code{plan.CodeHelmReleaseMissing, plan.CodeIstiodDiscoveryUnknown}})
	if !errors.Is(err, plan.ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	for _, f := range p.Findings {
		if f.Code == plan.CodeIstiodTrustNotPlannable && f.Details["account"] == "ztunnel-green/ztunnel-green" && f.Details["revision"] == "1-30-3" {
			return
		}
	}
	t.Errorf("no %s for green on revision 1-30-3: %v", plan.CodeIstiodTrustNotPlannable, plan.Codes(p.Findings))
}
