package mesh

import "fmt"

// APIVersion is the apiVersion written on every document this library produces.
const APIVersion = "ambientkit.io/v1alpha1"

// SnapshotKind is the kind of an encoded Snapshot.
const SnapshotKind = "MeshSnapshot"

// Snapshot is everything the planners know about one mesh at one moment. Observation fills it from a
// live cluster, from `kubectl get -o yaml` output or from the embedded demo mesh; planners read it and
// never change it. Lists are sorted (see Normalize) so equal clusters give equal snapshots.
type Snapshot struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	// Cluster is the Kubernetes side: server version and where it was read from.
	Cluster Cluster `json:"cluster"`
	// Revisions are the istiod control planes, one per revision.
	Revisions []Revision `json:"revisions,omitempty"`
	// Tags are revision tags (istio-revision-tag-* webhook configurations and istiod-revision-tag-* Services).
	Tags []Tag `json:"tags,omitempty"`
	// Injectors are every sidecar-injector MutatingWebhookConfiguration, tags included.
	Injectors []Injector `json:"injectors,omitempty"`
	// DefaultRevision is the istio.io/rev label of ValidatingWebhookConfiguration istiod-default-validator,
	// empty when there is none.
	DefaultRevision string `json:"defaultRevision,omitempty"`
	// CNI is the istio-cni node agent, nil when not installed.
	CNI *CNI `json:"cni,omitempty"`
	// Ztunnels are every ztunnel DaemonSet (two during a blue-green swap).
	Ztunnels []Ztunnel `json:"ztunnels,omitempty"`
	// Gateways are Gateway API gateways (waypoints included) and gateway-chart deployments.
	Gateways []Gateway `json:"gateways,omitempty"`
	// Namespaces carry their mesh labels and a summary of their pods.
	Namespaces []Namespace `json:"namespaces,omitempty"`
	// Workloads summarise pods by the object that owns them.
	Workloads []Workload `json:"workloads,omitempty"`
	// Nodes with their pool, readiness, cordon state and taints.
	Nodes []Node `json:"nodes,omitempty"`
	// NodePools are Karpenter's NodePools (karpenter.sh/v1), when Karpenter is installed.
	NodePools []NodePool `json:"nodePools,omitempty"`
	// PodDisruptionBudgets of every namespace.
	PodDisruptionBudgets []PodDisruptionBudget `json:"podDisruptionBudgets,omitempty"`
	// Policies are Istio configuration objects that matter to ambient: AuthorizationPolicy,
	// PeerAuthentication, RequestAuthentication, VirtualService, DestinationRule.
	Policies []Policy `json:"policies,omitempty"`
	// HelmReleases are the deployed releases of Istio charts, read from Helm's storage Secrets.
	HelmReleases []HelmRelease `json:"helmReleases,omitempty"`
	// CRDs are the Istio and Gateway API CustomResourceDefinitions.
	CRDs []CRD `json:"crds,omitempty"`
	// GatewayAPI summarises the installed Gateway API CRD bundle.
	GatewayAPI GatewayAPI `json:"gatewayAPI,omitzero"`
	// Services are the Kubernetes Services of namespaces in the mesh, cut down to what waypoint and
	// route planning read (see Service).
	Services []Service `json:"services,omitempty"`
	// TelemetryQueries are the PromQL queries held in the cluster: alert and recording rules,
	// dashboards, analysis templates, autoscaler triggers and metric templates.
	TelemetryQueries []TelemetryQuery `json:"telemetryQueries,omitempty"`
	// ScrapeTargets are the endpoints of PodMonitors and ServiceMonitors.
	ScrapeTargets []ScrapeTarget `json:"scrapeTargets,omitempty"`
	// NetworkPolicies are the Kubernetes NetworkPolicies of every namespace (network.go).
	NetworkPolicies []NetworkPolicy `json:"networkPolicies,omitempty"`
	// Routes are Gateway API HTTPRoutes and GRPCRoutes.
	Routes []Route `json:"routes,omitempty"`
	// IstioConfig are the other objects of ConfigGroups (Sidecar, ServiceEntry, EnvoyFilter, ...,
	// and kinds unknown to the code), see IstioConfig.
	IstioConfig []IstioConfig `json:"istioConfig,omitempty"`
	// PrimaryCNI is the primary CNI's configuration istio-cni depends on, nil when none was read.
	PrimaryCNI *PrimaryCNI `json:"primaryCNI,omitempty"`

	// Observation says how the snapshot was taken. It is not part of the mesh state: it is left out of
	// the fingerprint and of equality between sources.
	Observation Observation `json:"observation,omitzero"`
}

// Cluster is the Kubernetes side of a snapshot.
type Cluster struct {
	// KubernetesVersion of the API server, zero when unknown.
	KubernetesVersion Version `json:"kubernetesVersion,omitzero"`
	// KubernetesVersionSource says where the version came from: "server" (discovery), "nodes" (the
	// oldest kubelet, for offline dumps) or "" when unknown.
	KubernetesVersionSource string `json:"kubernetesVersionSource,omitempty"`
}

