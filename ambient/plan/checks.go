package plan

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// CheckType names a verification the executor knows how to run.
type CheckType string

// Check types.
const (
	CheckDeploymentReady        CheckType = "DeploymentReady"
	CheckDaemonSetRolledOut     CheckType = "DaemonSetRolledOut"
	CheckNodeAgentReady         CheckType = "NodeAgentReady"
	CheckPodsRedirected         CheckType = "PodsRedirected"
	CheckNoSandboxFailures      CheckType = "NoSandboxFailures"
	CheckTagPointsTo            CheckType = "TagPointsTo"
	CheckNoReferences           CheckType = "NoReferences"
	CheckGatewayOwner           CheckType = "GatewayOwner"
	CheckHelmReleaseVersion     CheckType = "HelmReleaseVersion"
	CheckNodeDrained            CheckType = "NodeDrained"
	CheckNodeSchedulable        CheckType = "NodeSchedulable"
	CheckWorkloadsOnRevision    CheckType = "WorkloadsOnRevision"
	CheckTrustedAccounts        CheckType = "TrustedAccounts"
	CheckFindingsClear          CheckType = "FindingsClear"
	CheckDefaultRevision        CheckType = "DefaultRevision"
	CheckBackupReadable         CheckType = "BackupReadable"
	CheckCRDsEstablished        CheckType = "CRDsEstablished"
	CheckRevisionExistsAndReady CheckType = "RevisionReady"
	CheckNodesReady             CheckType = "NodesReady"
	CheckNodeAgentAbsent        CheckType = "NodeAgentAbsent"
	CheckWorkloadsReady         CheckType = "WorkloadsReady"
	CheckNoAmbientPods          CheckType = "NoAmbientPods"
	CheckGatewayProgrammed      CheckType = "GatewayProgrammed"
	CheckWaypointAccepted       CheckType = "WaypointAccepted"
	CheckPodsCaptured           CheckType = "PodsCaptured"
	CheckNoSidecars             CheckType = "NoSidecars"
	CheckSidecarsInjected       CheckType = "SidecarsInjected"
	CheckBackupWritable         CheckType = "BackupWritable"
)

// Check is one verifiable condition, as data. Its arguments are typed (one *Args struct per check
// type, below) and travel as Params; NewCheck writes them, ArgsOf reads them back strictly, and
// Validate (so plan.Decode) refuses params a check type does not take or cannot parse.
type Check struct {
	Type CheckType `json:"type"`
	// Object the check is about, when there is one.
	Object mesh.ObjectRef `json:"object,omitzero"`
	// Params carry the check's arguments, encoded from its Args struct.
	Params map[string]string `json:"params,omitempty"`
	// Description says in words what must hold.
	Description string `json:"description"`
}

// Args is the argument struct of one check type. Each field is a param: tagged `param:"name"`
// (",required" when it must be set), of type string, bool, int or []string (a comma list).
type Args interface {
	// CheckType is the check the arguments belong to.
	CheckType() CheckType
}

// NewCheck returns a check of the arguments' type about obj (zero when none).
func NewCheck(obj mesh.ObjectRef, args Args, description string) Check {
	return Check{Type: args.CheckType(), Object: obj, Params: encodeParams(args), Description: description}
}

// ArgsOf decodes a check's params into its argument struct, strictly: the check's type must be
// T's, every param must be a field of T and parse as its type, and required fields must be set.
func ArgsOf[T Args](c Check) (T, error) {
	var a T
	if c.Type != a.CheckType() {
		return a, fmt.Errorf("%w: check %s does not take %T", ErrInvalidPlan, c.Type, a)
	}
	if err := decodeParams(c.Params, &a); err != nil {
		return a, fmt.Errorf("%w: check %s: %v", ErrInvalidPlan, c.Type, err)
	}
	return a, nil
}

// checkSpec is what the plan package knows about one check type.
type checkSpec struct {
	// args returns a pointer to the zero argument struct.
	args func() any
	// object is the kind the check's object must have ("" when it takes none or any).
	object string
	// command is what a person would run to see the condition; nil when there is none.
	command func(c Check) string
}

func spec[T Args](object string, command func(c Check) string) checkSpec {
	return checkSpec{args: func() any { var a T; return &a }, object: object, command: command}
}

