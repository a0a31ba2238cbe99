package plan

import (
	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// Risk grades how much a step can hurt traffic if it goes wrong.
type Risk string

// Risks.
const (
	RiskNone   Risk = "none"
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Step is one unit of a plan. Exactly one action field is set; Kind names it.
type Step struct {
	// ID is stable across re-planning of the same input: "ztunnel/node/pool-a-3/drain".
	ID string `json:"id"`
	// Description says what the step does, Reason why it is needed.
	Description string `json:"description"`
	Reason      string `json:"reason,omitempty"`
	// DependsOn lists IDs of earlier steps that must finish first.
	DependsOn []string `json:"dependsOn,omitempty"`
	Risk      Risk     `json:"risk"`
	// Preconditions are re-checked just before the step runs.
	Preconditions []Check `json:"preconditions,omitempty"`

	HelmInstall   *HelmRelease   `json:"helmInstall,omitempty"`
	HelmUpgrade   *HelmRelease   `json:"helmUpgrade,omitempty"`
	HelmUninstall *HelmUninstall `json:"helmUninstall,omitempty"`
	HelmRollback  *HelmRollback  `json:"helmRollback,omitempty"`
	ApplyObject   *ApplyObject   `json:"applyObject,omitempty"`
	DeleteObject  *DeleteObject  `json:"deleteObject,omitempty"`
	PatchLabels   *PatchLabels   `json:"patchLabels,omitempty"`
	MoveTag       *TagMove       `json:"moveTag,omitempty"`
	Cordon        *NodeRef       `json:"cordon,omitempty"`
	Uncordon      *NodeRef       `json:"uncordon,omitempty"`
	Drain         *NodeDrain     `json:"drain,omitempty"`
	DeletePod     *PodSelection  `json:"deletePod,omitempty"`
	Restart       *Restart       `json:"restart,omitempty"`
	WaitFor       *WaitFor       `json:"waitFor,omitempty"`
	Verify        *Verification  `json:"verify,omitempty"`
	Backup        *Backup        `json:"backup,omitempty"`
	Approval      *Approval      `json:"approval,omitempty"`
	HealthGate    *HealthGate    `json:"healthGate,omitempty"`

	// Verification is checked after the action; the step is done only when every check passes.
	Verification []Check `json:"verification,omitempty"`
	// Rollback undoes the step, when it can be undone. It is a step of its own with one action.
	Rollback *Step `json:"rollback,omitempty"`
	// Notes are extra facts for the reviewer (what may hold a drain, connection resets, ...).
	Notes []string `json:"notes,omitempty"`
	// Blocked, when set, says why the step must not run yet; the executor refuses it.
	Blocked string `json:"blocked,omitempty"`
}

// Kind is the name of a step's action.
type Kind string

// Action kinds, one per Step action field.
const (
	KindHelmInstall   Kind = "HelmInstall"
	KindHelmUpgrade   Kind = "HelmUpgrade"
	KindHelmUninstall Kind = "HelmUninstall"
	KindHelmRollback  Kind = "HelmRollback"
	KindApplyObject   Kind = "ApplyObject"
	KindDeleteObject  Kind = "DeleteObject"
	KindPatchLabels   Kind = "PatchLabels"
	KindMoveTag       Kind = "MoveTag"
	KindCordon        Kind = "Cordon"
	KindUncordon      Kind = "Uncordon"
	KindDrain         Kind = "Drain"
	KindDeletePod     Kind = "DeletePod"
	KindRestart       Kind = "Restart"
	KindWaitFor       Kind = "WaitFor"
	KindVerify        Kind = "Verify"
	KindBackup        Kind = "Backup"
	KindApproval      Kind = "Approval"
	KindHealthGate    Kind = "HealthGate"
)

// actions lists the step's set actions with their kinds.
func (s *Step) actions() []Kind {
	var k []Kind
	add := func(set bool, kind Kind) {
		if set {
			k = append(k, kind)
		}
	}
	add(s.HelmInstall != nil, KindHelmInstall)
	add(s.HelmUpgrade != nil, KindHelmUpgrade)
	add(s.HelmUninstall != nil, KindHelmUninstall)
	add(s.HelmRollback != nil, KindHelmRollback)
	add(s.ApplyObject != nil, KindApplyObject)
	add(s.DeleteObject != nil, KindDeleteObject)
	add(s.PatchLabels != nil, KindPatchLabels)
	add(s.MoveTag != nil, KindMoveTag)
	add(s.Cordon != nil, KindCordon)
	add(s.Uncordon != nil, KindUncordon)
	add(s.Drain != nil, KindDrain)
	add(s.DeletePod != nil, KindDeletePod)
	add(s.Restart != nil, KindRestart)
	add(s.WaitFor != nil, KindWaitFor)
	add(s.Verify != nil, KindVerify)
	add(s.Backup != nil, KindBackup)
	add(s.Approval != nil, KindApproval)
	add(s.HealthGate != nil, KindHealthGate)
	return k
}

// Kind returns the kind of the step's action, or "" when it has none or several (Validate says which).
func (s *Step) Kind() Kind {
	k := s.actions()
	if len(k) != 1 {
		return ""
	}
	return k[0]
}

// ChartRef says where a chart comes from. Exactly one of Repository, OCI and Path is set.
type ChartRef struct {
	// Name of the chart in the repository (base, istiod, cni, ztunnel, gateway).
	Name string `json:"name"`
	// Repository is a chart repository URL (https://istio-release.storage.googleapis.com/charts).
	Repository string `json:"repository,omitempty"`
	// OCI is an oci:// reference to the chart, without the version.
	OCI string `json:"oci,omitempty"`
	// Path is a local chart directory or .tgz.
	Path string `json:"path,omitempty"`
	// Version of the chart (the Istio version for released charts).
	Version string `json:"version"`
}

// HelmRelease is a Helm install or upgrade.
type HelmRelease struct {
	Release   string   `json:"release"`
	Namespace string   `json:"namespace"`
	Chart     ChartRef `json:"chart"`
	// Values are passed as given (helm --values). Only JSON types: string, bool, float64, []any, map[string]any.
	Values map[string]any `json:"values,omitempty"`
	// ReuseValues keeps the release's current user values under Values (helm --reuse-values).
	ReuseValues bool `json:"reuseValues,omitempty"`
	// PreviousRevision is the Helm revision to roll back to, for upgrades.
	PreviousRevision int `json:"previousRevision,omitempty"`
}

// HelmUninstall removes a release.
type HelmUninstall struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// BackupStep is the ID of the Backup step that saved what is removed; required.
	BackupStep string `json:"backupStep"`
}

// HelmRollback returns a release to an earlier Helm revision (helm rollback).
type HelmRollback struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Revision is the Helm release revision to return to.
	Revision int `json:"revision"`
}

