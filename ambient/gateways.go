package ambient

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// gateways upgrades the gateway chart's releases (a release pinned to an old revision by name moves
// to the new one) and restarts gateway Deployments not installed with Helm, so injection gives them
// the new proxy.
func (u *upgrader) gateways(s *mesh.Snapshot, target mesh.Version, prefix, newRev string) {
	b := u.b
	for _, g := range s.Gateways {
		if g.Kind != mesh.GatewayKindDeployment {
			continue
		}
		h, ok := b.Release(s, "gateway", g.HelmRelease)
		if !ok {
			b.Add(plan.Step{ID: prefix + "gateways/" + g.Namespace + "/" + g.Name + "/restart",
				Description: fmt.Sprintf("restart gateway %s/%s so injection gives it the %s proxy", g.Namespace, g.Name, target),
				Reason:      "it was not installed with Helm; a restart re-injects it through its tag", Risk: plan.RiskHigh,
				Restart:        &plan.Restart{Workloads: []mesh.ObjectRef{{Kind: "Deployment", Namespace: g.Namespace, Name: g.Name}}, BatchSize: 1},
				Postconditions: []plan.Check{steps.DeploymentReady(g.Namespace, g.Name)}})
			continue
		}
		set := map[string]any{}
		if pinned, _ := h.Values["revision"].(string); pinned != "" && newRev != "" {
			if _, isRev := s.Revision(pinned); isRev {
				set["revision"] = newRev
			}
		}
		owner := newRev
		if owner == "" {
			owner = g.Revision
		}
		id := prefix + "gateways/" + g.Namespace + "/" + h.Name
		b.Add(b.Upgrade(id+"/upgrade", fmt.Sprintf("upgrade gateway release %s/%s to %s", g.Namespace, h.Name, target),
			"gateways are data plane: they move after the control plane they connect to, one at a time", h, target, set, plan.RiskHigh,
			steps.DeploymentReady(g.Namespace, g.Name),
			plan.NewCheck(g.Ref(), plan.GatewayOwnerArgs{Revision: owner}, fmt.Sprintf("%s is owned by revision %s", g.Ref(), owner))))
		b.Add(plan.Step{ID: id + "/health", Description: fmt.Sprintf("health gate after gateway %s/%s", g.Namespace, g.Name),
			Risk: plan.RiskNone, HealthGate: &plan.HealthGate{Probe: b.Probe(), Scope: "gateway " + g.Namespace + "/" + g.Name, SettleSeconds: 60}})
	}
}

// waypointOwners verifies that waypoints and Gateway API gateways follow their tags to the new
// revision: istiod of the owning revision redeploys them.
func (u *upgrader) waypointOwners(after *mesh.Snapshot, prefix string) {
	var checks []plan.Check
	for _, g := range after.Gateways {
		if g.Kind != mesh.GatewayKindAPI || g.Revision == "" {
			continue
		}
		checks = append(checks, plan.NewCheck(g.Ref(), plan.GatewayOwnerArgs{Revision: g.Revision}, fmt.Sprintf("%s is owned by revision %s", g.Ref(), g.Revision)))
	}
	if len(checks) == 0 {
		return
	}
	u.b.Add(plan.Step{ID: prefix + "waypoints/verify", Description: "verify that waypoints and Gateway API gateways follow their tags",
		Reason: "istiod of the owning revision redeploys them; an unexpected owner means a label pins them", Risk: plan.RiskNone,
		Verify: &plan.Verification{Checks: checks}})
}
