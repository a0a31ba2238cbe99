package ambient

import (
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// PlanUpgradeSimulated is PlanUpgrade, with the mesh each hop's steps leave as the planner simulates
// it.
func PlanUpgradeSimulated(s *mesh.Snapshot, opts UpgradeOptions) (*plan.Plan, []*mesh.Snapshot, error) {
	var after []*mesh.Snapshot
	p, err := planUpgrade(s, opts, &after)
	return p, after, err
}
