package compat

import (
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// environmentRules are the gate's rules over what surrounds the mesh and what ambient changes
// about it: NetworkPolicies of ambient namespaces and the primary CNI (network.go), istio-cni's
// configuration (cniconfig.go), waypoint binding and routes (waypointbind.go). They came with the
// corpus of broken states (testdata/broken), each answering states main was silent about.
func environmentRules(s *mesh.Snapshot, target mesh.Version) []plan.Finding {
	var out []plan.Finding
	out = append(out, networkPolicyRules(s)...)
	out = append(out, primaryCNIRules(s)...)
	out = append(out, cniConfigRules(s, target)...)
	out = append(out, waypointRules(s)...)
	return out
}
