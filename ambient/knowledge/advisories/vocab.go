package advisories

import (
	"fmt"
	"strconv"
	"strings"
)

// Component is the part of an install whose version an advisory's ranges describe. The set is closed:
// Load refuses any other value.
type Component string

// The components an advisory can name.
const (
	// Istiod is the control plane (istiod chart, pilot-discovery).
	Istiod Component = "istiod"
	// CNI is the istio-cni node agent and its plugin (cni chart).
	CNI Component = "cni"
	// Ztunnel is the ztunnel node proxy (ztunnel chart).
	Ztunnel Component = "ztunnel"
	// Gateway is a gateway proxy, chart-deployed or generated from a Gateway resource.
	Gateway Component = "gateway"
	// Waypoint is a waypoint proxy (a Gateway of class istio-waypoint).
	Waypoint Component = "waypoint"
	// Base is the base chart: CRDs and the cluster-wide default validator.
	Base Component = "base"
	// Istioctl is the istioctl binary; its own version matters, not the mesh's.
	Istioctl Component = "istioctl"
)

// Components returns every component in a fixed order.
func Components() []Component {
	return []Component{Istiod, CNI, Ztunnel, Gateway, Waypoint, Base, Istioctl}
}

func (c Component) valid() bool { return contains(Components(), c) }

// When names the operation during which an advisory bites. The set is closed.
type When string

// The operations an advisory can name.
const (
	// InPlaceUpgrade is a helm upgrade of the component in place.
	InPlaceUpgrade When = "in-place-upgrade"
	// RevisionUpgrade is installing a second istiod revision beside the first.
	RevisionUpgrade When = "revision-upgrade"
	// GatewayRevisionChange is moving a gateway or waypoint to another revision (its istio.io/rev
	// label, or the tag it follows).
	GatewayRevisionChange When = "gateway-revision-change"
	// TagRemoval is removing a revision tag.
	TagRemoval When = "tag-removal"
	// RevisionUninstall is removing an istiod revision (helm uninstall or istioctl uninstall --revision).
	RevisionUninstall When = "revision-uninstall"
	// IstiodRestart is any restart of istiod pods, which every istiod upgrade is.
	IstiodRestart When = "istiod-restart"
	// CNIRestart is a restart of the istio-cni node agent, which every CNI upgrade is.
	CNIRestart When = "cni-restart"
	// ZtunnelRestart is a restart or replacement of ztunnel on a node, which every ztunnel upgrade is.
	ZtunnelRestart When = "ztunnel-restart"
	// NodeReboot is a node or kubelet restart.
	NodeReboot When = "node-reboot"
	// NamespaceMigration is enrolling a namespace in ambient mode (labels, pod restarts).
	NamespaceMigration When = "namespace-migration"
	// SteadyState means the hazard can bite at any time, not only during an operation.
	SteadyState When = "steady-state"
)

// Whens returns every operation in a fixed order.
func Whens() []When {
	return []When{InPlaceUpgrade, RevisionUpgrade, GatewayRevisionChange, TagRemoval, RevisionUninstall,
		IstiodRestart, CNIRestart, ZtunnelRestart, NodeReboot, NamespaceMigration, SteadyState}
}

func (w When) valid() bool { return contains(Whens(), w) }

// ConditionKind is one of the machine-checkable conditions an advisory can depend on. The set is
// closed; each kind says what a planner has to look at to decide it.
type ConditionKind string

