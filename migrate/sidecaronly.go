package migrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Configuration that acts only through a sidecar. istiod attaches an EnvoyFilter, WasmPlugin
// (translated into a TrafficExtension), Telemetry or RequestAuthentication to a proxy by selector
// only when the proxy is not a Gateway API gateway; a waypoint takes one only by targetRefs
// ("waypoints never use selector": istio/istio@86c9f01fd735 pilot/pkg/model/policyattachment.go,
// ShouldAttachPolicy; pilot/pkg/config/kube/extensions/controller.go for the WasmPlugin
// translation). ztunnel receives none of them, and no ProxyConfig (it configures the proxy's
// agent: pilot/pkg/model/proxy_config.go, EffectiveProxyConfig, read for a proxy's node metadata).
// So once a namespace's pods leave their sidecars, every such object that applied to them by
// selector, namespace-wide or mesh-wide (root namespace, no selector) applies to them no more.
// (RequestAuthentication is judged with the security policies, policies.go.)

// envoyFilterOnWaypoints is the first istiod that applies a targetRefs EnvoyFilter to a waypoint:
// 1.26 disabled it for waypoints (istio/istio#55149) and 1.27.0 enabled it again (2c533b4870d,
// "revert ambient: disable accidental EnvoyFilter implementation", #56114; tag 1.27.0 is the first
// that holds it), with targetRefs matching fixed in the same release (001621b0aed, #56476).
var envoyFilterOnWaypoints = mesh.MustParseVersion("1.27.0")

// sidecarOnlyKinds are the kinds above with what stops and whether a waypoint can carry a copy.
var sidecarOnlyKinds = map[string]struct {
	group, stops string
	waypoint     bool
}{
	"EnvoyFilter": {mesh.GroupNetworking, "its patches to the sidecar's Envoy configuration", true},
	"WasmPlugin":  {mesh.GroupExtensions, "its Wasm filter", true},
	// TrafficExtension (istio/api extensions/v1alpha1/traffic_extension.proto@v1.32.0: selector or
	// targetRefs) attaches as WasmPlugin does (pilot/pkg/model/extensions.go, ShouldAttachPolicy).
	"TrafficExtension": {mesh.GroupExtensions, "its Wasm or Lua filter", true},
	"Telemetry":        {mesh.GroupTelemetry, "its metrics, access log and tracing settings for the pods (ztunnel's own L4 metrics and logs do not follow Telemetry)", true},
	"ProxyConfig":      {mesh.GroupNetworking, "its settings of the sidecar's agent and Envoy (concurrency, image, environment)", false},
}

// sidecarOnlyConfig raises CONFIG_APPLIES_ONLY_TO_SIDECARS for every object of sidecarOnlyKinds
// that applies to the pods of namespace ns by selector or namespace-wide, or mesh-wide from a root
// namespace, and has no targetRefs.
// Where a waypoint can carry the kind and policyTargets finds what to attach to, the targetRefs copy
// is proposed (r.Proposals), as for AuthorizationPolicies.
func sidecarOnlyConfig(s *mesh.Snapshot, wv *waypointView, r *Report, ns, root string, add func(plan.Finding)) {
	waypoint := r.Waypoint.Namespace
	for _, c := range s.IstioConfig {
		k, ok := sidecarOnlyKinds[c.Kind]
		if !ok || c.APIGroup() != k.group || hasTargetRefs(c.Spec) {
			continue
		}
		selector := workloadSelector(c)
		inNamespace := c.Namespace == ns
		if !inNamespace && !isRootNamespace(s, root, c.Namespace) {
			continue
		}
		var scope string
		switch matched := selectedWorkloads(s, ns, selector); {
		case len(selector) == 0 && inNamespace:
			scope = "every pod of namespace " + ns
		case len(selector) == 0:
			scope = "every proxy of the mesh, the pods of namespace " + ns + " among them"
		case len(matched) == 0:
			continue // selects no workload of the namespace
		default:
			scope = strings.Join(matched, ", ")
		}
		remedy := fmt.Sprintf("ambient has no equivalent for the pods: nothing reads a %s for them after the move; move what it sets elsewhere, or keep the workloads on sidecars (pod label istio.io/dataplane-mode=none)", c.Kind)
		form := "none"
		if k.waypoint {
			form = "targetRefs"
			target := "the waypoint that will serve the namespace"
			if waypoint != nil {
				target = "waypoint " + waypoint.String()
			}
			remedy = fmt.Sprintf("copy it with targetRefs (group gateway.networking.k8s.io, kind Gateway, or kind Service) in place of its selector, so that %s carries it for the traffic it serves; traffic that no waypoint serves keeps none of it", target)
			if c.Kind == "EnvoyFilter" {
				remedy += "; a waypoint's listeners are not a sidecar's, so check the copy's match clauses"
			}
		}
		severity := plan.Waivable
		message := fmt.Sprintf("%s applies to %s through their sidecars; once namespace %s is in ambient no proxy applies it to them, and what it sets stops: %s", c.Ref(), scope, ns, k.stops)
		if c.Kind == "Telemetry" && len(selector) == 0 {
			// A waypoint applies the Telemetry of its own namespace, of the root namespace and of the
			// namespace of the Service it serves (pilot/pkg/model/telemetry.go@86c9f01fd735,
			// applicableTelemetries: namespaceWideTelemetryConfig for svc's namespace): the
			// namespace's traffic through a waypoint keeps it, no copy is needed.
			severity = plan.Info
			message = fmt.Sprintf("%s applies to %s through their sidecars; once namespace %s is in ambient it applies only where a waypoint serves their traffic (a waypoint applies namespace-wide and mesh-wide Telemetry), and elsewhere what it sets stops: %s", c.Ref(), scope, ns, k.stops)
			remedy = "nothing to copy: give the Services whose telemetry matters a waypoint (istio.io/use-waypoint), or accept ztunnel's L4 metrics and logs for the others"
		} else if vs := s.ControlPlaneVersions(); c.Kind == "EnvoyFilter" && len(vs) > 0 && vs[0].Less(envoyFilterOnWaypoints) {
			form = "none"
			remedy = fmt.Sprintf("istiod %s applies no EnvoyFilter to a waypoint: upgrade istiod to %s or later, where a copy with targetRefs to the waypoint (or the Services) carries it, or keep the workloads on sidecars (pod label istio.io/dataplane-mode=none)", vs[0], envoyFilterOnWaypoints.MinorString())
		} else if k.waypoint {
			prop, notes := configProposal(s, wv, c, ns, selector)
			if prop != nil {
				r.Proposals = append(r.Proposals, *prop)
				remedy = fmt.Sprintf("apply the proposed copy %s (targetRefs in place of the selector) so the waypoint carries it for the traffic it serves; traffic that no waypoint serves keeps none of it", prop.Ref())
			}
			r.Notes = append(r.Notes, notes...)
		}
		add(plan.Finding{Code: CodeConfigAppliesOnlyToSidecars, Severity: severity, Object: c.Ref(),
			Message: message,
			Remedy:  remedy,
			Details: map[string]string{"kind": c.Kind, "waypointForm": form}})
	}
}

