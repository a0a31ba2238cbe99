package compat

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// The verdicts of the control-plane operations (upgrade, tag move, ztunnel swap) on each
// configuration object: which istiod processes it before and after, and what the code cannot tell.
// Namespace migration judges its own scope (package migrate).

// UnknownKind judges an object whose kind is not in mesh.ConfigKinds: a CRD newer than the code,
// whose effects it cannot tell. ok is false for a known kind.
func UnknownKind(o mesh.ConfigObject) (outcome plan.Outcome, reason string, ok bool) {
	if _, known := mesh.KnownConfigKind(o.Group, o.Kind); known {
		return "", "", false
	}
	return plan.NotAssessed, fmt.Sprintf("%s.%s is a kind ambientkit does not know (a CRD newer than it): what the operation does to it is not assessed; check it by hand", o.Kind, o.Group), true
}

// envoyFilterReason: EnvoyFilter patches the Envoy configuration istiod generates; istio/api says
// its patches must be watched across proxy upgrades (networking/v1alpha3/envoy_filter.proto@v1.32.0,
// "NOTE 1"). Nothing here reads the patches against the new version's configuration.
func envoyFilterReason(to string) string {
	return fmt.Sprintf("an EnvoyFilter patches the Envoy configuration istiod generates, which changes between proxy versions; whether its patches still match under %s is not assessed: try it on the new revision before traffic moves there", to)
}

// Accounting returns the Finalize accounting of an operation on s that changes the control plane
// from before to after (after is the planner's simulation of the mesh once the plan has run; s
// when nothing is simulated). what names the operation in reasons ("the upgrade to 1.31.4").
// Every configuration object is in scope: istiod processes them all.
func Accounting(before, after *mesh.Snapshot, what, proxy string) *plan.Accounting {
	labels := before.ConfigRevisionLabels()
	gatewaysAfter := map[mesh.ObjectRef]mesh.Gateway{}
	for _, g := range after.Gateways {
		gatewaysAfter[g.Ref()] = g
	}
	gatewaysBefore := map[mesh.ObjectRef]mesh.Gateway{}
	for _, g := range before.Gateways {
		gatewaysBefore[g.Ref()] = g
	}
	return &plan.Accounting{
		Objects: before.ConfigObjects(),
		Unread:  before.Observation.Unread,
		Judge: func(o mesh.ConfigObject) (plan.Outcome, string) {
			if out, why, ok := UnknownKind(o); ok {
				return out, why
			}
			if rev, ok := labels[o]; ok {
				if out, why, changed := revisionLabelled(before, after, rev, what); changed {
					return out, why
				}
			}
			if o.Group == mesh.GroupGatewayAPI && o.Kind == mesh.GatewayKindAPI {
				if out, why, changed := gatewayMoves(gatewaysBefore[o.Ref()], gatewaysAfter[o.Ref()]); changed {
					return out, why
				}
			}
			if o.Group == mesh.GroupNetworking && o.Kind == "EnvoyFilter" && proxy != "" {
				return plan.NotAssessed, envoyFilterReason(proxy)
			}
			if rev, ok := labels[o]; ok {
				if now, known := processor(after, rev); known {
					return plan.Unaffected, fmt.Sprintf("labelled istio.io/rev=%s: istiod revision %s processes it before and after %s", rev, now, what)
				}
				return plan.Unaffected, fmt.Sprintf("labelled istio.io/rev=%s, which names no revision or tag before or after %s: no istiod processes it either way", rev, what)
			}
			return plan.Unaffected, fmt.Sprintf("carries no istio.io/rev label, so every revision processes it, before and after %s", what)
		},
	}
}

// revisionLabelled judges an object labelled istio.io/rev=rev: the revision or tag of that name
// decides which istiod processes it.
func revisionLabelled(before, after *mesh.Snapshot, rev, what string) (plan.Outcome, string, bool) {
	was, wasKnown := processor(before, rev)
	now, nowKnown := processor(after, rev)
	switch {
	case wasKnown && !nowKnown:
		return plan.Changes, fmt.Sprintf("labelled istio.io/rev=%s: after %s no revision or tag of that name is left, so no istiod processes it; label it with a tag or the new revision first", rev, what), true
	case wasKnown && nowKnown && was != now:
		return plan.Changes, fmt.Sprintf("labelled istio.io/rev=%s: %s hands it from istiod revision %s to %s", rev, what, was, now), true
	}
	return "", "", false
}

// processor is the revision that processes objects labelled istio.io/rev=rev: the revision of
// that name, else the one the tag of that name points to.
func processor(s *mesh.Snapshot, rev string) (string, bool) {
	for _, r := range s.Revisions {
		if r.Name == rev {
			return r.Name, true
		}
	}
	if t, ok := s.Tag(rev); ok {
		return t.Revision, true
	}
	return "", false
}

// gatewayMoves judges a Gateway API gateway (a waypoint or an ingress) whose deployment changes
// revision or proxy version.
func gatewayMoves(before, after mesh.Gateway) (plan.Outcome, string, bool) {
	if before.Name == "" || after.Name == "" {
		return "", "", false
	}
	if before.Revision != after.Revision {
		return plan.Changes, fmt.Sprintf("its deployment moves from revision %s to %s and its pods restart", orNone(before.Revision), orNone(after.Revision)), true
	}
	if b, a := versionList(before.Versions), versionList(after.Versions); b != a {
		return plan.Changes, fmt.Sprintf("its proxies change from %s to %s and its pods restart", orNone(b), orNone(a)), true
	}
	return "", "", false
}

func versionList(vs []mesh.Version) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.String())
	}
	return strings.Join(out, ",")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