// Observation records how a snapshot was taken.
type Observation struct {
	// Source is "live", "offline" or "demo", with detail after a colon ("offline:./dump").
	Source string `json:"source,omitempty"`
	// Skipped lists optional kinds that are not installed in the cluster (for example Gateway API or
	// Karpenter); they were noticed and left out.
	Skipped []string `json:"skipped,omitempty"`
	// Ignored counts objects of kinds the observer does not read, by "group/Kind".
	Ignored map[string]int `json:"ignored,omitempty"`
	// Unread lists the resources of ConfigGroups ("envoyfilters.networking.istio.io") that the
	// cluster's CRDs serve but the input did not hold: a dump saved without their command. Their
	// objects are unknown, not absent; the plans name each such kind as not assessed.
	Unread []string `json:"unread,omitempty"`
	// Requests is how many API requests a live observation made.
	Requests int `json:"requests,omitempty"`
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String prints "Kind namespace/name" or "Kind name".
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Revision is one istiod control plane.
type Revision struct {
	// Name is the istio.io/rev label of the istiod Deployment: "default" for a non-revisioned install.
	Name string `json:"name"`
	// Namespace istiod runs in.
	Namespace string `json:"namespace"`
	// Deployment is the istiod Deployment's name ("istiod" or "istiod-<rev>").
	Deployment string `json:"deployment"`
	// Version from the discovery container's image tag.
	Version Version `json:"version,omitzero"`
	// Image is the discovery container image as written.
	Image string `json:"image,omitempty"`
	// Replicas desired, ready and updated; ObservedCurrent is true when status reflects the latest spec.
	Replicas        int32 `json:"replicas"`
	ReadyReplicas   int32 `json:"readyReplicas"`
	UpdatedReplicas int32 `json:"updatedReplicas"`
	ObservedCurrent bool  `json:"observedCurrent"`
	// Ambient is true when PILOT_ENABLE_AMBIENT is "true".
	Ambient bool `json:"ambient,omitempty"`
	// TrustedZtunnelAccounts is CA_TRUSTED_NODE_ACCOUNTS split into "namespace/serviceaccount" entries.
	TrustedZtunnelAccounts []string `json:"trustedZtunnelAccounts,omitempty"`
	// TrustedAccountsUnknown is true when the variable is set from a ConfigMap or Secret the snapshot
	// cannot read.
	TrustedAccountsUnknown bool `json:"trustedAccountsUnknown,omitempty"`
	// HelmRelease that installed it, when known.
	HelmRelease string `json:"helmRelease,omitempty"`
	// Settings holds the values of the discovery container's variables named in IstiodSettings that
	// are set and readable; a variable that is not set is absent (istiod then uses its default).
	Settings map[string]string `json:"settings,omitempty"`
	// UnknownSettings names the variables of IstiodSettings set from a source the snapshot cannot
	// read (valueFrom, envFrom), sorted.
	UnknownSettings []string `json:"unknownSettings,omitempty"`
}

// Variables of istiod's discovery container that rules read (istio/istio@eed52ebb66ad:
// pilot/pkg/features/pilot.go and tuning.go register them with their defaults).
const (
	// EnvUntaintControllers turns on istiod's node untaint controller; default false.
	EnvUntaintControllers = "PILOT_ENABLE_NODE_UNTAINT_CONTROLLERS"
	// EnvUntaintTaintName is the taint that controller removes; default TaintCNINotReady. istiod
	// reads it from 1.30.3 and 1.31.0 (release note 59499.yaml, advisory istio#57844).
	EnvUntaintTaintName = "PILOT_NODE_UNTAINT_CONTROLLERS_TAINT_NAME"
	// EnvMaxRecvMsgSize is istiod's gRPC receive limit in bytes (the misspelling is istiod's);
	// default 4 MiB.
	EnvMaxRecvMsgSize = "ISTIO_GPRC_MAXRECVMSGSIZE"
	// DefaultMaxRecvMsgSize is EnvMaxRecvMsgSize's default, 4 MiB.
	DefaultMaxRecvMsgSize = 4 * 1024 * 1024
	// EnvDryRunAuthz makes istiod send dry-run AuthorizationPolicies to ztunnel; default false
	// (pilot/pkg/features/ambient.go).
	EnvDryRunAuthz = "AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY"
)

// IstiodSettings are the variables a snapshot keeps in Revision.Settings.
var IstiodSettings = []string{EnvUntaintControllers, EnvUntaintTaintName, EnvMaxRecvMsgSize, EnvDryRunAuthz}

// Setting returns a variable of Settings; known is false when it is set from a source the snapshot
// cannot read, so that neither the value nor the default can be assumed.
func (r Revision) Setting(name string) (value string, set, known bool) {
	for _, u := range r.UnknownSettings {
		if u == name {
			return "", true, false
		}
	}
	v, ok := r.Settings[name]
	return v, ok, true
}

// Ready reports whether the revision has at least one replica and all desired replicas are ready.
func (r Revision) Ready() bool {
	return r.Replicas > 0 && r.ReadyReplicas >= r.Replicas && r.ObservedCurrent
}

// Tag is a revision tag: a name that injection and gateway ownership resolve to a revision. From
// Istio 1.28 a tag is two objects, the webhook configuration and the Service, each naming a revision
// with its istio.io/rev label; they can disagree (WebhookPointsAt, ServicePointsAt).
type Tag struct {
	Name string `json:"name"`
	// Revision the tag points at: the istio.io/rev label of its webhook configuration, or of its
	// Service when it has no webhook configuration (or one without the label).
	Revision string `json:"revision"`
	// WebhookRevision and ServiceRevision are the istio.io/rev labels of the webhook configuration
	// and of the Service, each empty when that object does not exist (or, in snapshots made before
	// they were recorded, when unknown: see WebhookPointsAt).
	WebhookRevision string `json:"webhookRevision,omitempty"`
	ServiceRevision string `json:"serviceRevision,omitempty"`
	// Webhook is the MutatingWebhookConfiguration name (istio-revision-tag-<tag>), empty if only a
	// Service exists.
	Webhook string `json:"webhook,omitempty"`
	// Service is the istiod-revision-tag-<tag> Service (Istio 1.28+), empty if none.
	Service string `json:"service,omitempty"`
	// ServiceNamespace is where the Service lives.
	ServiceNamespace string `json:"serviceNamespace,omitempty"`
	// TargetService is the Service the webhook calls ("namespace/name"), which should be the
	// revision's istiod.
	TargetService string `json:"targetService,omitempty"`
	// WebhookRelease and ServiceRelease are the Helm releases that own each object (annotations
	// meta.helm.sh/release-name and meta.helm.sh/release-namespace), nil when Helm does not own it.
	// An istiod release renders the tags of its revisionTags value, and uninstalling it deletes
	// them, wherever they point by then.
	WebhookRelease *ReleaseRef `json:"webhookRelease,omitempty"`
	ServiceRelease *ReleaseRef `json:"serviceRelease,omitempty"`
}

// ReleaseRef names a Helm release.
type ReleaseRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String prints "namespace/name".
func (r ReleaseRef) String() string { return r.Namespace + "/" + r.Name }

// OwnedBy reports whether the release owns the tag's webhook configuration or its Service.
func (t Tag) OwnedBy(namespace, release string) bool {
	for _, r := range []*ReleaseRef{t.WebhookRelease, t.ServiceRelease} {
		if r != nil && r.Namespace == namespace && r.Name == release {
			return true
		}
	}
	return false
}

// WebhookPointsAt returns the revision the tag's webhook configuration names, and false when the
// tag has no webhook configuration. Without WebhookRevision (older snapshots) it is Revision.
func (t Tag) WebhookPointsAt() (string, bool) {
	if t.Webhook == "" {
		return "", false
	}
	if t.WebhookRevision != "" {
		return t.WebhookRevision, true
	}
	return t.Revision, true
}

// ServicePointsAt returns the revision the tag's Service names, and false when the tag has no
// Service. Without ServiceRevision (older snapshots) it is Revision.
func (t Tag) ServicePointsAt() (string, bool) {
	if t.Service == "" {
		return "", false
	}
	if t.ServiceRevision != "" {
		return t.ServiceRevision, true
	}
	return t.Revision, true
}

// Split reports whether the tag's webhook configuration and Service name different revisions.
func (t Tag) Split() bool {
	w, hasWebhook := t.WebhookPointsAt()
	svc, hasService := t.ServicePointsAt()
	return hasWebhook && hasService && w != svc
}

// PointsAt reports whether either object of the tag names revision rev.
func (t Tag) PointsAt(rev string) bool {
	w, hasWebhook := t.WebhookPointsAt()
	svc, hasService := t.ServicePointsAt()
	return hasWebhook && w == rev || hasService && svc == rev || !hasWebhook && !hasService && t.Revision == rev
}

// WebhookRef names the tag's webhook configuration; ServiceRef its Service.
func (t Tag) WebhookRef() ObjectRef {
	return ObjectRef{Kind: "MutatingWebhookConfiguration", Name: t.Webhook}
}

// ServiceRef names the tag's Service.
func (t Tag) ServiceRef() ObjectRef {
	return ObjectRef{Kind: "Service", Namespace: t.ServiceNamespace, Name: t.Service}
}

// Ref names the object the tag is known by: its webhook configuration, or its Service when it has
// no webhook configuration.
func (t Tag) Ref() ObjectRef {
	if t.Webhook != "" {
		return t.WebhookRef()
	}
	return t.ServiceRef()
}

// Injector is one sidecar-injector MutatingWebhookConfiguration.
type Injector struct {
	Name string `json:"name"`
	// Revision from the istio.io/rev label.
	Revision string `json:"revision"`
	// Tag from the istio.io/tag label, empty for a revision's own injector.
	Tag string `json:"tag,omitempty"`
	// Webhooks are the webhook names it holds, sorted.
	Webhooks []string `json:"webhooks,omitempty"`
	// TargetService is the Service the first webhook calls ("namespace/name"), or its URL.
	TargetService string `json:"targetService,omitempty"`
	// Selects says which labels select pods for it: "istio.io/rev=<x>" entries and, for the default
	// injector, "istio-injection=enabled" and "sidecar.istio.io/inject=true".
	Selects []string `json:"selects,omitempty"`
	// NamespacesByDefault is true when one of its webhooks injects pods of namespaces that carry
	// neither istio-injection nor istio.io/rev: the auto.sidecar-injector.istio.io webhook the
	// istiod chart renders with sidecarInjectorWebhook.enableNamespacesByDefault
	// (istio/istio@1.30.3 and @release-1.31:
	// manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml and
	// revision-tags-mwc.yaml). Removing a namespace's injection labels does not stop injection then.
	NamespacesByDefault bool `json:"namespacesByDefault,omitempty"`
	// NamespacesByDefaultExcept are the namespaces that webhook leaves out by name
	// (kubernetes.io/metadata.name NotIn), sorted.
	NamespacesByDefaultExcept []string `json:"namespacesByDefaultExcept,omitempty"`
}

// InjectsByDefault reports whether the injector injects new pods of namespace ns once it carries
// neither istio-injection nor istio.io/rev (NamespacesByDefault and ns not left out by name).
func (in Injector) InjectsByDefault(ns string) bool {
	if !in.NamespacesByDefault {
		return false
	}
	for _, n := range in.NamespacesByDefaultExcept {
		if n == ns {
			return false
		}
	}
	return true
}

// DaemonSetRollout is the rollout state of a DaemonSet.
type DaemonSetRollout struct {
	Desired         int32 `json:"desired"`
	Current         int32 `json:"current"`
	Ready           int32 `json:"ready"`
	Updated         int32 `json:"updated"`
	Available       int32 `json:"available"`
	ObservedCurrent bool  `json:"observedCurrent"`
}

// Complete reports whether every desired pod runs the latest template and is available.
func (r DaemonSetRollout) Complete() bool {
	return r.ObservedCurrent && r.Updated >= r.Desired && r.Available >= r.Desired && r.Ready >= r.Desired
}

// UpdateStrategy of a DaemonSet.
type UpdateStrategy struct {
	// Type is RollingUpdate or OnDelete.
	Type           string `json:"type"`
	MaxUnavailable string `json:"maxUnavailable,omitempty"`
	MaxSurge       string `json:"maxSurge,omitempty"`
}

// NodePod is a node agent's pod (CNI or ztunnel) on one node.
type NodePod struct {
	Node    string  `json:"node"`
	Pod     string  `json:"pod"`
	Version Version `json:"version,omitzero"`
	Ready   bool    `json:"ready"`
	// Terminating is true when the pod has a deletion timestamp.
	Terminating bool `json:"terminating,omitempty"`
}

// CNI is the istio-cni node agent.
type CNI struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Version   Version `json:"version,omitzero"`
	Image     string  `json:"image,omitempty"`
	// Revision is the istio.io/rev label (labels only; the CNI is not revisioned).
	Revision                      string           `json:"revision,omitempty"`
	Rollout                       DaemonSetRollout `json:"rollout"`
	UpdateStrategy                UpdateStrategy   `json:"updateStrategy"`
	TerminationGracePeriodSeconds int64            `json:"terminationGracePeriodSeconds"`
	// Config is the ambient part of ConfigMap istio-cni-config (AMBIENT_ENABLED, AMBIENT_DNS_CAPTURE,
	// CURRENT_AGENT_VERSION, ...).
	Config map[string]string `json:"config,omitempty"`
	// Pods per node, sorted by node.
	Pods        []NodePod `json:"pods,omitempty"`
	HelmRelease string    `json:"helmRelease,omitempty"`
	// ConfigKeys are every key of ConfigMap istio-cni-config, sorted; nil when it was not read.
	ConfigKeys []string `json:"configKeys,omitempty"`
	// ExcludeNamespaces is the EXCLUDE_NAMESPACES key of istio-cni-config (the chart's
	// excludeNamespaces), split at commas.
	ExcludeNamespaces []string `json:"excludeNamespaces,omitempty"`
	// ConfigMapEnv are the install-cni container's variables set from a ConfigMap key.
	ConfigMapEnv []ConfigMapEnv `json:"configMapEnv,omitempty"`
	// HostPaths are the pod template's hostPath volumes, by volume name (cni-bin-dir, cni-net-dir).
	HostPaths map[string]string `json:"hostPaths,omitempty"`
}

