package ambient_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestAnUpgradeOfAReleaseHelmLeftPendingOrFailedIsBlocked: Helm refuses a release whose latest
// record is pending, and a failed one is half-applied; the plan stops with a finding naming the
// release, its status and the commands that repair it. A deployed or superseded one is planned.
func TestAnUpgradeOfAReleaseHelmLeftPendingOrFailedIsBlocked(t *testing.T) {
	tests := []struct {
		status  string
		blocked bool
	}{
		{"pending-upgrade", true},
		{"pending-install", true},
		{"pending-rollback", true},
		{"failed", true},
		{"uninstalling", true},
		{"deployed", false},
	}
	for _, tc := range tests {
		t.Run("a release "+tc.status, func(t *testing.T) {
			s, err := demo.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var rel *mesh.HelmRelease
			for i := range s.HelmReleases {
				if s.HelmReleases[i].Chart == "cni" {
					rel = &s.HelmReleases[i]
				}
			}
			if rel == nil {
				t.Fatal("the demo mesh has no istio-cni release")
			}
			rel.Status = tc.status
			p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"),
				Waive: []plan.Code{plan.CodeNamespaceSidecarAndAmbient, plan.CodePDBBlocksDrain}})
			var found *plan.Finding
			for i := range p.Findings {
				if p.Findings[i].Code == plan.CodeHelmReleaseNotDeployed {
					found = &p.Findings[i]
				}
			}
			if !tc.blocked {
				if err != nil || found != nil {
					t.Fatalf("a %s release: err %v, finding %v; want it planned", tc.status, err, found)
				}
				return
			}
			if !errors.Is(err, plan.ErrBlocked) || found == nil {
				t.Fatalf("a %s release: err %v, finding %v; want the plan blocked by %s", tc.status, err, found, plan.CodeHelmReleaseNotDeployed)
			}
			if found.Severity != plan.Blocking || found.Object.Name != rel.Name || found.Details["status"] != tc.status ||
				!strings.Contains(found.Remedy, "helm history "+rel.Name+" -n "+rel.Namespace) || !strings.Contains(found.Remedy, "helm rollback "+rel.Name) {
				t.Errorf("the finding does not name the release, its status and the repair: %+v", *found)
			}
		})
	}
}