// ApplyObject server-side-applies a Kubernetes object given as data.
type ApplyObject struct {
	Object map[string]any `json:"object"`
}

// Ref names the object to apply.
func (a ApplyObject) Ref() mesh.ObjectRef {
	meta, _ := a.Object["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	kind, _ := a.Object["kind"].(string)
	return mesh.ObjectRef{Kind: kind, Namespace: ns, Name: name}
}

// DeleteObject deletes one object after a Backup step saved it.
type DeleteObject struct {
	APIVersion string         `json:"apiVersion"`
	Object     mesh.ObjectRef `json:"object"`
	BackupStep string         `json:"backupStep"`
}

// PatchLabels sets and removes labels on one object.
type PatchLabels struct {
	APIVersion string            `json:"apiVersion"`
	Object     mesh.ObjectRef    `json:"object"`
	Set        map[string]string `json:"set,omitempty"`
	Remove     []string          `json:"remove,omitempty"`
}

// TagMove points a revision tag at another revision: it re-renders the tag's webhook configuration
// (and, from Istio 1.28, its Service).
type TagMove struct {
	Tag  string `json:"tag"`
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// Namespace istiod runs in.
	Namespace string `json:"namespace"`
	// Objects are the rendered objects the move applies (webhook configuration, Service).
	Objects []map[string]any `json:"objects,omitempty"`
}

// NodeRef names a node.
type NodeRef struct {
	Node string `json:"node"`
}

// NodeDrain evicts pods from a node through the Eviction API, respecting PodDisruptionBudgets.
type NodeDrain struct {
	Node string `json:"node"`
	// TimeoutSeconds bounds the drain; 0 means the executor's default.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
	// IgnoreDaemonSets leaves DaemonSet pods (always true for ambient node drains).
	IgnoreDaemonSets bool `json:"ignoreDaemonSets"`
	// DeleteEmptyDirData allows evicting pods with emptyDir volumes.
	DeleteEmptyDirData bool `json:"deleteEmptyDirData"`
	// MayHold lists what may hold the drain up, by name, for the reviewer.
	MayHold []string `json:"mayHold,omitempty"`
	// AmbientOnly evicts only the pods ambient captures when the drain runs (ambient namespace or pod
	// label, not opted out, no sidecar, not on the host network); every other pod stays. Node-by-node
	// ztunnel replacement drains so the nodes that ran no ambient pod when the plan was made: pods
	// evicted from earlier nodes may have been rescheduled onto them since.
	AmbientOnly bool `json:"ambientOnly,omitempty"`
}

// PodSelection selects pods: by namespace and label selector, optionally on one node.
type PodSelection struct {
	Namespace string            `json:"namespace"`
	Selector  map[string]string `json:"selector"`
	Node      string            `json:"node,omitempty"`
}

// Restart rolls out the workloads again (kubectl rollout restart), in batches.
type Restart struct {
	Workloads []mesh.ObjectRef `json:"workloads"`
	BatchSize int              `json:"batchSize,omitempty"`
}

// WaitFor waits until a condition holds.
type WaitFor struct {
	Check          Check `json:"check"`
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
}

// Verification is a step that only checks.
type Verification struct {
	Checks []Check `json:"checks"`
}

// Backup writes objects to the backup store and reads them back before any later step may delete them.
type Backup struct {
	Objects []BackupObject `json:"objects"`
}

// BackupObject is one object (or Helm release) to back up.
type BackupObject struct {
	APIVersion string         `json:"apiVersion,omitempty"`
	Object     mesh.ObjectRef `json:"object"`
	// HelmRelease, when set, backs up the release (manifest and values) instead of one object.
	HelmRelease string `json:"helmRelease,omitempty"`
}

// Approval pauses the run until a person approves.
type Approval struct {
	Message string `json:"message"`
}

// HealthGate asks the caller's probe whether the mesh is healthy (error rate, resets, latency) and stops
// the run if not.
type HealthGate struct {
	// Probe names the probe the caller registered with the executor.
	Probe string `json:"probe"`
	// Scope says what the gate watches ("tag prod-stable", "node pool-a-3").
	Scope string `json:"scope"`
	// SettleSeconds is how long to wait after the previous step before asking.
	SettleSeconds int64 `json:"settleSeconds,omitempty"`
}

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
)

// Check is one verifiable condition, as data.
type Check struct {
	Type CheckType `json:"type"`
	// Object the check is about, when there is one.
	Object mesh.ObjectRef `json:"object,omitzero"`
	// Params carry the check's arguments (version, revision, node, window seconds, ...).
	Params map[string]string `json:"params,omitempty"`
	// Description says in words what must hold.
	Description string `json:"description"`
}