// checkSpecs is the table of check types.
var checkSpecs = map[CheckType]checkSpec{
	CheckDeploymentReady: spec[DeploymentReadyArgs]("Deployment", func(c Check) string {
		return fmt.Sprintf("kubectl rollout status deployment/%s -n %s", c.Object.Name, c.Object.Namespace)
	}),
	CheckDaemonSetRolledOut: spec[DaemonSetRolledOutArgs]("DaemonSet", func(c Check) string {
		return fmt.Sprintf("kubectl rollout status daemonset/%s -n %s", c.Object.Name, c.Object.Namespace)
	}),
	CheckNodeAgentReady: spec[NodeAgentReadyArgs]("DaemonSet", func(c Check) string {
		if node := c.Params["node"]; node != "" {
			return fmt.Sprintf("kubectl get pods -n %s -o wide --field-selector spec.nodeName=%s", c.Object.Namespace, node)
		}
		return fmt.Sprintf("kubectl rollout status daemonset/%s -n %s", c.Object.Name, c.Object.Namespace)
	}),
	CheckPodsRedirected: spec[PodsRedirectedArgs]("", func(Check) string {
		return "kubectl get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.annotations.ambient\\.istio\\.io/redirection}{\"\\n\"}{end}'"
	}),
	CheckNoSandboxFailures: spec[NoSandboxFailuresArgs]("", func(Check) string {
		return "kubectl get events -A --field-selector reason=FailedCreatePodSandBox"
	}),
	CheckTagPointsTo: spec[TagPointsToArgs]("", func(c Check) string {
		name := c.Object.Name
		if name == "" {
			name = "istio-revision-tag-" + c.Params["tag"]
		}
		return fmt.Sprintf("kubectl get mutatingwebhookconfiguration %s -o jsonpath='{.metadata.labels.istio\\.io/rev}'", name)
	}),
	CheckNoReferences: spec[NoReferencesArgs]("", nil),
	CheckGatewayOwner: spec[GatewayOwnerArgs]("", nil),
	CheckHelmReleaseVersion: spec[HelmReleaseVersionArgs]("HelmRelease", func(c Check) string {
		return fmt.Sprintf("helm ls -n %s --filter '^%s$'", c.Object.Namespace, c.Object.Name)
	}),
	CheckNodeDrained: spec[NodeDrainedArgs]("", func(c Check) string {
		return fmt.Sprintf("kubectl get pods -A -o wide --field-selector spec.nodeName=%s", nodeOfCheck(c))
	}),
	CheckNodeSchedulable: spec[NodeSchedulableArgs]("", func(c Check) string {
		return fmt.Sprintf("kubectl get node %s", nodeOfCheck(c))
	}),
	CheckWorkloadsOnRevision: spec[WorkloadsOnRevisionArgs]("", nil),
	CheckTrustedAccounts:     spec[TrustedAccountsArgs]("", nil),
	CheckFindingsClear:       spec[FindingsClearArgs]("", nil),
	CheckDefaultRevision: spec[DefaultRevisionArgs]("", func(Check) string {
		return "kubectl get validatingwebhookconfiguration istiod-default-validator -o jsonpath='{.metadata.labels.istio\\.io/rev}'"
	}),
	CheckBackupReadable:         spec[BackupReadableArgs]("", nil),
	CheckCRDsEstablished:        spec[CRDsEstablishedArgs]("", nil),
	CheckRevisionExistsAndReady: spec[RevisionReadyArgs]("", nil),
	CheckNodesReady: spec[NodesReadyArgs]("", func(c Check) string {
		return "kubectl get nodes -l " + c.Params["selector"]
	}),
	CheckNodeAgentAbsent: spec[NodeAgentAbsentArgs]("DaemonSet", func(c Check) string {
		if c.Params["node"] == "" {
			return fmt.Sprintf("kubectl get pods -n %s -o wide  # none of DaemonSet %s", c.Object.Namespace, c.Object.Name)
		}
		return fmt.Sprintf("kubectl get pods -n %s -o wide --field-selector spec.nodeName=%s", c.Object.Namespace, c.Params["node"])
	}),
	CheckWorkloadsReady: spec[WorkloadsReadyArgs]("", nil),
	CheckNoAmbientPods: spec[NoAmbientPodsArgs]("", func(c Check) string {
		return fmt.Sprintf("for n in $(kubectl get nodes -l '%s' -o name); do kubectl get pods -A -o wide --field-selector spec.nodeName=${n#node/}; done", c.Params["selector"])
	}),
	CheckGatewayProgrammed: spec[GatewayProgrammedArgs]("Gateway", func(c Check) string {
		return fmt.Sprintf("kubectl wait --for=condition=Programmed gateway/%s -n %s", c.Object.Name, c.Object.Namespace)
	}),
	CheckWaypointAccepted: spec[WaypointAcceptedArgs]("", func(c Check) string {
		return fmt.Sprintf("kubectl get %s %s -n %s -o jsonpath='{.status.conditions[?(@.type==\"WaypointAccepted\")]}'",
			strings.ToLower(c.Object.Kind), c.Object.Name, c.Object.Namespace)
	}),
	CheckPodsCaptured: spec[PodsCapturedArgs]("Namespace", func(c Check) string {
		return fmt.Sprintf("kubectl get pods -n %s -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations.ambient\\.istio\\.io/redirection}{\"\\n\"}{end}'", c.Object.Name)
	}),
	CheckNoSidecars:       spec[NoSidecarsArgs]("Namespace", podContainersCommand),
	CheckSidecarsInjected: spec[SidecarsInjectedArgs]("Namespace", podContainersCommand),
	CheckBackupWritable: spec[BackupWritableArgs]("", func(c Check) string {
		return fmt.Sprintf("test -w \"$(dirname %q)\"", c.Params["file"])
	}),
}

