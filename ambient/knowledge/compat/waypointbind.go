package compat

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Whether waypoints serve what names them: a waypoint of another namespace must admit the user in
// its HBONE listener's allowedRoutes, istiod must report the Gateway Programmed, and a route
// attached to a Service in ambient needs a waypoint in front of the Service to be applied at all.

// A waypoint's binding follows the allowedRoutes of its listener on port 15008 with protocol HBONE;
// without allowedRoutes (or without such a listener) only its own namespace may use it
// (istio/istio@eed52ebb66ad pilot/pkg/serviceregistry/ambient/waypoints.go, makeAllowedRoutes,
// makeWaypointSelector, AllowsAttachmentFromNamespace).
func allowedFrom(g mesh.Gateway) (string, *mesh.LabelSelector) {
	for _, l := range g.Listeners {
		if l.Port == hbonePort && l.Protocol == "HBONE" {
			if l.AllowedFrom == "" {
				return "Same", nil
			}
			return l.AllowedFrom, l.AllowedSelector
		}
	}
	return "Same", nil
}

// useWaypoint returns the waypoint a Service uses: its own labels, else its namespace's
// (istio/istio@eed52ebb66ad pilot/pkg/serviceregistry/ambient/waypoints.go, fetchWaypointForService);
// name is empty or "none" when it has none.
func useWaypoint(svcLabels, nsLabels map[string]string, ns string) (name, namespace string) {
	for _, l := range []map[string]string{svcLabels, nsLabels} {
		if n := l[mesh.LabelUseWaypoint]; n != "" {
			wns := l[mesh.LabelUseWaypointNamespace]
			if wns == "" {
				wns = ns
			}
			return n, wns
		}
	}
	return "", ""
}

func findWaypoint(s *mesh.Snapshot, ns, name string) (mesh.Gateway, bool) {
	for _, g := range s.Gateways {
		if g.Kind == mesh.GatewayKindAPI && g.Namespace == ns && g.Name == name {
			return g, true
		}
	}
	return mesh.Gateway{}, false
}

func waypointRules(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	out = append(out, checkWaypointAllowed(s)...)
	out = append(out, checkWaypointProgrammed(s)...)
	out = append(out, checkRouteParents(s)...)
	return out
}

// checkWaypointAllowed: namespaces and Services labelled with a waypoint of another namespace whose
// listener admits only its own namespace (Same), or a selector that cannot match (the snapshot keeps
// only mesh labels of namespaces, so only kubernetes.io/metadata.name selectors are judged).
func checkWaypointAllowed(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	check := func(user mesh.ObjectRef, userNS string, labels map[string]string) {
		name, wns := useWaypoint(labels, nil, userNS)
		if name == "" || name == "none" || wns == userNS {
			return
		}
		g, ok := findWaypoint(s, wns, name)
		if !ok {
			return // a waypoint that does not exist is a dangling reference, another rule's
		}
		from, sel := allowedFrom(g)
		allowed := from == "All"
		if from == "Selector" {
			if sel == nil || !onlyNameSelector(sel) {
				return // cannot tell from the labels the snapshot keeps
			}
			allowed = sel.Matches(map[string]string{"kubernetes.io/metadata.name": userNS})
		}
		if allowed {
			return
		}
		out = append(out, plan.Finding{Code: plan.CodeWaypointDoesNotAllowNamespace, Severity: plan.Waivable, Object: user, Related: []mesh.ObjectRef{g.Ref()},
			Message: fmt.Sprintf("%s uses waypoint %s/%s, whose HBONE listener admits routes from %s only: istiod does not bind it, so its traffic bypasses the waypoint and the L7 policies on it",
				user, wns, name, fromWhat(from, wns)),
			Remedy:  fmt.Sprintf("set allowedRoutes.namespaces.from: All (or a Selector matching %s) on the mesh listener (port 15008, HBONE) of Gateway %s/%s", userNS, wns, name),
			Details: map[string]string{"waypoint": wns + "/" + name, "allowedFrom": from}})
	}
	for _, n := range s.Namespaces {
		check(mesh.ObjectRef{Kind: "Namespace", Name: n.Name}, n.Name, n.Labels)
	}
	for _, svc := range s.Services {
		check(svc.Ref(), svc.Namespace, svc.Labels)
	}
	return out
}