// ConfigMapEnv is a container variable read from a ConfigMap key (valueFrom.configMapKeyRef).
type ConfigMapEnv struct {
	Env       string `json:"env"`
	ConfigMap string `json:"configMap"`
	Key       string `json:"key"`
	Optional  bool   `json:"optional,omitempty"`
}

// Ztunnel is one ztunnel DaemonSet.
type Ztunnel struct {
	Namespace      string  `json:"namespace"`
	Name           string  `json:"name"`
	ServiceAccount string  `json:"serviceAccount"`
	Version        Version `json:"version,omitzero"`
	Image          string  `json:"image,omitempty"`
	// Selector is the DaemonSet's matchLabels.
	Selector map[string]string `json:"selector,omitempty"`
	// NodeSelector of the pod template (kubernetes.io/os included).
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// NodeAffinity is the pod template's required node affinity terms (ORed); nil when it has none.
	NodeAffinity                  []NodeSelectorTerm `json:"nodeAffinity,omitempty"`
	UpdateStrategy                UpdateStrategy     `json:"updateStrategy"`
	TerminationGracePeriodSeconds int64              `json:"terminationGracePeriodSeconds"`
	Rollout                       DaemonSetRollout   `json:"rollout"`
	// Revision is the istio.io/rev annotation the chart writes when installed with a revision.
	Revision string `json:"revision,omitempty"`
	// XDSAddress and CAAddress are the env overrides, when set.
	XDSAddress string `json:"xdsAddress,omitempty"`
	CAAddress  string `json:"caAddress,omitempty"`
	// Pods per node, sorted by node.
	Pods        []NodePod `json:"pods,omitempty"`
	HelmRelease string    `json:"helmRelease,omitempty"`
}

