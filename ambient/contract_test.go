package ambient_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"
	"github.com/ambientkit/ambientkit/tags"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// primitive is one of the five public primitives, called through the one contract they share.
type primitive struct {
	name   string
	canary bool // the mesh needs a second revision (a tag needs somewhere to move)
	call   func(s *mesh.Snapshot) (*plan.Plan, error)
}

// theFive are the design card's primitives, each on the demo mesh.
var theFive = []primitive{
	{"ComputeCompatibility", false, func(s *mesh.Snapshot) (*plan.Plan, error) {
		return ambient.ComputeCompatibility(s, ambient.CompatibilityOptions{Target: v("1.31.4"), Today: today})
	}},
	{"PlanUpgrade", false, func(s *mesh.Snapshot) (*plan.Plan, error) {
		return ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: v("1.31.4"), Today: today, Waive: []plan.Code{plan.CodePDBBlocksDrain}})
	}},
	{"BlueGreenZtunnel", false, func(s *mesh.Snapshot) (*plan.Plan, error) {
		return ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.4"), Today: today,
			Strategy: ztunnel.BlueGreen{BatchSize: 2, Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}},
				LocalStorage: ztunnel.LocalStorageEvict},
			Waive: []plan.Code{plan.CodePDBBlocksDrain}})
	}},
	{"MoveTag", true, func(s *mesh.Snapshot) (*plan.Plan, error) {
		return tags.MoveTag(s, "canary", "1-31-4", tags.MoveOptions{Today: today})
	}},
	{"MigrateNamespace", false, func(s *mesh.Snapshot) (*plan.Plan, error) {
		// orders: payments' L7 ALLOW policy has no Service a waypoint could serve, so no plan can keep it.
		return migrate.MigrateNamespace(s, "orders", migrate.Options{BackupFile: "/var/backups/orders.json", Today: today,
			Waypoint: &migrate.WaypointRef{Name: "waypoint"}, CreateWaypoint: true})
	}},
}

// demoMesh is the demo mesh, with a ready istiod revision 1-31-4 beside 1-30-3 when canary is set.
func demoMesh(t *testing.T, canary bool) *mesh.Snapshot {
	t.Helper()
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !canary {
		return s
	}
	r := s.Revisions[0]
	r.Name, r.Deployment, r.Version, r.HelmRelease = "1-31-4", "istiod-1-31-4", v("1.31.4"), "istiod-1-31-4"
	s.Revisions = append(s.Revisions, r)
	s.Normalize()
	return s
}

func TestEveryPrimitiveKeepsTheOneContract(t *testing.T) {
	for _, pr := range theFive {
		t.Run(pr.name+" on a healthy mesh returns a plan that opens with the gate and carries its fingerprint", func(t *testing.T) {
			s := demoMesh(t, pr.canary)
			p, err := pr.call(s)
			if err != nil && !errors.Is(err, plan.ErrBlocked) {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				t.Fatalf("%s blocked the healthy mesh: %v", pr.name, plan.Codes(plan.Stopping(p.Findings)))
			}
			assertContract(t, s, p)
			if len(p.Steps) == 0 || p.Steps[0].Verify == nil || p.Steps[0].Verify.Checks[0].Type != plan.CheckFindingsClear {
				t.Errorf("the plan does not open with the compatibility gate's prechecks step: %+v", p.Steps[:min(1, len(p.Steps))])
			}
		})
		t.Run(pr.name+" on a mesh the gate stops is blocked at plan time, with the plan and its findings", func(t *testing.T) {
			s := demoMesh(t, pr.canary)
			for i := range s.Revisions {
				s.Revisions[i].ReadyReplicas = 0 // no istiod is ready: the gate's ISTIOD_NOT_READY
			}
			p, err := pr.call(s)
			if !errors.Is(err, plan.ErrBlocked) {
				t.Fatalf("err = %v, want one wrapping plan.ErrBlocked", err)
			}
			if p == nil {
				t.Fatal("a blocked primitive returns its plan, so callers can show why")
			}
			assertContract(t, s, p)
			if len(p.Steps) != 0 {
				t.Errorf("a blocked plan has %d steps; it has none", len(p.Steps))
			}
			if !containsCode(plan.Codes(plan.Stopping(p.Findings)), plan.CodeIstiodNotReady) {
				t.Errorf("stopping codes %v lack %s", plan.Codes(plan.Stopping(p.Findings)), plan.CodeIstiodNotReady)
			}
		})
		t.Run(pr.name+" refuses a nil snapshot as invalid options, without a plan", func(t *testing.T) {
			p, err := pr.call(nil)
			if !errors.Is(err, plan.ErrInvalidOptions) || p != nil {
				t.Fatalf("plan %v, err %v; want no plan and plan.ErrInvalidOptions", p, err)
			}
		})
	}
}

// assertContract checks what every primitive's plan holds: a valid document for the snapshot it
// was made from, findings with known codes, sorted.
func assertContract(t *testing.T, s *mesh.Snapshot, p *plan.Plan) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Errorf("invalid plan: %v", err)
	}
	if p.Metadata.Fingerprint != s.Fingerprint() {
		t.Errorf("fingerprint %s, want the snapshot's %s", p.Metadata.Fingerprint, s.Fingerprint())
	}
	sorted := append([]plan.Finding(nil), p.Findings...)
	plan.SortFindings(sorted)
	for i, f := range p.Findings {
		if !plan.KnownCode(f.Code) {
			t.Errorf("finding %d has unknown code %q", i, f.Code)
		}
		if sorted[i].Code != f.Code || sorted[i].Object != f.Object {
			t.Errorf("findings are not sorted at %d: %s before %s", i, f.Code, sorted[i].Code)
			break
		}
	}
}

func TestBlueGreenOnAMeshWhoseGateFailsIsBlockedAtPlanTime(t *testing.T) {
	s := demoMesh(t, false)
	// The CNI runs a minor ahead of every control plane: the gate's CNI_AHEAD_OF_CONTROL_PLANE, a
	// rule of the upgrade gate that blue-green did not run before it planned.
	s.CNI.Version = v("1.32.0")
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.4"), Today: today,
		Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}}})
	if !errors.Is(err, plan.ErrBlocked) || p == nil || len(p.Steps) != 0 {
		t.Fatalf("err = %v, plan %v: want blocked at plan time with the findings and no steps", err, p)
	}
	if !containsCode(plan.Codes(plan.Stopping(p.Findings)), plan.CodeCNIAheadOfControlPlane) {
		t.Errorf("stopping codes %v lack %s", plan.Codes(plan.Stopping(p.Findings)), plan.CodeCNIAheadOfControlPlane)
	}
}
