package compat

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// advisoryGatewayRevisionChange: when a Gateway's revision changes (its istio.io/rev label, or the
// tag it follows moves), an affected istiod that owned it stops emitting its config at once and
// pushes empty configuration to its pods still connected, for about 30 s until the Deployment has
// rolled onto the new revision (istio/istio#59959, fixed by #60158; release-1.30
// releasenotes/notes/59959.yaml). The ranges are the advisories data's.
const advisoryGatewayRevisionChange = "istio#59959"

// GatewayRevisionChangeFindings returns, for a change that moves gateways (Gateway API gateways and
// waypoints, by reference) off revision from, one finding per gateway when from's istiod runs a
// version affected by the config drop, with the patch of its line that has the fix. Nil when from
// is unknown or not affected.
func GatewayRevisionChangeFindings(s *mesh.Snapshot, from string, gateways []mesh.ObjectRef) []plan.Finding {
	r, ok := s.Revision(from)
	if !ok || r.Version.IsZero() {
		return nil
	}
	a, ok := advisories.Default().Advisory(advisoryGatewayRevisionChange)
	if !ok || !a.Affects(r.Version) {
		return nil
	}
	remedy := "no patch of its line has the fix: move the gateways one at a time outside busy hours, or upgrade the revision to a fixed minor first"
	details := map[string]string{"advisory": a.ID, "revision": r.Name, "istiod": r.Version.String()}
	if fix, ok := a.FixedPatch(r.Version); ok {
		remedy = fmt.Sprintf("upgrade revision %s in place to %s or later before moving its gateways, or move them one at a time outside busy hours", r.Name, fix.Version)
		details["fixedIn"] = fix.Version.String()
	}
	var out []plan.Finding
	for _, g := range gateways {
		out = append(out, plan.Finding{Code: plan.CodeGatewayRevisionChangeDropsConfig, Severity: plan.Waivable, Object: g,
			Related: []mesh.ObjectRef{{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}},
			Message: fmt.Sprintf("%s leaves revision %s, whose istiod %s drops its config as soon as it no longer owns it: the gateway's pods get empty configuration and fail requests until they have rolled onto the new revision (about 30 s; %s)",
				g, r.Name, r.Version, a.ID),
			Remedy: remedy, Details: details})
	}
	return out
}