// hasTargetRefs reports whether a spec attaches by targetRefs (or the older single targetRef).
func hasTargetRefs(spec map[string]any) bool {
	if refs, _ := spec["targetRefs"].([]any); len(refs) > 0 {
		return true
	}
	ref, _ := spec["targetRef"].(map[string]any)
	return len(ref) > 0
}

// workloadSelector is the object's pod selector: workloadSelector.labels (EnvoyFilter, Sidecar) or
// selector.matchLabels (WasmPlugin, Telemetry, ProxyConfig); nil for none.
func workloadSelector(c mesh.IstioConfig) map[string]string {
	var m map[string]any
	if ws, ok := c.Spec["workloadSelector"].(map[string]any); ok {
		m, _ = ws["labels"].(map[string]any)
	} else if sel, ok := c.Spec["selector"].(map[string]any); ok {
		m, _ = sel["matchLabels"].(map[string]any)
	}
	if len(m) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// selectedWorkloads names the workloads of ns (gateways left out: they keep their Envoy) whose pods'
// common labels include selector, sorted.
func selectedWorkloads(s *mesh.Snapshot, ns string, selector map[string]string) []string {
	var out []string
	for _, w := range s.Workloads {
		if w.Namespace != ns || w.GatewayName != "" {
			continue
		}
		if subset(selector, w.Labels) {
			out = append(out, w.Ref().String())
		}
	}
	sort.Strings(out)
	return out
}

// configProposal writes the targetRefs copy of a sidecar-only object, in namespace ns (a targetRefs
// policy attaches only to targets of its own namespace: policyattachment.go, ShouldAttachPolicy):
// its spec without the selector, attached to the namespace's waypoint or to the bound Services
// that select its workloads (policyTargets).
func configProposal(s *mesh.Snapshot, wv *waypointView, c mesh.IstioConfig, ns string, selector map[string]string) (*Proposal, []string) {
	ck, ok := mesh.KnownConfigKind(c.APIGroup(), c.Kind)
	if !ok {
		return nil, nil
	}
	refs, notes := policyTargets(wv, ns, selector, len(selector) == 0)
	if len(refs) == 0 {
		return nil, append(notes, fmt.Sprintf("no waypoint or bound Service to attach a copy of %s to; create a waypoint (or set ReadinessOptions.Waypoint) and label the namespace or Services", c.Ref()))
	}
	spec := map[string]any{}
	for k, v := range c.Spec {
		if k != "selector" && k != "workloadSelector" && k != "targetRef" {
			spec[k] = v
		}
	}
	var targets []any
	for _, r := range refs {
		t := map[string]any{"kind": r.GetKind(), "name": r.GetName()}
		if r.GetGroup() != "" {
			t["group"] = r.GetGroup()
		}
		targets = append(targets, t)
	}
	spec["targetRefs"] = targets
	name := configProposalName(s, c.Kind, ns, c.Name)
	md := map[string]any{"name": name, "namespace": ns, "annotations": map[string]any{annotationReplaces: c.Ref().String()}}
	if rev := c.Labels[mesh.LabelRev]; rev != "" {
		md["labels"] = map[string]any{mesh.LabelRev: rev}
	}
	if c.Kind == "EnvoyFilter" {
		notes = append(notes, fmt.Sprintf("the copy of %s keeps its configPatches: a waypoint's listeners and filter chains are not a sidecar's, so check each match clause against the waypoint", c.Ref()))
	}
	sort.Strings(notes)
	return &Proposal{For: c.Ref(), Notes: notes, Object: map[string]any{
		"apiVersion": ck.Group + "/" + ck.Versions[0], "kind": c.Kind, "metadata": md, "spec": spec}}, nil
}

// configProposalName picks a name no object of that kind in the namespace has.
func configProposalName(s *mesh.Snapshot, kind, ns, base string) string {
	return freeName(base, func(name string) bool {
		for _, c := range s.IstioConfig {
			if c.Kind == kind && c.Namespace == ns && c.Name == name {
				return true
			}
		}
		return false
	})
}