// Component names the ztunnel in findings: "ztunnel/<namespace>/<name>".
func (z Ztunnel) Component() string { return "ztunnel/" + z.Namespace + "/" + z.Name }

// Account is the "namespace/serviceaccount" string istiod's trust list uses.
func (z Ztunnel) Account() string { return z.Namespace + "/" + z.ServiceAccount }

// Ref names the DaemonSet.
func (z Ztunnel) Ref() ObjectRef {
	return ObjectRef{Kind: "DaemonSet", Namespace: z.Namespace, Name: z.Name}
}

// Gateway kinds.
const (
	// GatewayKindAPI is a gateway.networking.k8s.io Gateway.
	GatewayKindAPI = "Gateway"
	// GatewayKindDeployment is a Deployment installed with the gateway chart (injected proxyv2).
	GatewayKindDeployment = "Deployment"
)

// Gateway is an ingress/egress gateway or a waypoint.
type Gateway struct {
	// Kind is GatewayKindAPI or GatewayKindDeployment.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Class is the gatewayClassName (API gateways only).
	Class string `json:"class,omitempty"`
	// Waypoint is true for class istio-waypoint or an istio.io/waypoint-for label.
	Waypoint bool `json:"waypoint,omitempty"`
	// WaypointFor is the istio.io/waypoint-for label.
	WaypointFor string `json:"waypointFor,omitempty"`
	// RevisionLabel is the object's own istio.io/rev label (for a gateway-chart Deployment, its pod
	// template's).
	RevisionLabel string `json:"revisionLabel,omitempty"`
	// RevisionLabelEmpty is true when the object carries the istio.io/rev label with an empty value.
	// istiod reads a present label as set, even empty, and then never looks at the namespace's
	// (HasRevisionLabel).
	RevisionLabelEmpty bool `json:"revisionLabelEmpty,omitempty"`
	// Revision is the revision that owns it by istiod's rules, empty when none does; when several
	// do (Owners), the one a default tag, else a revision named default, else the default revision
	// would pick.
	Revision string `json:"revision,omitempty"`
	// Owners are every revision that owns it, sorted (see Snapshot.GatewayOwners): more than one
	// means two istiods both deploy a Gateway API gateway, or a gateway-chart Deployment runs pods
	// injected by two revisions.
	Owners []string `json:"owners,omitempty"`
	// Versions are the proxy versions of its running pods, sorted.
	Versions []Version `json:"versions,omitempty"`
	// Pods and ReadyPods of its deployment.
	Pods      int    `json:"pods"`
	ReadyPods int    `json:"readyPods"`
	ManagedBy string `json:"managedBy,omitempty"`
	// HelmRelease that installed it (gateway chart), when known.
	HelmRelease string `json:"helmRelease,omitempty"`
	// Listeners of a Gateway API gateway, in spec order.
	Listeners []GatewayListener `json:"listeners,omitempty"`
	// Conditions are the status conditions of a Gateway API gateway (Accepted, Programmed), sorted
	// by type.
	Conditions []PolicyCondition `json:"conditions,omitempty"`
	// Generation is a Gateway API gateway's metadata.generation, to tell whether Conditions
	// describe its current spec.
	Generation int64 `json:"generation,omitempty"`
}

