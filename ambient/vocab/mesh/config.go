package mesh

import "sort"

// The configuration objects of a mesh: every object of Istio's API groups and of the Gateway API
// that a snapshot holds, whatever list holds it. The planners account for each of these (see
// plan.Verdict): an operation's plan says of every one in its scope whether it is unaffected,
// changes, or was not assessed.

// ConfigGroups are the API groups whose every object an operation accounts for: Istio's four
// (istio/api kubernetes/customresourcedefinitions.gen.yaml@v1.32.0) and the Gateway API's standard
// and experimental groups.
var ConfigGroups = []string{
	GroupNetworking, GroupSecurity, GroupTelemetry, GroupExtensions, GroupGatewayAPI, GroupGatewayAPIExperimental,
}

// API groups of ConfigGroups.
const (
	GroupNetworking             = "networking.istio.io"
	GroupSecurity               = "security.istio.io"
	GroupTelemetry              = "telemetry.istio.io"
	GroupExtensions             = "extensions.istio.io"
	GroupGatewayAPI             = "gateway.networking.k8s.io"
	GroupGatewayAPIExperimental = "gateway.networking.x-k8s.io"
)

// IsConfigGroup reports whether group is one of ConfigGroups.
func IsConfigGroup(group string) bool { return contains(ConfigGroups, group) }

