package mesh

import (
	"sort"
	"strconv"
	"strings"
)

// The vocabulary below is what ambient adds to the network a pod lives in: Kubernetes
// NetworkPolicies (ambient traffic arrives on ztunnel's HBONE port and kubelet probes from a
// link-local address), the primary CNI's settings istio-cni depends on, and the Gateway API routes
// that attach to Services and gateways. Observation fills these lists already sorted.

// NetworkPolicy is a networking.k8s.io/v1 NetworkPolicy, cut down to its ingress side.
type NetworkPolicy struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// PodSelector selects the pods of Namespace it applies to; an empty selector selects them all.
	PodSelector *LabelSelector `json:"podSelector,omitempty"`
	// Ingress is true when the policy isolates the selected pods for ingress (policyTypes holds
	// Ingress, or policyTypes is empty: the API server's default).
	Ingress bool `json:"ingress,omitempty"`
	// IngressRules are the spec.ingress entries; a selected pod accepts only what one of them allows.
	IngressRules []NetworkPolicyRule `json:"ingressRules,omitempty"`
}

// Ref names the policy.
func (p NetworkPolicy) Ref() ObjectRef {
	return ObjectRef{Kind: "NetworkPolicy", Namespace: p.Namespace, Name: p.Name}
}

// NetworkPolicyRule is one ingress rule.
type NetworkPolicyRule struct {
	// Ports are "TCP/80", "TCP/http" (a named port) or "TCP/8000-8080"; empty means every port.
	Ports []string `json:"ports,omitempty"`
	// AnySource is true when the rule has no from entries: every source.
	AnySource bool `json:"anySource,omitempty"`
	// IPBlocks are the CIDRs of from[].ipBlock, each followed by " except " and its exceptions
	// when it has any.
	IPBlocks []string `json:"ipBlocks,omitempty"`
	// PeerSelectors counts from entries that select pods or namespaces (they never match the
	// address kubelet probes come from).
	PeerSelectors int `json:"peerSelectors,omitempty"`
}

// AllowsPort reports whether the rule admits TCP traffic to the numeric port (a named port in the
// rule is matched by name only and never counts here).
func (r NetworkPolicyRule) AllowsPort(port int) bool {
	if len(r.Ports) == 0 {
		return true
	}
	for _, p := range r.Ports {
		proto, rest, _ := strings.Cut(p, "/")
		if proto != "TCP" {
			continue
		}
		from, to, isRange := strings.Cut(rest, "-")
		lo, err := strconv.Atoi(from)
		if err != nil {
			continue
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(to); err != nil {
				continue
			}
		}
		if port >= lo && port <= hi {
			return true
		}
	}
	return false
}

// PrimaryCNI is the configuration of the cluster's primary CNI that decides whether istio-cni's
// chained plugin and ambient redirection can work (istioctl's precheck reads the same).
type PrimaryCNI struct {
	// Name is the CNI ("cilium").
	Name string `json:"name"`
	// ConfigMap holds Settings (kube-system/cilium-config).
	ConfigMap ObjectRef `json:"configMap"`
	// Settings are the keys istio reads, as written.
	Settings map[string]string `json:"settings,omitempty"`
}

// Route is a Gateway API route (HTTPRoute, GRPCRoute): what it attaches to and where it sends.
type Route struct {
	// Kind is HTTPRoute or GRPCRoute.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Parents are spec.parentRefs: Gateways (an ingress, a waypoint) or Services (mesh routing,
	// applied by the Service's waypoint in ambient).
	Parents []RouteParent `json:"parents,omitempty"`
	// Backends are the Services of the rules' backendRefs, sorted, without repeats.
	Backends []ObjectRef `json:"backends,omitempty"`
}

// Ref names the route.
func (r Route) Ref() ObjectRef { return ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name} }

// RouteParent is one parentRef, its namespace defaulted to the route's.
type RouteParent struct {
	// Kind is Gateway or Service (the Gateway API's defaults: group gateway.networking.k8s.io, kind
	// Gateway).
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Ref names the parent object.
func (p RouteParent) Ref() ObjectRef {
	return ObjectRef{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}
}

// GatewayListener is one listener of a Gateway API gateway.
type GatewayListener struct {
	Name     string `json:"name"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
	// AllowedFrom is allowedRoutes.namespaces.from: Same (the default), All or Selector.
	AllowedFrom string `json:"allowedFrom,omitempty"`
	// AllowedSelector is allowedRoutes.namespaces.selector (From Selector).
	AllowedSelector *LabelSelector `json:"allowedSelector,omitempty"`
}

// IstioConfig is a configuration object of ConfigGroups other than the policies and routes of
// Policies, the Gateway API routes of Routes and the gateways of Gateways: Sidecar, ServiceEntry,
// WorkloadEntry, WasmPlugin, EnvoyFilter, ProxyConfig, Telemetry, Istio's Gateway, WorkloadGroup,
// the other Gateway API kinds, and any kind of those groups the code does not know (a CRD newer
// than it). Spec is kept as JSON data.
type IstioConfig struct {
	// Group is the API group; empty in snapshots written before it was kept (see APIGroup).
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Labels keeps istio.io/rev, istio.io/use-waypoint(-namespace) and networking.istio.io/tunnel.
	Labels map[string]string `json:"labels,omitempty"`
	// Spec is the object's spec as observed, in JSON form.
	Spec map[string]any `json:"spec,omitempty"`
}

// Ref names the object (without its group: see ConfigObject).
func (c IstioConfig) Ref() ObjectRef {
	return ObjectRef{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
}

// IstioConfigLabels are the labels an IstioConfig keeps.
var IstioConfigLabels = []string{LabelRev, LabelUseWaypoint, LabelUseWaypointNamespace, "networking.istio.io/tunnel"}

// LabelIngressUseWaypoint makes ingress gateways send to a Service's waypoint instead of straight
// to its pods: the Service's label, else its namespace's, read as a boolean. istio/istio@eed52ebb66ad
// pilot/pkg/serviceregistry/ambient/services.go, ingressUseWaypointFromLabels.
const LabelIngressUseWaypoint = "istio.io/ingress-use-waypoint"

// normalizeNetwork sorts the lists of this file's vocabulary.
func (s *Snapshot) normalizeNetwork() {
	sort.Slice(s.NetworkPolicies, func(i, j int) bool { return s.NetworkPolicies[i].Ref().Less(s.NetworkPolicies[j].Ref()) })
	sort.Slice(s.Routes, func(i, j int) bool { return s.Routes[i].Ref().Less(s.Routes[j].Ref()) })
	sort.Slice(s.IstioConfig, func(i, j int) bool { return s.IstioConfig[i].Ref().Less(s.IstioConfig[j].Ref()) })
}

// networkNormalized reports whether the lists of this file's vocabulary are sorted.
func (s *Snapshot) networkNormalized() bool {
	return sort.SliceIsSorted(s.NetworkPolicies, func(i, j int) bool { return s.NetworkPolicies[i].Ref().Less(s.NetworkPolicies[j].Ref()) }) &&
		sort.SliceIsSorted(s.Routes, func(i, j int) bool { return s.Routes[i].Ref().Less(s.Routes[j].Ref()) }) &&
		sort.SliceIsSorted(s.IstioConfig, func(i, j int) bool { return s.IstioConfig[i].Ref().Less(s.IstioConfig[j].Ref()) })
}
