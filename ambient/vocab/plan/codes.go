package plan

import (
	"sort"
	"strings"
)

// Finding codes. They are stable: tests, callers and waivers use them; messages may improve.
const (
	// Input and release data.
	CodeTargetOlderThanCurrent      Code = "TARGET_OLDER_THAN_CURRENT"
	CodeTargetEqualsCurrent         Code = "TARGET_EQUALS_CURRENT"
	CodeComponentVersionUnknown     Code = "COMPONENT_VERSION_UNKNOWN"
	CodeVersionNewerThanReleaseData Code = "VERSION_NEWER_THAN_RELEASE_DATA"
	// CodeReleaseDataEstimated details: minor, field (a releases.Field), source (where the estimate
	// came from), decided (the code of the finding it decided, or the hop). Object is
	// ReleaseData <minor>/<field>.
	CodeReleaseDataEstimated Code = "RELEASE_DATA_ESTIMATED"

	// Control plane.
	CodeIstiodMissing                     Code = "ISTIOD_MISSING"
	CodeIstiodNotReady                    Code = "ISTIOD_NOT_READY"
	CodeControlPlaneVersionsMixed         Code = "CONTROL_PLANE_VERSIONS_MIXED"
	CodeInPlaceSkipsMinor                 Code = "IN_PLACE_SKIPS_MINOR"
	CodeRevisionUpgradeSkipsTooManyMinors Code = "REVISION_UPGRADE_SKIPS_TOO_MANY_MINORS"
	// CodeTagRevisionMissing details: tag, revision. Object is the tag object naming the revision,
	// Related everything that follows the tag (revision.Followers).
	CodeTagRevisionMissing Code = "TAG_REVISION_MISSING"
	// CodeTagWebhookAndServiceDisagree details: tag, webhookRevision, serviceRevision. Object is the webhook
	// configuration, Related the Service.
	CodeTagWebhookAndServiceDisagree Code = "TAG_WEBHOOK_AND_SERVICE_DISAGREE"
	CodeNamespaceRevisionMissing     Code = "NAMESPACE_REVISION_MISSING"
	CodeDefaultRevisionMissing       Code = "DEFAULT_REVISION_MISSING"
	CodeGatewayNotOwned              Code = "GATEWAY_NOT_OWNED"
	// CodeGatewayClaimedBySeveralRevisions details: owners (comma-separated revisions).
	CodeGatewayClaimedBySeveralRevisions Code = "GATEWAY_CLAIMED_BY_SEVERAL_REVISIONS"
	CodeNamespaceSidecarAndAmbient       Code = "NAMESPACE_SIDECAR_AND_AMBIENT"

	// Data plane against control plane.
	CodeSidecarAheadOfControlPlane      Code = "SIDECAR_AHEAD_OF_CONTROL_PLANE"
	CodeSidecarTooFarBehindControlPlane Code = "SIDECAR_TOO_FAR_BEHIND_CONTROL_PLANE"
	CodeGatewayAheadOfControlPlane      Code = "GATEWAY_AHEAD_OF_CONTROL_PLANE"
	CodeGatewayTooFarBehindControlPlane Code = "GATEWAY_TOO_FAR_BEHIND_CONTROL_PLANE"
	CodeCNIAheadOfControlPlane          Code = "CNI_AHEAD_OF_CONTROL_PLANE"
	CodeCNITooFarBehindControlPlane     Code = "CNI_TOO_FAR_BEHIND_CONTROL_PLANE"
	CodeZtunnelAheadOfControlPlane      Code = "ZTUNNEL_AHEAD_OF_CONTROL_PLANE"
	CodeZtunnelTooFarBehindControlPlane Code = "ZTUNNEL_TOO_FAR_BEHIND_CONTROL_PLANE"
	CodeDataPlaneWouldLagTarget         Code = "DATA_PLANE_WOULD_LAG_TARGET"

	// CNI.
	CodeCNIMissing             Code = "CNI_MISSING"
	CodeCNIRolloutIncomplete   Code = "CNI_ROLLOUT_INCOMPLETE"
	CodeCNIAmbientDisabled     Code = "CNI_AMBIENT_DISABLED"
	CodeNodeTaintedCNINotReady Code = "NODE_TAINTED_CNI_NOT_READY"
	CodeNodeWithoutCNI         Code = "NODE_WITHOUT_CNI"

	// ztunnel.
	CodeZtunnelMissing         Code = "ZTUNNEL_MISSING"
	CodeZtunnelSelectorOverlap Code = "ZTUNNEL_SELECTOR_OVERLAP"
	// CodeZtunnelNotTrusted details: revision, account (the untrusted one), trustList (the whole
	// comma-separated list the remedy sets).
	CodeZtunnelNotTrusted              Code = "ZTUNNEL_NOT_TRUSTED"
	CodeTrustedAccountWithoutZtunnel   Code = "TRUSTED_ACCOUNT_WITHOUT_ZTUNNEL"
	CodeTrustedAccountsUnreadable      Code = "TRUSTED_ACCOUNTS_UNREADABLE"
	CodeZtunnelRolloutIncomplete       Code = "ZTUNNEL_ROLLOUT_INCOMPLETE"
	CodeAmbientNodeWithoutReadyZtunnel Code = "AMBIENT_NODE_WITHOUT_READY_ZTUNNEL"
	CodeZtunnelControlPlaneUnknown     Code = "ZTUNNEL_CONTROL_PLANE_UNKNOWN"
	CodeZtunnelRenameNeedsNewerIstio   Code = "ZTUNNEL_RENAME_NEEDS_NEWER_ISTIO"
	// CodeZtunnelUpgradeRenamesDaemonSet details: daemonSet, newDaemonSet, serviceAccount, newServiceAccount,
	// chartVersion, resourceName (the value the upgrade passes, "" when none).
	CodeZtunnelUpgradeRenamesDaemonSet Code = "ZTUNNEL_UPGRADE_RENAMES_DAEMONSET"
	CodeAmbientPodsNotRedirected       Code = "AMBIENT_PODS_NOT_REDIRECTED"

	// Kubernetes, support and CRDs.
	CodeKubernetesUnsupportedByTarget  Code = "KUBERNETES_UNSUPPORTED_BY_TARGET"
	CodeKubernetesOnlyTestedByTarget   Code = "KUBERNETES_ONLY_TESTED_BY_TARGET"
	CodeKubernetesBelowTargetMinimum   Code = "KUBERNETES_BELOW_TARGET_MINIMUM"
	CodeKubernetesUnsupportedByCurrent Code = "KUBERNETES_UNSUPPORTED_BY_CURRENT"
	CodeKubernetesVersionUnknown       Code = "KUBERNETES_VERSION_UNKNOWN"
	CodeSourceEndOfLife                Code = "SOURCE_END_OF_LIFE"
	CodeTargetEndOfLife                Code = "TARGET_END_OF_LIFE"
	CodeEndOfLifeNotChecked            Code = "END_OF_LIFE_NOT_CHECKED"
	// CodeEndOfLifeUnknown details: minor, of ("running" or "target").
	CodeEndOfLifeUnknown          Code = "END_OF_LIFE_UNKNOWN"
	CodeGatewayAPICRDsMissing     Code = "GATEWAY_API_CRDS_MISSING"
	CodeGatewayAPICRDsTooOld      Code = "GATEWAY_API_CRDS_TOO_OLD"
	CodeCRDOwnershipNeedsAdoption Code = "CRD_OWNERSHIP_NEEDS_ADOPTION"

	// Upgrade planning.
	// CodePDBBlocksDrain details: nodes (how many drains it holds), covers (the workloads it covers,
	// comma-separated), never ("true" when the budget can never allow an eviction: maxUnavailable 0,
	// minAvailable 100% or all its pods), short (how many healthy pods the budget lacks, when under
	// IfHealthyBudget it refuses even its unready pods). Object is the budget, Related the nodes: one
	// finding per budget.
	CodePDBBlocksDrain          Code = "PDB_BLOCKS_DRAIN"
	CodeUnmanagedPodBlocksDrain Code = "UNMANAGED_POD_BLOCKS_DRAIN"
	CodeSettingDefaultChanges   Code = "SETTING_DEFAULT_CHANGES"
	CodeHelmReleaseMissing      Code = "HELM_RELEASE_MISSING"
	// CodeHelmReleaseNotDeployed details: status (Helm's, of the release's latest record), revision.
	// Object is the HelmRelease.
	CodeHelmReleaseNotDeployed Code = "HELM_RELEASE_NOT_DEPLOYED"
	// CodeHelmReleaseValuesUnknown details: namespace, releases (comma-separated), command (the kubectl
	// command that saves their records). Object is the release namespace, Related the releases.
	CodeHelmReleaseValuesUnknown      Code = "HELM_RELEASE_VALUES_UNKNOWN"
	CodeZtunnelRevisionSwitchRestarts Code = "ZTUNNEL_REVISION_SWITCH_RESTARTS"
	CodeUpgradeChained                Code = "UPGRADE_CHAINED"
	// CodeStrategyInPlaceForUnrevisioned details: strategy, revision. Object is the istiod Deployment.
	CodeStrategyInPlaceForUnrevisioned      Code = "STRATEGY_IN_PLACE_FOR_UNREVISIONED"
	CodeOldRevisionStillReferenced          Code = "OLD_REVISION_STILL_REFERENCED"
	CodeTagOwnedByOldRelease                Code = "TAG_OWNED_BY_OLD_RELEASE"
	CodeZtunnelReplacementResetsConnections Code = "ZTUNNEL_REPLACEMENT_RESETS_CONNECTIONS"
)