// Ref names the gateway object.
func (g Gateway) Ref() ObjectRef {
	return ObjectRef{Kind: g.Kind, Namespace: g.Namespace, Name: g.Name}
}

// HasRevisionLabel reports whether the object carries the istio.io/rev label, even empty.
func (g Gateway) HasRevisionLabel() bool { return g.RevisionLabel != "" || g.RevisionLabelEmpty }

// OwnedBy reports whether revision rev owns the gateway: it is among Owners, or, in a snapshot
// without Owners, it is Revision.
func (g Gateway) OwnedBy(rev string) bool {
	if len(g.Owners) == 0 {
		return rev != "" && g.Revision == rev
	}
	for _, o := range g.Owners {
		if o == rev {
			return true
		}
	}
	return false
}

// ServesServices reports whether a waypoint takes Service-addressed traffic (istio.io/waypoint-for
// service, the default, or all); ServesWorkloads whether it takes workload-addressed traffic
// (workload or all). istio/istio@release-1.31: pilot/pkg/serviceregistry/ambient/waypoints.go,
// fetchWaypointForService and fetchWaypointForWorkload.
func (g Gateway) ServesServices() bool {
	return g.WaypointFor == "" || g.WaypointFor == "service" || g.WaypointFor == "all"
}

// ServesWorkloads reports whether a waypoint takes workload-addressed traffic.
func (g Gateway) ServesWorkloads() bool { return g.WaypointFor == "workload" || g.WaypointFor == "all" }

// Mesh labels on namespaces and pods.
const (
	LabelRev                  = "istio.io/rev"
	LabelTag                  = "istio.io/tag"
	LabelInjection            = "istio-injection"
	LabelDataplaneMode        = "istio.io/dataplane-mode"
	LabelUseWaypoint          = "istio.io/use-waypoint"
	LabelUseWaypointNamespace = "istio.io/use-waypoint-namespace"
	LabelWaypointFor          = "istio.io/waypoint-for"
	LabelSidecarInject        = "sidecar.istio.io/inject"
	AnnotationSidecarStatus   = "sidecar.istio.io/status"
	AnnotationRedirection     = "ambient.istio.io/redirection"
	TaintCNINotReady          = "cni.istio.io/not-ready"
)

// NamespaceLabels are the mesh labels of a namespace that a snapshot keeps.
var NamespaceLabels = []string{LabelInjection, LabelRev, LabelDataplaneMode, LabelUseWaypoint, LabelUseWaypointNamespace, LabelIngressUseWaypoint}

// Namespace with its mesh labels and a summary of its pods.
type Namespace struct {
	Name string `json:"name"`
	// Labels holds only the mesh labels (NamespaceLabels).
	Labels map[string]string `json:"labels,omitempty"`
	Pods   PodSummary        `json:"pods"`
}

// Ambient reports whether the namespace is labelled istio.io/dataplane-mode=ambient.
func (n Namespace) Ambient() bool { return n.Labels[LabelDataplaneMode] == "ambient" }