func fromWhat(from, ns string) string {
	if from == "Same" {
		return "namespace " + ns
	}
	return "namespaces its selector matches"
}

func onlyNameSelector(sel *mesh.LabelSelector) bool {
	for k := range sel.MatchLabels {
		if k != "kubernetes.io/metadata.name" {
			return false
		}
	}
	for _, t := range sel.MatchExpressions {
		if t.Key != "kubernetes.io/metadata.name" {
			return false
		}
	}
	return true
}

// checkWaypointProgrammed: a waypoint whose current status says Programmed=False. istiod writes it
// when it cannot serve the Gateway (the condition analyzer of istioctl reports the same:
// istio/istio@eed52ebb66ad pkg/config/analysis/analyzers/conditions).
func checkWaypointProgrammed(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	for _, g := range s.Gateways {
		if g.Kind != mesh.GatewayKindAPI || !g.Waypoint {
			continue
		}
		for _, c := range g.Conditions {
			if c.Type != "Programmed" || c.Status != "False" || c.ObservedGeneration != 0 && g.Generation != 0 && c.ObservedGeneration < g.Generation {
				continue
			}
			out = append(out, plan.Finding{Code: plan.CodeWaypointNotProgrammed, Severity: plan.Waivable, Object: g.Ref(), Component: "waypoint/" + g.Namespace + "/" + g.Name,
				Message: fmt.Sprintf("istiod reports waypoint %s/%s not Programmed (%s: %s): it serves no traffic, whatever its %d ready pod(s) say, and health checks that count pods pass",
					g.Namespace, g.Name, c.Reason, c.Message, g.ReadyPods),
				Remedy:  "fix what the condition names (kubectl get gateway -n " + g.Namespace + " " + g.Name + " -o yaml) before upgrading, so the upgrade's checks start from a working waypoint",
				Details: map[string]string{"reason": c.Reason, "message": c.Message}})
		}
	}
	return out
}

// checkRouteParents: routes attached to a Service of an ambient namespace that has no waypoint.
// Only a waypoint applies a Service-attached route to ambient clients; ztunnel ignores it (istiod
// reports Accepted=False, WaypointNotBound: istio/istio@eed52ebb66ad
// pilot/pkg/serviceregistry/ambient/policies.go).
func checkRouteParents(s *mesh.Snapshot) []plan.Finding {
	nsByName := map[string]mesh.Namespace{}
	for _, n := range s.Namespaces {
		nsByName[n.Name] = n
	}
	svcByRef := map[mesh.ObjectRef]mesh.Service{}
	for _, svc := range s.Services {
		svcByRef[svc.Ref()] = svc
	}
	var out []plan.Finding
	for _, r := range s.Routes {
		for _, p := range r.Parents {
			if p.Kind != "Service" {
				continue
			}
			ns, ok := nsByName[p.Namespace]
			if !ok || !ns.Ambient() {
				continue
			}
			svc, ok := svcByRef[p.Ref()]
			if !ok {
				continue
			}
			if name, _ := useWaypoint(svc.Labels, ns.Labels, ns.Name); name != "" && name != "none" {
				continue
			}
			out = append(out, plan.Finding{Code: plan.CodeRouteParentHasNoWaypoint, Severity: plan.Waivable, Object: r.Ref(), Related: []mesh.ObjectRef{svc.Ref()},
				Message: fmt.Sprintf("%s is attached to %s, which has no waypoint in ambient namespace %s: nothing applies the route, so its rules (splits, rewrites, retries) are ignored",
					r.Ref(), svc.Ref(), ns.Name),
				Remedy:  fmt.Sprintf("give %s a waypoint (label it or namespace %s istio.io/use-waypoint=<waypoint>), or delete the route", svc.Ref(), ns.Name),
				Details: map[string]string{"service": svc.Namespace + "/" + svc.Name}})
		}
	}
	return out
}