// podContainersCommand lists each pod of the check's namespace with its containers and its native
// sidecars: from 1.27 istiod injects istio-proxy as an init container with restartPolicy Always
// where the cluster supports it (ENABLE_NATIVE_SIDECARS=auto, istio/istio@release-1.31
// pilot/pkg/features/pilot.go), so a command that reads only spec.containers would show no sidecar
// on a pod that runs one. One line a pod: name, containers, then the init containers that keep
// running.
func podContainersCommand(c Check) string {
	return fmt.Sprintf("kubectl get pods -n %s -o jsonpath='{range .items[*]}{.metadata.name} {.spec.containers[*].name} {.spec.initContainers[?(@.restartPolicy==\"Always\")].name}{\"\\n\"}{end}'", c.Object.Name)
}

// CheckTypes returns every check type, sorted.
func CheckTypes() []CheckType {
	out := make([]CheckType, 0, len(checkSpecs))
	for t := range checkSpecs {
		out = append(out, t)
	}
	sortStringsOf(out)
	return out
}

// KnownCheck reports whether t is a check type of this library.
func KnownCheck(t CheckType) bool { _, ok := checkSpecs[t]; return ok }

// CheckCommand returns the kubectl or helm command that shows whether a check holds; "" when there
// is none.
func CheckCommand(c Check) string {
	s, ok := checkSpecs[c.Type]
	if !ok || s.command == nil {
		return ""
	}
	return s.command(c)
}

func validateCheck(c Check, where string, bad func(string, ...any)) {
	s, ok := checkSpecs[c.Type]
	if !ok {
		bad("%s: check type %q is unknown", where, c.Type)
		return
	}
	if err := decodeParams(c.Params, s.args()); err != nil {
		bad("%s: check %s: %v", where, c.Type, err)
	}
	if s.object != "" && (c.Object.Kind != s.object || c.Object.Name == "") {
		bad("%s: check %s needs an object of kind %s with a name (got %q)", where, c.Type, s.object, c.Object.String())
	}
}

func nodeOfCheck(c Check) string {
	if n := c.Params["node"]; n != "" {
		return n
	}
	return c.Object.Name
}

// ---- argument structs, one per check type ----

// DeploymentReadyArgs: the Deployment (the check's object) has every replica updated, ready and
// available, and its controller has seen its latest generation.
type DeploymentReadyArgs struct{}

// DaemonSetRolledOutArgs: the DaemonSet (the check's object) has every desired pod updated, ready and
// available; with Version, its template and (under OnDelete) every pod run that version.
type DaemonSetRolledOutArgs struct {
	Version string `param:"version"`
}

// NodeAgentReadyArgs: a ready, non-terminating pod of the DaemonSet (the check's object) runs on Node,
// or with All on every ready node the DaemonSet selects; at Version when given. Exactly one of Node
// and All.
type NodeAgentReadyArgs struct {
	Node    string `param:"node"`
	Version string `param:"version"`
	All     bool   `param:"all"`
}

// PodsRedirectedArgs: ambient pods carry ambient.istio.io/redirection=enabled; with Since
// "step-start", only pods created since the step started.
type PodsRedirectedArgs struct {
	Since string `param:"since"`
}

// NoSandboxFailuresArgs: no pod keeps failing sandbox creation through Plugin (default istio-cni) for
// longer than RetryWindowSeconds (default 120).
type NoSandboxFailuresArgs struct {
	RetryWindowSeconds int    `param:"retryWindowSeconds"`
	Plugin             string `param:"plugin"`
}