// codeHelp is the catalog of codes with one line each, for docs and for checking waivers.
var codeHelp = map[Code]string{
	CodeTargetOlderThanCurrent:              "the target is older than the running control plane; downgrades are not planned",
	CodeTargetEqualsCurrent:                 "the control plane already runs the target",
	CodeComponentVersionUnknown:             "a component's version could not be read from its image",
	CodeVersionNewerThanReleaseData:         "a running version is newer than the release data knows",
	CodeReleaseDataEstimated:                "an estimated value of the release data decided a finding or the patch of an upgrade hop",
	CodeIstiodMissing:                       "no istiod Deployment was found",
	CodeIstiodNotReady:                      "an istiod revision has unready replicas",
	CodeControlPlaneVersionsMixed:           "istiod revisions run different minors",
	CodeInPlaceSkipsMinor:                   "an in-place upgrade may move one minor at a time",
	CodeRevisionUpgradeSkipsTooManyMinors:   "a revision (canary) upgrade may move at most two minors",
	CodeTagRevisionMissing:                  "a revision tag points at a revision with no istiod",
	CodeTagWebhookAndServiceDisagree:        "a tag's webhook configuration and Service point at different revisions, so both claim what follows it",
	CodeNamespaceRevisionMissing:            "a namespace's istio.io/rev names neither a revision nor a tag",
	CodeDefaultRevisionMissing:              "istiod-default-validator names a revision with no istiod",
	CodeGatewayNotOwned:                     "no istiod revision owns a gateway or waypoint",
	CodeGatewayClaimedBySeveralRevisions:    "several istiod revisions claim one Gateway API gateway or waypoint, and each deploys it",
	CodeNamespaceSidecarAndAmbient:          "a namespace selects sidecar injection and ambient at once",
	CodeSidecarAheadOfControlPlane:          "sidecars run a newer version than their control plane",
	CodeSidecarTooFarBehindControlPlane:     "sidecars are more than one minor behind their control plane",
	CodeGatewayAheadOfControlPlane:          "a gateway runs a newer version than its control plane",
	CodeGatewayTooFarBehindControlPlane:     "a gateway is more than one minor behind its control plane",
	CodeCNIAheadOfControlPlane:              "istio-cni is newer than the control plane",
	CodeCNITooFarBehindControlPlane:         "istio-cni is more than one minor behind the control plane",
	CodeZtunnelAheadOfControlPlane:          "ztunnel is newer than the control plane it connects to",
	CodeZtunnelTooFarBehindControlPlane:     "ztunnel is more than one minor behind the control plane",
	CodeDataPlaneWouldLagTarget:             "after the control plane moves to the target, CNI or ztunnel would be more than one minor behind",
	CodeCNIMissing:                          "ambient is in use but istio-cni is not installed",
	CodeCNIRolloutIncomplete:                "the istio-cni DaemonSet has not finished rolling out",
	CodeCNIAmbientDisabled:                  "istio-cni runs without ambient enabled",
	CodeNodeTaintedCNINotReady:              "a node carries the cni.istio.io/not-ready taint",
	CodeNodeWithoutCNI:                      "a node that runs ambient pods has no ready istio-cni pod",
	CodeZtunnelMissing:                      "ambient is in use but no ztunnel DaemonSet exists",
	CodeZtunnelSelectorOverlap:              "two ztunnel DaemonSets in one namespace select the same pods",
	CodeZtunnelNotTrusted:                   "istiod does not trust a running ztunnel's service account",
	CodeTrustedAccountWithoutZtunnel:        "istiod trusts a ztunnel account that no DaemonSet uses",
	CodeTrustedAccountsUnreadable:           "istiod's trusted accounts come from a source the snapshot cannot read",
	CodeZtunnelRolloutIncomplete:            "a ztunnel DaemonSet has not finished rolling out",
	CodeAmbientNodeWithoutReadyZtunnel:      "a node runs ambient pods without a ready ztunnel",
	CodeZtunnelControlPlaneUnknown:          "which istiod a ztunnel connects to cannot be told",
	CodeZtunnelRenameNeedsNewerIstio:        "a ztunnel with a custom name needs an Istio version that supports it",
	CodeZtunnelUpgradeRenamesDaemonSet:      "a ztunnel chart upgrade would rename the DaemonSet (replacing ztunnel on every node at once) or its service account",
	CodeAmbientPodsNotRedirected:            "pods that should be in ambient carry no redirection annotation",
	CodeKubernetesUnsupportedByTarget:       "the target does not support the cluster's Kubernetes version",
	CodeKubernetesOnlyTestedByTarget:        "the target was tested, not supported, on the cluster's Kubernetes version",
	CodeKubernetesBelowTargetMinimum:        "the cluster's Kubernetes is below the target's hard minimum",
	CodeKubernetesUnsupportedByCurrent:      "the running Istio does not support the cluster's Kubernetes version",
	CodeKubernetesVersionUnknown:            "the Kubernetes version is unknown",
	CodeSourceEndOfLife:                     "the running Istio minor is past its end of life",
	CodeTargetEndOfLife:                     "the target minor is past, or within 30 days of, its end of life",
	CodeEndOfLifeNotChecked:                 "no date was given, so end of life was not checked",
	CodeEndOfLifeUnknown:                    "the release data gives no end of life for a running or target minor, and none follows from the support policy yet: its support is unknown",
	CodeGatewayAPICRDsMissing:               "waypoints exist or ambient is used but the Gateway API CRDs are missing",
	CodeGatewayAPICRDsTooOld:                "the Gateway API CRD bundle is older than the target is built against",
	CodeCRDOwnershipNeedsAdoption:           "Istio CRDs lack Helm ownership metadata and need adopting before upgrading base",
	CodePDBBlocksDrain:                      "a PodDisruptionBudget allows no disruption, so draining a node for ztunnel will wait",
	CodeUnmanagedPodBlocksDrain:             "a pod without a controller runs on a node to drain; eviction deletes it for good",
	CodeSettingDefaultChanges:               "a chart setting's default changes between the current and target versions",
	CodeHelmReleaseMissing:                  "a component was not installed with Helm, so the plan cannot upgrade it",
	CodeHelmReleaseNotDeployed:              "a Helm release the plan changes is pending (an install, upgrade or rollback that never finished), failed or being uninstalled, so Helm refuses it or would start from a half-applied state",
	CodeHelmReleaseValuesUnknown:            "Helm releases were read without their release records, so their values are unknown offline",
	CodeZtunnelRevisionSwitchRestarts:       "ztunnel is pinned to a revision; switching it restarts ztunnel on every node",
	CodeUpgradeChained:                      "the upgrade is chained through intermediate minors",
	CodeStrategyInPlaceForUnrevisioned:      "no strategy was given and the control plane is unrevisioned, so it is upgraded in place",
	CodeOldRevisionStillReferenced:          "the old revision is still referred to after the planned moves, so its removal is blocked",
	CodeTagOwnedByOldRelease:                "the old revision's Helm release owns tag objects its uninstall would delete, and the plan cannot take them out of it",
	CodeZtunnelReplacementResetsConnections: "replacing ztunnel resets long-lived connections of pods on the node",
}