// The condition kinds. An advisory bites only when all its conditions hold.
const (
	// Always holds for every mesh. It is written alone.
	Always ConditionKind = "always"
	// MinWorkloads holds when the mesh has at least Condition.Threshold workloads (pods, WorkloadEntries
	// and services together, as istiod pushes them to ztunnel). Written "workloads>=40000".
	MinWorkloads ConditionKind = "workloads"
	// CNIAmbientDisabled holds when istio-cni runs with ambient mode off (a sidecar-mode CNI, as before
	// a sidecar-to-ambient migration turns ambient on).
	CNIAmbientDisabled ConditionKind = "cni-ambient-disabled"
	// CNINativeNftables holds when istio-cni uses the native nftables backend (global.nativeNftables).
	CNINativeNftables ConditionKind = "cni-native-nftables"
	// CNISwitchToNftables holds when the operation turns on the native nftables backend
	// (global.nativeNftables) on nodes whose ambient pods were set up with iptables.
	CNISwitchToNftables ConditionKind = "cni-switch-to-nftables"
	// CNIExcludesAmbientNamespace holds when a namespace with ambient pods is listed in the CNI's
	// excludeNamespaces.
	CNIExcludesAmbientNamespace ConditionKind = "cni-excludes-ambient-namespace"
	// CNIReconcileOff holds when the CNI's reconcileIptablesOnStartup (AMBIENT_RECONCILE_POD_RULES_ON_STARTUP)
	// is off, which is its default before 1.29.
	CNIReconcileOff ConditionKind = "cni-reconcile-off"
	// HostNetworkPodsInAmbient holds when a namespace enrolled (or being enrolled) in ambient mode
	// runs hostNetwork pods.
	HostNetworkPodsInAmbient ConditionKind = "hostnetwork-pods-in-ambient"
	// UntaintController holds when istiod runs the node untaint controller (chart value taint.enabled
	// or PILOT_ENABLE_NODE_UNTAINT_CONTROLLERS).
	UntaintController ConditionKind = "untaint-controller"
	// ExitOnZeroConnections holds when gateway or waypoint pods set EXIT_ON_ZERO_ACTIVE_CONNECTIONS.
	ExitOnZeroConnections ConditionKind = "exit-on-zero-connections"
	// DryRunAuthorization holds when istiod sets AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true.
	DryRunAuthorization ConditionKind = "dry-run-authorization"
	// ServiceEntryResolutionNone holds when the mesh has a ServiceEntry with resolution NONE.
	ServiceEntryResolutionNone ConditionKind = "serviceentry-resolution-none"
	// ControlPlaneNewer holds when istiod runs a newer version than the advisory's component (the
	// window between a control plane upgrade and the data plane's).
	ControlPlaneNewer ConditionKind = "control-plane-newer"
	// HelmServerSideApply holds when the charts are applied with server-side apply (Helm 4, Flux, or
	// helm template piped to kubectl apply --server-side).
	HelmServerSideApply ConditionKind = "helm-server-side-apply"
	// ZtunnelReleaseNotNamedZtunnel holds when the ztunnel Helm release is not named "ztunnel" and
	// resourceName is not set.
	ZtunnelReleaseNotNamedZtunnel ConditionKind = "ztunnel-release-not-named-ztunnel"
	// RemovesDefaultTag holds when the operation removes the revision tag named "default".
	RemovesDefaultTag ConditionKind = "removes-default-tag"
	// NoDefaultRevision holds when no revision is the default (no default tag and no revision named
	// default), so the cluster-wide validating webhook is absent.
	NoDefaultRevision ConditionKind = "no-default-revision"
)

// ConditionKinds returns every condition kind in a fixed order.
func ConditionKinds() []ConditionKind {
	return []ConditionKind{Always, MinWorkloads, CNIAmbientDisabled, CNINativeNftables, CNISwitchToNftables,
		CNIExcludesAmbientNamespace, CNIReconcileOff, HostNetworkPodsInAmbient, UntaintController, ExitOnZeroConnections,
		DryRunAuthorization, ServiceEntryResolutionNone, ControlPlaneNewer, HelmServerSideApply,
		ZtunnelReleaseNotNamedZtunnel, RemovesDefaultTag, NoDefaultRevision}
}

// Condition is one machine-checkable condition. Its text form is the kind ("cni-ambient-disabled"),
// or for MinWorkloads "workloads>=N".
type Condition struct {
	Kind ConditionKind
	// Threshold is the workload count of a MinWorkloads condition; zero otherwise.
	Threshold int
}

// ParseCondition reads the text form of a condition.
func ParseCondition(s string) (Condition, error) {
	if rest, ok := strings.CutPrefix(s, string(MinWorkloads)+">="); ok {
		n, err := strconv.Atoi(rest)
		if err != nil || n <= 0 || strconv.Itoa(n) != rest {
			return Condition{}, fmt.Errorf("condition %q: want workloads>=N with N a positive whole number", s)
		}
		return Condition{Kind: MinWorkloads, Threshold: n}, nil
	}
	k := ConditionKind(s)
	if k == MinWorkloads {
		return Condition{}, fmt.Errorf("condition %q: give the threshold, e.g. workloads>=40000", s)
	}
	if !contains(ConditionKinds(), k) {
		return Condition{}, fmt.Errorf("condition %q is not one of %s", s, joinKinds())
	}
	return Condition{Kind: k}, nil
}

func joinKinds() string {
	var names []string
	for _, k := range ConditionKinds() {
		if k == MinWorkloads {
			names = append(names, "workloads>=N")
			continue
		}
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// String prints the text form.
func (c Condition) String() string {
	if c.Kind == MinWorkloads {
		return fmt.Sprintf("%s>=%d", MinWorkloads, c.Threshold)
	}
	return string(c.Kind)
}

// MarshalText writes the text form.
func (c Condition) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads the text form.
func (c *Condition) UnmarshalText(b []byte) error {
	p, err := ParseCondition(string(b))
	if err != nil {
		return err
	}
	*c = p
	return nil
}

// Facts is what a planner knows about a mesh, for deciding conditions. Zero Facts know nothing:
// every condition but Always is undecided.
type Facts struct {
	// Workloads is the number of workloads; zero means not counted.
	Workloads int
	// Flags holds the yes/no conditions the planner could decide. A kind missing from the map is
	// undecided.
	Flags map[ConditionKind]bool
}

// Holds reports whether the condition holds for the facts; known is false when the facts cannot
// decide it.
func (c Condition) Holds(f Facts) (holds, known bool) {
	switch c.Kind {
	case Always:
		return true, true
	case MinWorkloads:
		if f.Workloads <= 0 {
			return false, false
		}
		return f.Workloads >= c.Threshold, true
	}
	v, ok := f.Flags[c.Kind]
	return v, ok
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