// TagPointsToArgs: the tag's webhook configuration (the check's object, or istio-revision-tag-<tag>)
// is labelled with Revision.
type TagPointsToArgs struct {
	Tag      string `param:"tag,required"`
	Revision string `param:"revision,required"`
}

// NoReferencesArgs: nothing refers to Revision (revision.References); with Gone, its istiod is gone
// too.
type NoReferencesArgs struct {
	Revision string `param:"revision,required"`
	Gone     bool   `param:"gone"`
}

// GatewayOwnerArgs: the gateway (the check's object) is owned by Revision (a revision or a tag).
type GatewayOwnerArgs struct {
	Revision string `param:"revision,required"`
}

// HelmReleaseVersionArgs: the release (the check's object) is deployed, at chart Version when given.
type HelmReleaseVersionArgs struct {
	Version string `param:"version"`
}

// NodeDrainedArgs: only DaemonSet, mirror and finished pods are left on the node (Node, or the check's
// object); with AmbientOnly, no ambient pod is left.
type NodeDrainedArgs struct {
	Node        string `param:"node"`
	AmbientOnly bool   `param:"ambientOnly"`
}

// NodeSchedulableArgs: the node (Node, or the check's object) is not cordoned.
type NodeSchedulableArgs struct {
	Node string `param:"node"`
}

// WorkloadsOnRevisionArgs: every pod of the step's restarted workloads (or of the workloads the tag
// reaches) runs a sidecar injected by Revision.
type WorkloadsOnRevisionArgs struct {
	Tag      string `param:"tag"`
	Revision string `param:"revision,required"`
}

// TrustedAccountsArgs: every revision (or Revision) trusts Accounts ("namespace/serviceaccount"), or
// every running ztunnel's account when Accounts is empty; with Only, it trusts no other account.
type TrustedAccountsArgs struct {
	Accounts []string `param:"accounts"`
	Revision string   `param:"revision"`
	Only     bool     `param:"only"`
}

// NodesReadyArgs: at least Min ready nodes carry the labels of Selector ("key=value,key2=value2").
type NodesReadyArgs struct {
	Selector string `param:"selector,required"`
	Min      int    `param:"min"`
}

// NodeAgentAbsentArgs: no pod of the DaemonSet (the check's object), not even a terminating one, is
// on Node, or on any node when Node is empty.
type NodeAgentAbsentArgs struct {
	Node string `param:"node"`
}

// WorkloadsReadyArgs: every listed workload ("Kind/namespace/name": Deployments, StatefulSets) has
// all its replicas updated, ready and available.
type WorkloadsReadyArgs struct {
	Workloads []string `param:"workloads,required"`
}

// NoAmbientPodsArgs: no pod that ambient captures runs on a node carrying the labels of Selector;
// DaemonSet and mirror pods count (drains leave them), finished pods do not.
type NoAmbientPodsArgs struct {
	Selector string `param:"selector,required"`
}

// FindingsClearArgs: ComputeCompatibility of the live mesh reports nothing that stops an upgrade to
// Target (or Version) with Strategy. With Component "control-plane", a ready control plane at
// Version's minor or newer runs instead.
type FindingsClearArgs struct {
	Target    string `param:"target"`
	Version   string `param:"version"`
	Strategy  string `param:"strategy"`
	Component string `param:"component"`
}

// DefaultRevisionArgs: istiod-default-validator is labelled istio.io/rev=Revision.
type DefaultRevisionArgs struct {
	Revision string `param:"revision,required"`
}

// BackupReadableArgs: the backup written by Step (default: the step the check belongs to) reads back
// equal. Revision names what was backed up, for the reader.
type BackupReadableArgs struct {
	Revision string `param:"revision"`
	Step     string `param:"step"`
}

// CRDsEstablishedArgs: every CRD of Group or a subgroup (default istio.io) is Established.
type CRDsEstablishedArgs struct {
	Group string `param:"group"`
}

// RevisionReadyArgs: the istiod Deployment of Revision (the check's object, or istiod-<revision>) is
// ready.
type RevisionReadyArgs struct {
	Revision string `param:"revision,required"`
}

// GatewayProgrammed: the Gateway (the check's object) has condition Programmed=True written for its
// current generation (what kubectl shows as READY, and what istiod writes once the waypoint's
// Deployment and Service are up).
type GatewayProgrammedArgs struct{}

