package migrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// What changes when a namespace's pods leave their sidecars, beyond its policies and routes: the
// NetworkPolicies that must admit HBONE and the probe address, sidecar-only settings (capture
// exclusions, Sidecar resources, calls to the sidecar agent), ServiceEntries ztunnel cannot serve,
// and ingress gateways that would skip the namespace's new waypoint. Readiness runs these after its
// own rules; each came with the corpus of broken states (testdata/broken).

// istiod gives ztunnel a ServiceEntry with resolution NONE as a passthrough service from 1.28;
// before, as a VIP without endpoints, so ambient clients get "no healthy upstream"
// (istio/istio@eed52ebb66ad releasenotes/notes/57656.yaml, first released in 1.28.0;
// istio/istio#56369).
var serviceEntryNoneFixed = mesh.MustParseVersion("1.28.0")

// Sidecar capture annotations: only the sidecar's CNI plugin and init container read them; the
// ambient node agent reads none (istio/istio@eed52ebb66ad cni/pkg/plugin/sidecar_redirect.go reads
// them, cni/pkg/nodeagent only ambient.istio.io/bypass-inbound-capture; istio/istio#49829).
const sidecarCapturePrefix = "traffic.sidecar.istio.io/"

func ambientChangeFindings(s *mesh.Snapshot, ns *mesh.Namespace, r *Report, add func(plan.Finding)) {
	if ns.Ambient() && len(ns.Pods.Sidecar) == 0 {
		return // already in ambient: the compatibility gate judges it as it runs
	}
	for _, f := range compat.NetworkPolicyFindings(s, ns.Name, plan.Blocking) {
		add(f)
	}
	for _, w := range s.Workloads {
		if w.Namespace != ns.Name || w.GatewayName != "" {
			continue
		}
		workloadChanges(w, add)
	}
	sidecarResources(s, ns.Name, add)
	serviceEntriesNone(s, ns.Name, add)
	ingressBypass(s, ns, r, add)
}

// workloadChanges: capture exclusions and calls to the sidecar agent.
func workloadChanges(w mesh.Workload, add func(plan.Finding)) {
	var excl []string
	for k, v := range w.Annotations {
		if strings.HasPrefix(k, sidecarCapturePrefix) {
			excl = append(excl, k+"="+v)
		}
	}
	sort.Strings(excl)
	if len(excl) > 0 {
		add(plan.Finding{Code: CodeCaptureExclusionIgnoredInAmbient, Severity: plan.Waivable, Object: w.Ref(),
			Message: fmt.Sprintf("%s keeps traffic out of its sidecar with %s; ambient reads none of these annotations, so after the move ztunnel captures that traffic too",
				w.Ref(), strings.Join(excl, ", ")),
			Remedy:  "check the excluded destinations work through ztunnel (it passes traffic to destinations outside the mesh through as TCP), or keep the workload out of ambient with pod label istio.io/dataplane-mode=none",
			Details: map[string]string{"annotations": strings.Join(excl, ",")}})
	}
	if len(w.AgentCalls) > 0 {
		add(plan.Finding{Code: CodeWorkloadCallsSidecarAgent, Severity: plan.Waivable, Object: w.Ref(),
			Message: fmt.Sprintf("%s calls %s, an endpoint of the sidecar's agent (pilot-agent); without a sidecar nothing listens there, so the call fails and with it the command (a Job ends failed)",
				w.Ref(), strings.Join(w.AgentCalls, ", ")),
			Remedy:  "remove the call from the container's command before the move (or make it tolerate failure: curl ... || true); ambient pods need no sidecar shutdown",
			Details: map[string]string{"calls": strings.Join(w.AgentCalls, ",")}})
	}
}

// sidecarResources: Sidecar objects of the namespace, and those of istio-system without a workload
// selector (the mesh-wide default). Without a sidecar they have no effect (istioctl analyze reports
// IneffectivePolicy for them in an ambient namespace: istio/istio@eed52ebb66ad
// pkg/config/analysis/analyzers/sidecar/selector.go).
func sidecarResources(s *mesh.Snapshot, namespace string, add func(plan.Finding)) {
	for _, c := range s.IstioConfig {
		if c.Kind != "Sidecar" {
			continue
		}
		meshWide := c.Namespace == "istio-system" && c.Spec["workloadSelector"] == nil
		if c.Namespace != namespace && !meshWide {
			continue
		}
		mode := ""
		if otp, ok := c.Spec["outboundTrafficPolicy"].(map[string]any); ok {
			mode, _ = otp["mode"].(string)
		}
		what := "its egress and ingress settings"
		if mode == "REGISTRY_ONLY" {
			what = "its REGISTRY_ONLY egress restriction (traffic to unregistered hosts is allowed again)"
		}
		add(plan.Finding{Code: CodeSidecarResourceNoEffect, Severity: plan.Waivable, Object: c.Ref(),
			Message: fmt.Sprintf("%s configures the sidecars of namespace %s; ambient pods have none, so %s stop applying after the move", c.Ref(), namespace, what),
			Remedy:  "restrict egress another way before the move (an egress gateway or waypoint with AuthorizationPolicies, or NetworkPolicies), then delete the Sidecar",
			Details: map[string]string{"egressMode": mode}})
	}
}