// CodeInfo is what the code catalog holds of one code: its one-line help and the severities its
// findings are raised with (blocking, waivable, info, in that order).
type CodeInfo struct {
	Help       string
	Severities []Severity
}

// RegisterCodes adds to the catalog (KnownCode, CodeHelp, AllCodes, CodeSeverities) the codes a
// package of this module declares and raises, beside its planner: migrate's are in migrate. It is
// called from that package's init, so a program knows the codes of the packages it links. A code
// registered twice, or without help or severities, panics: the package is wrong, not its input.
func RegisterCodes(codes map[Code]CodeInfo) {
	for c, info := range codes {
		if _, ok := codeHelp[c]; ok {
			panic("plan.RegisterCodes: code " + string(c) + " is already in the catalog")
		}
		if info.Help == "" || len(info.Severities) == 0 {
			panic("plan.RegisterCodes: code " + string(c) + " has no help or no severities")
		}
		codeHelp[c] = info.Help
		codeSeverities[c] = append(severities(nil), info.Severities...)
	}
}

// KnownCode reports whether c is a code of this library (of the packages the program links).
func KnownCode(c Code) bool { _, ok := codeHelp[c]; return ok }

// CodeHelp returns the one-line description of a code.
func CodeHelp(c Code) string { return codeHelp[c] }

// AllCodes returns every code, sorted.
func AllCodes() []Code {
	out := make([]Code, 0, len(codeHelp))
	for c := range codeHelp {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// NearestCode returns the known code closest to s, compared case-insensitively with '-' read as
// '_' ("pdb_blocks-drain" gives PDB_BLOCKS_DRAIN); "" when none is close (more than a third of its
// letters differ).
func NearestCode(s string) Code {
	want := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_"))
	if want == "" {
		return ""
	}
	best, bestD := Code(""), len(want)/3+1
	for _, c := range AllCodes() {
		if d := editDistance(want, string(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