// ConfigObject names one configuration object: its API group besides its kind, since Istio's
// networking group and the Gateway API both have a Gateway.
type ConfigObject struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Ref names the object as findings do (without the group).
func (o ConfigObject) Ref() ObjectRef {
	return ObjectRef{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// String prints "Kind.group namespace/name".
func (o ConfigObject) String() string {
	r := o.Ref()
	r.Kind += "." + o.Group
	return r.String()
}

// Less orders objects by group, kind, namespace and name.
func (o ConfigObject) Less(p ConfigObject) bool {
	if o.Group != p.Group {
		return o.Group < p.Group
	}
	return o.Ref().Less(p.Ref())
}

// ConfigObjects returns every configuration object of the snapshot, sorted, each once: the
// policies and routes of Policies, the objects of IstioConfig, Gateway API routes, and the Gateway
// API gateways (waypoints included) of Gateways.
func (s *Snapshot) ConfigObjects() []ConfigObject {
	seen := map[ConfigObject]bool{}
	var out []ConfigObject
	add := func(o ConfigObject) {
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	for _, p := range s.Policies {
		add(ConfigObject{Group: p.Group(), Kind: p.Kind, Namespace: p.Namespace, Name: p.Name})
	}
	for _, c := range s.IstioConfig {
		add(ConfigObject{Group: c.APIGroup(), Kind: c.Kind, Namespace: c.Namespace, Name: c.Name})
	}
	for _, r := range s.Routes {
		add(ConfigObject{Group: GroupGatewayAPI, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
	}
	for _, g := range s.Gateways {
		if g.Kind == GatewayKindAPI {
			add(ConfigObject{Group: GroupGatewayAPI, Kind: g.Kind, Namespace: g.Namespace, Name: g.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// Group is the policy's API group, from APIVersion, else from its kind.
func (p Policy) Group() string {
	if g := groupOf(p.APIVersion); g != "" {
		return g
	}
	switch p.Kind {
	case "VirtualService", "DestinationRule":
		return GroupNetworking
	}
	return GroupSecurity
}

// APIGroup is the object's API group: Group when observation set it, else the group of its kind
// among those IstioConfig held before it had one.
func (c IstioConfig) APIGroup() string {
	if c.Group != "" {
		return c.Group
	}
	if c.Kind == "WasmPlugin" {
		return GroupExtensions
	}
	return GroupNetworking
}

func groupOf(apiVersion string) string {
	for i := 0; i < len(apiVersion); i++ {
		if apiVersion[i] == '/' {
			return apiVersion[:i]
		}
	}
	return ""
}

// ConfigKind is a kind of ConfigGroups the code knows by name: observation lists it by Plural in
// Versions (tried in order, the first the server serves), and plans name it by Kind.
type ConfigKind struct {
	Group, Kind, Plural string
	Versions            []string
	// Cluster is true for a cluster-scoped kind (GatewayClass, XMesh).
	Cluster bool
}

// ConfigKinds are the kinds of ConfigGroups the code knows: Istio's from istio/api
// kubernetes/customresourcedefinitions.gen.yaml@v1.32.0 (served versions; older releases serve a
// subset), the Gateway API's from sigs.k8s.io/gateway-api config/crd@v1.6.3, standard and
// experimental channels (v1alpha2 and v1alpha3 are what releases before v1.5 served for the TCP,
// TLS and UDP routes and BackendTLSPolicy; XListenerSet is ListenerSet's experimental name before
// v1.5). A CRD of those groups not listed here is a kind the code has never heard of: observation
// still reads it, and plans name its objects as not assessed.
var ConfigKinds = []ConfigKind{
	{Group: GroupNetworking, Kind: "DestinationRule", Plural: "destinationrules", Versions: []string{"v1", "v1beta1", "v1alpha3"}},
	{Group: GroupNetworking, Kind: "EnvoyFilter", Plural: "envoyfilters", Versions: []string{"v1alpha3"}},
	{Group: GroupNetworking, Kind: "Gateway", Plural: "gateways", Versions: []string{"v1", "v1beta1", "v1alpha3"}},
	{Group: GroupNetworking, Kind: "ProxyConfig", Plural: "proxyconfigs", Versions: []string{"v1beta1"}},
	{Group: GroupNetworking, Kind: "ServiceEntry", Plural: "serviceentries", Versions: []string{"v1", "v1beta1", "v1alpha3"}},
	{Group: GroupNetworking, Kind: "Sidecar", Plural: "sidecars", Versions: []string{"v1", "v1beta1", "v1alpha3"}},
	{Group: GroupNetworking, Kind: "VirtualService", Plural: "virtualservices", Versions: []string{"v1", "v1beta1", "v1alpha3"}},
	{Group: GroupNetworking, Kind: "WorkloadEntry", Plural: "workloadentries", Versions: []string{"v1", "v1beta1", "v1alpha3"}},
	{Group: GroupNetworking, Kind: "WorkloadGroup", Plural: "workloadgroups", Versions: []string{"v1", "v1beta1", "v1alpha3"}},
	{Group: GroupSecurity, Kind: "AuthorizationPolicy", Plural: "authorizationpolicies", Versions: []string{"v1", "v1beta1"}},
	{Group: GroupSecurity, Kind: "PeerAuthentication", Plural: "peerauthentications", Versions: []string{"v1", "v1beta1"}},
	{Group: GroupSecurity, Kind: "RequestAuthentication", Plural: "requestauthentications", Versions: []string{"v1", "v1beta1"}},
	{Group: GroupTelemetry, Kind: "Telemetry", Plural: "telemetries", Versions: []string{"v1", "v1alpha1"}},
	{Group: GroupExtensions, Kind: "TrafficExtension", Plural: "trafficextensions", Versions: []string{"v1alpha1"}},
	{Group: GroupExtensions, Kind: "WasmPlugin", Plural: "wasmplugins", Versions: []string{"v1alpha1"}},
	{Group: GroupGatewayAPI, Kind: "BackendTLSPolicy", Plural: "backendtlspolicies", Versions: []string{"v1", "v1alpha3"}},
	{Group: GroupGatewayAPI, Kind: "GRPCRoute", Plural: "grpcroutes", Versions: []string{"v1", "v1alpha2"}},
	{Group: GroupGatewayAPI, Kind: "Gateway", Plural: "gateways", Versions: []string{"v1", "v1beta1"}},
	{Group: GroupGatewayAPI, Kind: "GatewayClass", Plural: "gatewayclasses", Versions: []string{"v1", "v1beta1"}, Cluster: true},
	{Group: GroupGatewayAPI, Kind: "HTTPRoute", Plural: "httproutes", Versions: []string{"v1", "v1beta1"}},
	{Group: GroupGatewayAPI, Kind: "ListenerSet", Plural: "listenersets", Versions: []string{"v1"}},
	{Group: GroupGatewayAPI, Kind: "ReferenceGrant", Plural: "referencegrants", Versions: []string{"v1", "v1beta1"}},
	{Group: GroupGatewayAPI, Kind: "TCPRoute", Plural: "tcproutes", Versions: []string{"v1", "v1alpha2"}},
	{Group: GroupGatewayAPI, Kind: "TLSRoute", Plural: "tlsroutes", Versions: []string{"v1", "v1alpha3", "v1alpha2"}},
	{Group: GroupGatewayAPI, Kind: "UDPRoute", Plural: "udproutes", Versions: []string{"v1", "v1alpha2"}},
	{Group: GroupGatewayAPIExperimental, Kind: "XBackendTrafficPolicy", Plural: "xbackendtrafficpolicies", Versions: []string{"v1alpha1"}},
	{Group: GroupGatewayAPIExperimental, Kind: "XListenerSet", Plural: "xlistenersets", Versions: []string{"v1alpha1"}},
	{Group: GroupGatewayAPIExperimental, Kind: "XMesh", Plural: "xmeshes", Versions: []string{"v1alpha1"}, Cluster: true},
	{Group: GroupGatewayAPIExperimental, Kind: "XBackend", Plural: "xbackends", Versions: []string{"v1alpha1"}},
}

// KnownConfigKind returns the ConfigKinds entry of group and kind.
func KnownConfigKind(group, kind string) (ConfigKind, bool) {
	for _, k := range ConfigKinds {
		if k.Group == group && k.Kind == kind {
			return k, true
		}
	}
	return ConfigKind{}, false
}

// ConfigRevisionLabels returns the istio.io/rev label of every configuration object that carries
// one: only that revision's istiod (or the revision a tag of that name points to) processes it.
// An object without the label is processed by every revision (istio/istio@86c9f01fd735
// pkg/config/model.go, ObjectInRevision: "This is a global object, and always included").
func (s *Snapshot) ConfigRevisionLabels() map[ConfigObject]string {
	out := map[ConfigObject]string{}
	for _, p := range s.Policies {
		if p.RevisionLabel != "" {
			out[ConfigObject{Group: p.Group(), Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}] = p.RevisionLabel
		}
	}
	for _, c := range s.IstioConfig {
		if r := c.Labels[LabelRev]; r != "" {
			out[ConfigObject{Group: c.APIGroup(), Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}] = r
		}
	}
	for _, g := range s.Gateways {
		if g.Kind == GatewayKindAPI && g.RevisionLabel != "" {
			out[ConfigObject{Group: GroupGatewayAPI, Kind: g.Kind, Namespace: g.Namespace, Name: g.Name}] = g.RevisionLabel
		}
	}
	return out
}