// PodSummary counts pods by how they join the mesh.
type PodSummary struct {
	Total int `json:"total"`
	// Sidecar counts pods with an injected sidecar, by injected revision ("" when unknown).
	Sidecar map[string]int `json:"sidecar,omitempty"`
	// AmbientEnabled, AmbientPending: pods whose redirection annotation is enabled / pending.
	AmbientEnabled int `json:"ambientEnabled,omitempty"`
	AmbientPending int `json:"ambientPending,omitempty"`
	// AmbientMissing counts pods that should be captured (ambient namespace or pod label, not opted
	// out, no sidecar, not host network) but carry no redirection annotation.
	AmbientMissing int `json:"ambientMissing,omitempty"`
	// None counts pods outside the mesh.
	None int `json:"none,omitempty"`
}

// Workload modes.
const (
	ModeSidecar = "sidecar"
	ModeAmbient = "ambient"
	ModeNone    = "none"
	ModeMixed   = "mixed"
)

// Workload summarises the pods one controller owns (Deployment, StatefulSet, DaemonSet, Job, ...; a
// bare pod is its own workload).
type Workload struct {
	Namespace string `json:"namespace"`
	// Kind of the owner after resolving ReplicaSets to Deployments and Jobs to CronJobs where the name says so.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Labels common to all its pods (used to match PodDisruptionBudgets).
	Labels map[string]string `json:"labels,omitempty"`
	Pods   int               `json:"pods"`
	Ready  int               `json:"ready"`
	// Mode is ModeSidecar, ModeAmbient, ModeNone or ModeMixed.
	Mode string `json:"mode"`
	// SidecarRevisions counts pods by injected revision.
	SidecarRevisions map[string]int `json:"sidecarRevisions,omitempty"`
	// ProxyVersions are the injected istio-proxy versions, sorted.
	ProxyVersions []Version `json:"proxyVersions,omitempty"`
	// Redirection counts pods by ambient.istio.io/redirection value ("enabled", "pending").
	Redirection map[string]int `json:"redirection,omitempty"`
	// OptedOut counts pods labelled istio.io/dataplane-mode=none; HostNetwork those on the host network.
	OptedOut    int `json:"optedOut,omitempty"`
	HostNetwork int `json:"hostNetwork,omitempty"`
	// PodRevisionLabel is the istio.io/rev label of its pods, when they share one.
	PodRevisionLabel string `json:"podRevisionLabel,omitempty"`
	// Nodes it has pods on, sorted.
	Nodes []string `json:"nodes,omitempty"`
	// LocalStorage is true when its pods mount emptyDir volumes (lost on eviction).
	LocalStorage bool `json:"localStorage,omitempty"`
	// GatewayName is the gateway.networking.k8s.io/gateway-name label of generated gateway pods.
	GatewayName string `json:"gatewayName,omitempty"`
	// TerminationGracePeriodSeconds is the longest grace period of its pods (0 when none is set: the
	// API server's default is 30).
	TerminationGracePeriodSeconds int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// PreStopHook is true when a container of its pods has a preStop hook. The hook runs inside the
	// grace period, and the kubelet then still gives the container 2 seconds more (see
	// TerminationSeconds).
	PreStopHook bool `json:"preStopHook,omitempty"`
	// PreStopSleepSeconds is the longest sleep its preStop hooks make, when every hook's can be read
	// (a sleep action, or an exec of sleep N, directly or through sh -c); 0 when some hook's cannot.
	PreStopSleepSeconds int64 `json:"preStopSleepSeconds,omitempty"`
	// ActiveDeadlineSeconds bounds how long the pods of a Job (or of a CronJob's Jobs) run: the
	// longest of its Jobs' bounds, each the shorter of the Job's and its pods' activeDeadlineSeconds.
	// 0 when some pod has no bound (nothing stops it but its own end) and for other kinds.
	ActiveDeadlineSeconds int64 `json:"activeDeadlineSeconds,omitempty"`
	// Annotations are the pod annotations of WorkloadAnnotationsKept its pods carry (the first
	// value seen of each).
	Annotations map[string]string `json:"annotations,omitempty"`
	// AgentCalls are the sidecar agent endpoints its containers' commands call
	// ("127.0.0.1:15020/quitquitquit"), sorted.
	AgentCalls []string `json:"agentCalls,omitempty"`
	// NetworkProbes is true when its containers have HTTP, TCP or gRPC probes (kubelet connects to
	// the pod; exec probes stay inside it).
	NetworkProbes bool `json:"networkProbes,omitempty"`
	// Scheduling is what decides where its pods may be placed again (nil when the observation did
	// not read it); Placed are its pods, by name, with their nodes and volumes.
	Scheduling *Scheduling `json:"scheduling,omitempty"`
	Placed     []PodPlace  `json:"placed,omitempty"`
}

// WorkloadAnnotationsKept are the pod annotation prefixes (ending in "/") and names a Workload keeps:
// the sidecar's capture settings and the AWS VPC CNI's branch ENI.
var WorkloadAnnotationsKept = []string{"traffic.sidecar.istio.io/", "vpc.amazonaws.com/pod-eni"}

// Ref names the owning object.
func (w Workload) Ref() ObjectRef {
	return ObjectRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}
}

// DefaultTerminationGracePeriodSeconds is the grace period the API server gives a pod that sets
// none (k8s.io/api@v0.37.2 core/v1 DefaultTerminationGracePeriodSeconds).
const DefaultTerminationGracePeriodSeconds = 30