// WaypointAccepted: istiod has written condition WaypointAccepted=True on the policy (the check's
// object: an AuthorizationPolicy, RequestAuthentication, ... attached with targetRefs) for its
// current generation. APIVersion is the policy's (default security.istio.io/v1).
type WaypointAcceptedArgs struct {
	APIVersion string `param:"apiVersion"`
}

// PodsCaptured: the namespace (the check's object) is labelled istio.io/dataplane-mode=ambient, and
// every pod of it that ambient captures carries ambient.istio.io/redirection=enabled. A pod counts
// when it is running (or pending) and not terminating, not on the host network, not labelled
// istio.io/dataplane-mode=none, and runs no injected sidecar: istio-cni never captures a pod with a
// sidecar (sidecar.istio.io/status), so right after the namespace is labelled only its pods without
// sidecars must be captured; the sidecar pods are counted in the reason and left to the restart.
type PodsCapturedArgs struct{}

// NoSidecars: no pod of the namespace (the check's object), terminating ones included, runs an
// injected sidecar (annotation sidecar.istio.io/status, or a container istio-proxy on a pod that is
// not a gateway's). Gateway pods injected with the gateway template and finished pods do not count.
type NoSidecarsArgs struct{}

// SidecarsInjected: every running pod of the step's workloads (a Reinject or Restart step; every pod
// of the namespace, the check's object, otherwise) runs an injected sidecar, no pod of them is left
// that runs without one, and none is redirected to ztunnel. Pods that opt out of injection
// (sidecar.istio.io/inject=false) and gateway pods do not count.
type SidecarsInjectedArgs struct{}

// BackupWritable: File can be written by the process that runs the executor: its directory exists
// and takes a new file, and File either does not exist or holds the backup Step of this very plan
// (a resumed run writes it again). It is checked before anything changes.
type BackupWritableArgs struct {
	File string `param:"file,required"`
	Step string `param:"step"`
}

// CheckType implementations.

func (DeploymentReadyArgs) CheckType() CheckType     { return CheckDeploymentReady }
func (DaemonSetRolledOutArgs) CheckType() CheckType  { return CheckDaemonSetRolledOut }
func (NodeAgentReadyArgs) CheckType() CheckType      { return CheckNodeAgentReady }
func (PodsRedirectedArgs) CheckType() CheckType      { return CheckPodsRedirected }
func (NoSandboxFailuresArgs) CheckType() CheckType   { return CheckNoSandboxFailures }
func (TagPointsToArgs) CheckType() CheckType         { return CheckTagPointsTo }
func (NoReferencesArgs) CheckType() CheckType        { return CheckNoReferences }
func (GatewayOwnerArgs) CheckType() CheckType        { return CheckGatewayOwner }
func (HelmReleaseVersionArgs) CheckType() CheckType  { return CheckHelmReleaseVersion }
func (NodeDrainedArgs) CheckType() CheckType         { return CheckNodeDrained }
func (NodeSchedulableArgs) CheckType() CheckType     { return CheckNodeSchedulable }
func (WorkloadsOnRevisionArgs) CheckType() CheckType { return CheckWorkloadsOnRevision }
func (TrustedAccountsArgs) CheckType() CheckType     { return CheckTrustedAccounts }
func (FindingsClearArgs) CheckType() CheckType       { return CheckFindingsClear }
func (DefaultRevisionArgs) CheckType() CheckType     { return CheckDefaultRevision }
func (BackupReadableArgs) CheckType() CheckType      { return CheckBackupReadable }
func (CRDsEstablishedArgs) CheckType() CheckType     { return CheckCRDsEstablished }
func (RevisionReadyArgs) CheckType() CheckType       { return CheckRevisionExistsAndReady }
func (NodesReadyArgs) CheckType() CheckType          { return CheckNodesReady }
func (NodeAgentAbsentArgs) CheckType() CheckType     { return CheckNodeAgentAbsent }
func (WorkloadsReadyArgs) CheckType() CheckType      { return CheckWorkloadsReady }
func (NoAmbientPodsArgs) CheckType() CheckType       { return CheckNoAmbientPods }
func (GatewayProgrammedArgs) CheckType() CheckType   { return CheckGatewayProgrammed }
func (WaypointAcceptedArgs) CheckType() CheckType    { return CheckWaypointAccepted }
func (PodsCapturedArgs) CheckType() CheckType        { return CheckPodsCaptured }
func (NoSidecarsArgs) CheckType() CheckType          { return CheckNoSidecars }
func (SidecarsInjectedArgs) CheckType() CheckType    { return CheckSidecarsInjected }
func (BackupWritableArgs) CheckType() CheckType      { return CheckBackupWritable }