// serviceEntriesNone: ServiceEntries with resolution NONE and addresses visible to the namespace,
// while istiod is older than the fix. Only an entry with spec.addresses gets a VIP: istiod assigns
// none to a NONE entry itself, before the fix as after it (istio/istio@eed52ebb66ad
// pilot/pkg/serviceregistry/ambient/services.go, constructServiceEntries: auto-assigned addresses
// only when resolution is not NONE; the pre-fix code, whose LoadBalancing was empty, skipped NONE
// the same way). Without a VIP ztunnel does not know the destination and passes the connection to
// the address the client called, so an allow-list of hosts without addresses works in every
// version.
func serviceEntriesNone(s *mesh.Snapshot, namespace string, add func(plan.Finding)) {
	vs := s.ControlPlaneVersions()
	if len(vs) == 0 || !vs[0].Less(serviceEntryNoneFixed) {
		return
	}
	for _, c := range s.IstioConfig {
		if c.Kind != "ServiceEntry" || c.Spec["resolution"] != "NONE" || !exportedTo(c, namespace) {
			continue
		}
		if addrs, _ := c.Spec["addresses"].([]any); len(addrs) == 0 {
			continue // no VIP: a passthrough by nature
		}
		add(plan.Finding{Code: CodeServiceEntryResolutionNoneUnsupported, Severity: plan.Blocking, Object: c.Ref(),
			Message: fmt.Sprintf("%s has resolution NONE and addresses; istiod %s gives it to ztunnel as a VIP without endpoints, so once namespace %s is in ambient its connections to those addresses fail (\"no healthy upstream\")",
				c.Ref(), vs[0], namespace),
			Remedy:  fmt.Sprintf("upgrade istiod to %s or later first (NONE becomes a passthrough service), give the entry resolution STATIC with the endpoints, or drop its addresses (without them connections pass to the address called)", serviceEntryNoneFixed.MinorString()),
			Details: map[string]string{"istiod": vs[0].String(), "fixedIn": serviceEntryNoneFixed.String()}})
	}
}

// exportedTo reports whether a ServiceEntry is visible in namespace: exportTo unset or "*" (the
// default, meshConfig aside), "." in its own namespace, or the namespace by name.
func exportedTo(c mesh.IstioConfig, namespace string) bool {
	list, _ := c.Spec["exportTo"].([]any)
	if len(list) == 0 {
		return true
	}
	for _, e := range list {
		switch e {
		case "*", namespace:
			return true
		case ".":
			if c.Namespace == namespace {
				return true
			}
		}
	}
	return false
}

// ingressBypass: Services that will have a waypoint for policies or routes, which ingress gateways
// route to, without istio.io/ingress-use-waypoint on the Service or the namespace. Ingress gateways
// then send straight to the pods (istio/istio@eed52ebb66ad
// pilot/pkg/serviceregistry/ambient/services.go, ingressUseWaypointFromLabels; istio/istio#51214).
func ingressBypass(s *mesh.Snapshot, ns *mesh.Namespace, r *Report, add func(plan.Finding)) {
	ingress := map[mesh.ObjectRef]bool{}
	for _, g := range s.Gateways {
		if g.Kind == mesh.GatewayKindAPI && !g.Waypoint {
			ingress[g.Ref()] = true
		}
	}
	labels := map[mesh.ObjectRef]map[string]string{}
	for _, svc := range s.Services {
		labels[svc.Ref()] = svc.Labels
	}
	for _, sw := range r.Waypoint.Services {
		if sw.Waypoint == "" || len(sw.NeededBy) == 0 {
			continue
		}
		if v := labels[sw.Service][mesh.LabelIngressUseWaypoint]; v == "true" || v == "" && ns.Labels[mesh.LabelIngressUseWaypoint] == "true" {
			continue
		}
		var routes []mesh.ObjectRef
		for _, rt := range s.Routes {
			if !containsRef(rt.Backends, sw.Service) {
				continue
			}
			for _, p := range rt.Parents {
				if ingress[mesh.ObjectRef{Kind: mesh.GatewayKindAPI, Namespace: p.Namespace, Name: p.Name}] && p.Kind == mesh.GatewayKindAPI {
					routes = append(routes, rt.Ref())
					break
				}
			}
		}
		if len(routes) == 0 {
			continue
		}
		related := append(append([]mesh.ObjectRef(nil), routes...), sw.NeededBy...)
		add(plan.Finding{Code: CodeIngressBypassesWaypoint, Severity: plan.Waivable, Object: sw.Service, Related: related,
			Message: fmt.Sprintf("%s will have waypoint %s for %s, but ingress gateways reach it through %s and send straight to its pods: ingress requests skip the waypoint and its L7 rules",
				sw.Service, sw.Waypoint, refList(sw.NeededBy), refList(routes)),
			Remedy:  fmt.Sprintf("label the Service (or namespace %s) istio.io/ingress-use-waypoint=true with the waypoint, so ingress gateways send through it", ns.Name),
			Details: map[string]string{"waypoint": sw.Waypoint}})
	}
}

func refList(refs []mesh.ObjectRef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}