// TerminationSeconds is the longest its pods may take to terminate once evicted: the grace period
// (30 when unset), and 2 seconds more when a preStop hook may run into its last 2 seconds. The
// kubelet gives the hook at most the grace period, subtracts what it took, and never gives the
// container less than 2 seconds after it (k8s.io/kubernetes@v1.37.2
// pkg/kubelet/kuberuntime/kuberuntime_container.go, killContainer; minimumGracePeriodInSeconds in
// kuberuntime_manager.go). A hook's sleep is thus not added to the grace period: it takes the
// application's share of it, and a hook known to sleep less than the grace period less 2 seconds
// adds nothing.
func (w Workload) TerminationSeconds() int64 {
	g := w.TerminationGracePeriodSeconds
	if g == 0 {
		g = DefaultTerminationGracePeriodSeconds
	}
	if w.PreStopHook && (w.PreStopSleepSeconds == 0 || w.PreStopSleepSeconds > g-2) {
		g += 2
	}
	return g
}

// Stateful reports whether evicting the workload's pods loses state or work: StatefulSets, Jobs and
// pods with local storage.
func (w Workload) Stateful() bool {
	return w.Kind == "StatefulSet" || w.Kind == "Job" || w.Kind == "CronJob" || w.LocalStorage
}

// Node is a cluster node.
type Node struct {
	Name string `json:"name"`
	// Pool is the node group the node belongs to, from the first known pool label.
	Pool string `json:"pool,omitempty"`
	// PoolLabel is the label Pool was read from.
	PoolLabel      string            `json:"poolLabel,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Ready          bool              `json:"ready"`
	Unschedulable  bool              `json:"unschedulable,omitempty"`
	Taints         []Taint           `json:"taints,omitempty"`
	KubeletVersion string            `json:"kubeletVersion,omitempty"`
	// Allocatable is status.allocatable (nil when the input does not say); Requested sums the
	// requests of the pods bound to the node that have not finished, as the scheduler counts them
	// ("pods" counts them).
	Allocatable Resources `json:"allocatable,omitempty"`
	Requested   Resources `json:"requested,omitempty"`
	// Capacity is status.capacity: what Karpenter counts against a NodePool's limits.
	Capacity Resources `json:"capacity,omitempty"`
}

// PoolLabels are the node labels that name a node pool, in the order they are tried.
var PoolLabels = []string{
	"karpenter.sh/nodepool",
	"eks.amazonaws.com/nodegroup",
	"cloud.google.com/gke-nodepool",
	"kubernetes.azure.com/agentpool",
	"agentpool",
	"node.kubernetes.io/pool",
	"nodepool",
	"pool",
}

// HasTaint reports whether the node carries a taint with the key.
func (n Node) HasTaint(key string) bool {
	for _, t := range n.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// Taint on a node.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// LabelSelector is a Kubernetes label selector as data.
type LabelSelector struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []SelectorTerm    `json:"matchExpressions,omitempty"`
}

// SelectorTerm is one matchExpressions entry.
type SelectorTerm struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Matches reports whether labels satisfy the selector. A nil selector matches nothing, an empty one
// everything (as for PodDisruptionBudgets in policy/v1).
func (s *LabelSelector) Matches(labels map[string]string) bool {
	if s == nil {
		return false
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, t := range s.MatchExpressions {
		v, has := labels[t.Key]
		if !requirementHolds(t.Operator, t.Values, v, has, false) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// PodDisruptionBudget as the drain planner needs it.
type PodDisruptionBudget struct {
	Namespace          string         `json:"namespace"`
	Name               string         `json:"name"`
	Selector           *LabelSelector `json:"selector,omitempty"`
	MinAvailable       string         `json:"minAvailable,omitempty"`
	MaxUnavailable     string         `json:"maxUnavailable,omitempty"`
	DisruptionsAllowed int32          `json:"disruptionsAllowed"`
	CurrentHealthy     int32          `json:"currentHealthy"`
	DesiredHealthy     int32          `json:"desiredHealthy"`
	ExpectedPods       int32          `json:"expectedPods"`
	// UnhealthyPodEvictionPolicy is spec.unhealthyPodEvictionPolicy: "IfHealthyBudget" (also when
	// unset) or "AlwaysAllow".
	UnhealthyPodEvictionPolicy string `json:"unhealthyPodEvictionPolicy,omitempty"`
}

// ShortBlocksUnready reports whether the budget refuses to evict even its unready pods without a
// disruption to spend: under IfHealthyBudget (the default) an unready pod is evicted without the
// budget only while currentHealthy >= desiredHealthy > 0, otherwise it needs a disruption the budget
// allows (k8s.io/kubernetes@v1.37.2 pkg/registry/core/pod/storage/eviction.go); AlwaysAllow evicts
// unready pods whatever the budget.
func (p PodDisruptionBudget) ShortBlocksUnready() bool {
	return p.UnhealthyPodEvictionPolicy != "AlwaysAllow" && !(p.CurrentHealthy >= p.DesiredHealthy && p.DesiredHealthy > 0)
}

// Ref names the budget.
func (p PodDisruptionBudget) Ref() ObjectRef {
	return ObjectRef{Kind: "PodDisruptionBudget", Namespace: p.Namespace, Name: p.Name}
}

// Policy is an Istio configuration object relevant to ambient.
type Policy struct {
	// Kind: AuthorizationPolicy, PeerAuthentication, RequestAuthentication, VirtualService, DestinationRule.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// RevisionLabel is the object's istio.io/rev label: only that revision processes it.
	RevisionLabel string `json:"revisionLabel,omitempty"`
	// Action of an AuthorizationPolicy (ALLOW when unset).
	Action string `json:"action,omitempty"`
	// HasSelector / HasTargetRefs: how the policy attaches (selector: ztunnel or sidecar; targetRefs:
	// waypoint or gateway).
	HasSelector   bool `json:"hasSelector,omitempty"`
	HasTargetRefs bool `json:"hasTargetRefs,omitempty"`
	// L7 lists the L7 attributes an AuthorizationPolicy uses (methods, paths, request principals, ...),
	// sorted; empty means L4 only.
	L7 []string `json:"l7,omitempty"`
	// Mode of a PeerAuthentication (STRICT, PERMISSIVE, DISABLE, UNSET) and port-level modes "port=MODE".
	Mode      string   `json:"mode,omitempty"`
	PortModes []string `json:"portModes,omitempty"`
	// Hosts of a VirtualService or DestinationRule.
	Hosts []string `json:"hosts,omitempty"`

	// APIVersion the object was read in ("security.istio.io/v1").
	APIVersion string `json:"apiVersion,omitempty"`
	// Generation is metadata.generation, to tell whether Conditions describe the current spec.
	Generation int64 `json:"generation,omitempty"`
	// Annotations keeps only the annotations planners read (istio.io/dry-run).
	Annotations map[string]string `json:"annotations,omitempty"`
	// Spec is the object's spec as observed, in JSON form (numbers are float64). The summary fields
	// above are read from it loosely; planners that act on a policy decode it strictly
	// (migrate.DecodePolicy), so that a misspelt field is an error rather than a dropped rule.
	Spec map[string]any `json:"spec,omitempty"`
	// Conditions are the status conditions istiod wrote (ZtunnelAccepted, WaypointAccepted), sorted
	// by type.
	Conditions []PolicyCondition `json:"conditions,omitempty"`
}

// Condition returns the condition of the given type, or nil.
func (p Policy) Condition(conditionType string) *PolicyCondition {
	for i := range p.Conditions {
		if p.Conditions[i].Type == conditionType {
			return &p.Conditions[i]
		}
	}
	return nil
}

// Ref names the policy.
func (p Policy) Ref() ObjectRef {
	return ObjectRef{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}
}

// HelmRelease is a deployed release of an Istio chart.
type HelmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Chart is the chart name (base, istiod, cni, ztunnel, gateway, ...).
	Chart        string `json:"chart"`
	ChartVersion string `json:"chartVersion"`
	AppVersion   string `json:"appVersion,omitempty"`
	// Revision is Helm's release revision number.
	Revision int    `json:"revision"`
	Status   string `json:"status"`
	// Values are the user-supplied values (helm get values) of the newest record that was deployed:
	// when the latest record is pending or failed, those of the revision before it.
	Values map[string]any `json:"values,omitempty"`
	// Inferred is true when the release was read from the meta.helm.sh annotations and helm.sh/chart
	// label of the release's objects, not from Helm's release record: Values, Revision and Status are
	// unknown (Values nil, Revision 0, Status empty).
	Inferred bool `json:"inferred,omitempty"`
}

// String prints "namespace/name chart-version #revision (status)".
func (h *HelmRelease) String() string {
	return fmt.Sprintf("%s/%s %s-%s #%d (%s)", h.Namespace, h.Name, h.Chart, h.ChartVersion, h.Revision, h.Status)
}

// CRD is a CustomResourceDefinition of Istio or the Gateway API.
type CRD struct {
	Name string `json:"name"`
	// Group of the CRD (from the name).
	Group string `json:"group"`
	// Labels and Annotations keep only what ownership and bundle checks read: app.kubernetes.io/*,
	// helm.sh/*, meta.helm.sh/*, gateway.networking.k8s.io/*.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// StoredVersions from status, when read.
	StoredVersions []string `json:"storedVersions,omitempty"`
	// Inferred is true when the CRD object itself was not in the input but objects of its kind were:
	// the CRD is installed, and its labels, annotations (Helm ownership, Gateway API bundle version)
	// and stored versions are unknown.
	Inferred bool `json:"inferred,omitempty"`
}

// GatewayAPI summarises the Gateway API CRDs.
type GatewayAPI struct {
	// Installed is true when gateways.gateway.networking.k8s.io exists.
	Installed bool `json:"installed,omitempty"`
	// BundleVersion is the gateway.networking.k8s.io/bundle-version annotation ("v1.4.0"), the oldest
	// one when CRDs disagree.
	BundleVersion string `json:"bundleVersion,omitempty"`
	// Channel is "standard" or "experimental".
	Channel string `json:"channel,omitempty"`
}

// NodePool is a Karpenter NodePool (karpenter.sh/v1): the labels its nodes get and its limits.
type NodePool struct {
	Name string `json:"name"`
	// Labels are spec.template.metadata.labels: every node the pool launches carries them.
	Labels map[string]string `json:"labels,omitempty"`
	// Limits are spec.limits ("cpu": "1000"); a limit of 0 stops the pool from launching nodes.
	Limits map[string]string `json:"limits,omitempty"`
	// Limit is Limits in Resources' units (nil when none parses). Karpenter launches no node once
	// the capacity of the pool's nodes exceeds it (kubernetes-sigs/karpenter@v1.8: pkg/apis/v1/
	// nodepool.go, Limits.ExceededBy over status.resources, the sum of its nodes' capacity).
	Limit Resources `json:"limit,omitempty"`
	// Taints are spec.template.spec.taints: a pod that does not tolerate them is not launched for.
	Taints []Taint `json:"taints,omitempty"`
}

// NodePool returns the Karpenter NodePool with the name.
func (s *Snapshot) NodePool(name string) (NodePool, bool) {
	for _, p := range s.NodePools {
		if p.Name == name {
			return p, true
		}
	}
	return NodePool{}, false
}
