package migrate

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// The migration's word on every configuration object it concerns: those of the namespace, those
// of the root namespace that apply mesh-wide, and those elsewhere that the readiness report judged
// (routes naming the namespace's Services) or a finding names.

// meshWideKinds apply from the root namespace to every proxy when they select nothing.
var meshWideKinds = map[string]bool{
	"AuthorizationPolicy": true, "PeerAuthentication": true, "RequestAuthentication": true,
	"Sidecar": true, "EnvoyFilter": true, "Telemetry": true, "WasmPlugin": true, "TrafficExtension": true, "ProxyConfig": true,
}

// accounting is the Finalize accounting of the migration of namespace ns, judged from its
// readiness report r.
func accounting(s *mesh.Snapshot, ns string, root string, r *Report) *plan.Accounting {
	policies := map[mesh.ObjectRef]PolicyVerdict{}
	for _, v := range r.Policies {
		policies[v.Policy] = v
	}
	routes := map[mesh.ObjectRef]RouteVerdict{}
	for _, v := range r.Routes {
		routes[v.Route] = v
	}
	selectorless := map[mesh.ConfigObject]bool{}
	configs := map[mesh.ConfigObject]mesh.IstioConfig{}
	for _, c := range s.IstioConfig {
		o := mesh.ConfigObject{Group: c.APIGroup(), Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
		configs[o] = c
		if len(workloadSelector(c)) == 0 && !hasTargetRefs(c.Spec) {
			selectorless[o] = true
		}
	}
	for _, p := range s.Policies {
		if !p.HasSelector && !p.HasTargetRefs {
			selectorless[mesh.ConfigObject{Group: p.Group(), Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}] = true
		}
	}
	services := map[string]ServiceWaypoint{}
	for _, sw := range r.Waypoint.Services {
		services[sw.Service.Name] = sw
	}
	routeParents := map[mesh.ObjectRef][]mesh.RouteParent{}
	for _, rt := range s.Routes {
		routeParents[rt.Ref()] = rt.Parents
	}
	return &plan.Accounting{
		Objects: s.ConfigObjects(),
		Unread:  s.Observation.Unread,
		InScope: func(o mesh.ConfigObject) bool {
			if o.Namespace == ns {
				return true
			}
			if _, ok := policies[o.Ref()]; ok {
				return true
			}
			if _, ok := routes[o.Ref()]; ok {
				return true
			}
			return isRootNamespace(s, root, o.Namespace) && meshWideKinds[o.Kind] && selectorless[o]
		},
		Judge: func(o mesh.ConfigObject) (plan.Outcome, string) {
			if out, why, ok := compat.UnknownKind(o); ok {
				return out, why
			}
			if v, ok := policies[o.Ref()]; ok && o.Group == mesh.GroupSecurity {
				switch v.Class {
				case KeepsWorking, Unaffected:
					return plan.Unaffected, v.Reason
				case Unknown:
					return plan.NotAssessed, "its spec does not decode: " + v.Error
				}
				return plan.Changes, v.Reason
			}
			if v, ok := routes[o.Ref()]; ok && o.Group == mesh.GroupNetworking {
				if v.Error != "" {
					return plan.NotAssessed, "its spec does not decode: " + v.Error
				}
				if len(v.UnresolvedHosts) > 0 {
					return plan.NotAssessed, fmt.Sprintf("it names hosts that match no Service of the snapshot (%s): what the move does to their traffic is not assessed", strings.Join(v.UnresolvedHosts, ", "))
				}
				return plan.Unaffected, "the route rules find nothing it sets that stops applying"
			}
			if k, ok := sidecarOnlyKinds[o.Kind]; ok && k.group == o.Group {
				// CONFIG_APPLIES_ONLY_TO_SIDECARS makes it Changes where it applies to the
				// namespace's pods; without the finding it does not.
				c := configs[o]
				if hasTargetRefs(c.Spec) {
					return plan.Unaffected, "attached by targetRefs to a gateway, waypoint or Service, whose proxies keep applying it"
				}
				if sel := workloadSelector(c); len(sel) > 0 {
					return plan.Unaffected, fmt.Sprintf("its selector (%s) matches none of the namespace's workloads", labelList(sel))
				}
				return plan.Changes, "it applies to every proxy of its namespace (or, from the root namespace, of the mesh), the namespace's sidecars among them; after the move only waypoints can apply it"
			}
			return judgeKind(o, ns, services, routeParents[o.Ref()])
		},
	}
}

// judgeKind judges the kinds the report does not classify.
func judgeKind(o mesh.ConfigObject, ns string, services map[string]ServiceWaypoint, parents []mesh.RouteParent) (plan.Outcome, string) {
	switch {
	case o.Group == mesh.GroupNetworking && o.Kind == "ServiceEntry":
		return plan.Unaffected, "istiod gives it to ztunnel as a service (pilot/pkg/serviceregistry/ambient/services.go), so ambient clients reach it as sidecars did"
	case o.Group == mesh.GroupNetworking && o.Kind == "Gateway":
		return plan.Unaffected, "it configures gateway deployments, which keep their Envoy and which the migration does not restart"
	case o.Group == mesh.GroupGatewayAPI && o.Kind == mesh.GatewayKindAPI:
		return plan.Unaffected, "a gateway (or waypoint): its pods keep their Envoy and the migration does not restart them"
	case o.Group == mesh.GroupGatewayAPI && o.Kind == "ReferenceGrant":
		return plan.Unaffected, "it grants references across namespaces, which the move leaves as they are"
	case o.Group == mesh.GroupGatewayAPI && (o.Kind == "HTTPRoute" || o.Kind == "GRPCRoute"):
		return judgeRoute(o, ns, services, parents)
	case o.Group == mesh.GroupNetworking && o.Kind == "Sidecar":
		return plan.Unaffected, "it configures no sidecar of the namespace"
	case o.Group == mesh.GroupSecurity:
		return plan.NotAssessed, "the readiness checks did not reach it (they stopped at a finding that blocks the namespace)"
	}
	return plan.NotAssessed, fmt.Sprintf("ambientkit does not model what moving a namespace to ambient does to a %s: check it by hand", o.Kind)
}

// judgeRoute: a Gateway API route whose parent is a Service is mesh routing, applied by client
// sidecars and, in ambient, only by the waypoint serving that Service; one bound to gateways stays.
func judgeRoute(o mesh.ConfigObject, ns string, services map[string]ServiceWaypoint, parents []mesh.RouteParent) (plan.Outcome, string) {
	for _, p := range parents {
		if p.Kind != "Service" || p.Namespace != ns {
			continue
		}
		if sw := services[p.Name]; sw.Waypoint == "" {
			return plan.Changes, fmt.Sprintf("it routes mesh traffic to Service %s/%s, which will have no waypoint: ambient clients, the namespace's own pods among them, skip the route (only sidecar clients apply it)", ns, p.Name)
		}
	}
	return plan.Unaffected, "bound to gateways, or to Services a waypoint will serve"
}
