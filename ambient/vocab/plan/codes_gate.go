package plan

// Finding codes of the compatibility gate's rules on what the mesh refers to, on values a plan
// writes, and on known upgrade hazards (package compat), and of the component planners' Helm values.
const (
	// CodeHelmValuePinsVersion details: release, namespace, chart, key, value, chartVersion. A value
	// of the release (a tag, an image, a proxy image, a hub with a digest) fixes another version or
	// image than the chart's and the plan cannot move it. Object is the Helm release.
	CodeHelmValuePinsVersion Code = "HELM_VALUE_PINS_VERSION"
	// CodeSidecarsKeepOldProxy details: revision, pods, workloads. After an in-place istiod upgrade,
	// the sidecars the revision injected keep their old proxy until restarted. Object is the
	// revision's istiod Deployment, Related the workloads.
	CodeSidecarsKeepOldProxy Code = "SIDECARS_KEEP_OLD_PROXY"

	// CodeIstiodTrustNotPlannable details: revision, deployment (namespace/name), account (the ztunnel
	// to trust), env (CA_TRUSTED_NODE_ACCOUNTS), value (the whole list to set). A ztunnel the plan
	// adds connects to an istiod not installed with Helm. Object is its Deployment.
	CodeIstiodTrustNotPlannable Code = "ISTIOD_TRUST_NOT_PLANNABLE"
	// CodeIstiodTrustListFromValueFrom details: as CodeIstiodTrustNotPlannable. The istiod a ztunnel the plan adds
	// connects to reads its trust list with valueFrom, which overrides the env value a plan writes.
	CodeIstiodTrustListFromValueFrom Code = "ISTIOD_TRUST_LIST_FROM_VALUE_FROM"
	// CodeIstiodDiscoveryUnknown details: revision, namespace. Whether an istiod without Helm values
	// discovers the namespace of a ztunnel the plan adds cannot be read.
	CodeIstiodDiscoveryUnknown Code = "ISTIOD_DISCOVERY_UNKNOWN"

	// References that do not resolve. Each names the referring object as Object and what it names
	// in Related (when that is an object) and details.

	// CodeWorkloadRevisionMissing details: revision. A workload's pods are labelled istio.io/rev
	// with neither a revision nor a tag.
	CodeWorkloadRevisionMissing Code = "WORKLOAD_REVISION_MISSING"
	// CodePolicyRevisionMissing details: revision. A config object is labelled istio.io/rev with no
	// revision's name (a tag does not count).
	CodePolicyRevisionMissing Code = "POLICY_REVISION_MISSING"
	// CodeZtunnelRevisionMissing details: revision. A ztunnel is pinned to a revision that has no
	// istiod.
	CodeZtunnelRevisionMissing Code = "ZTUNNEL_REVISION_MISSING"
	// CodeInjectorRevisionMissing details: revision, injector. A revision's own injector remains
	// without its istiod.
	CodeInjectorRevisionMissing Code = "INJECTOR_REVISION_MISSING"
	// CodeWaypointReferenceDangling details: waypoint (namespace/name), traffic (service, workload,
	// or empty for a namespace). istio.io/use-waypoint names no Gateway, no waypoint, or one that
	// does not take that traffic.
	CodeWaypointReferenceDangling Code = "WAYPOINT_REFERENCE_DANGLING"
	// CodePolicyTargetMissing details: missing (comma-separated objects). A policy's targetRefs name
	// a Gateway or Service that does not exist.
	CodePolicyTargetMissing Code = "POLICY_TARGET_MISSING"
	// CodeTrustEntryHasSpaces details: revision, entry, account. A trust-list entry has spaces
	// istiod does not trim, so the ztunnel it was meant for is not trusted.
	CodeTrustEntryHasSpaces Code = "TRUST_ENTRY_HAS_SPACES"
	// CodeNodePoolMissing details: nodePool, nodes (count). Nodes are labelled with a Karpenter
	// NodePool that does not exist. Object is the NodePool, Related the nodes.
	CodeNodePoolMissing Code = "NODEPOOL_MISSING"

	// Advisories (package ambient/knowledge/advisories).

	// CodeAdvisoryAffectsRunning details: advisory, component, version, newestUnaffected. A running
	// version is affected by a known upgrade hazard whose conditions hold.
	CodeAdvisoryAffectsRunning Code = "ADVISORY_AFFECTS_RUNNING"
	// CodeAdvisoryAffectsTarget details: as CodeAdvisoryAffectsRunning. The target version is affected; waivable
	// when a newer patch of its line is not.
	CodeAdvisoryAffectsTarget Code = "ADVISORY_AFFECTS_TARGET"
	// CodeAdvisoryUndecided details: advisories (comma-separated IDs). Advisories affect a version
	// but depend on conditions the snapshot cannot decide.
	CodeAdvisoryUndecided Code = "ADVISORY_UNDECIDED"
	// CodeIstiodGRPCLimitTooLow details: revision, workloads, limit, need. istiod's gRPC receive limit is
	// below what reconnecting ztunnels send at the mesh's size (advisory ztunnel#1966).
	CodeIstiodGRPCLimitTooLow Code = "ISTIOD_GRPC_LIMIT_TOO_LOW"
)

func init() {
	for c, help := range map[Code]string{
		CodeWorkloadRevisionMissing:      "a workload's pods are labelled istio.io/rev with neither a revision nor a tag, so new pods get no sidecar",
		CodePolicyRevisionMissing:        "a config object is labelled istio.io/rev with no revision's name (tags do not count), so no istiod reads it",
		CodeZtunnelRevisionMissing:       "a ztunnel is pinned to a revision with no istiod, so its pods cannot get configuration or certificates",
		CodeInjectorRevisionMissing:      "a revision's injector remains without its istiod, so every pod it selects is refused",
		CodeWaypointReferenceDangling:    "istio.io/use-waypoint names no Gateway, no waypoint, or one that does not take that traffic, so the traffic bypasses it",
		CodePolicyTargetMissing:          "a policy's targetRefs name a Gateway or Service that does not exist, so it applies to nothing there",
		CodeTrustEntryHasSpaces:          "a trust-list entry has spaces istiod does not trim, so the ztunnel it was meant for is not trusted",
		CodeNodePoolMissing:              "nodes are labelled with a Karpenter NodePool that does not exist",
		CodeAdvisoryAffectsRunning:       "a running version is affected by a known upgrade hazard (ambient/knowledge/advisories) whose conditions hold",
		CodeAdvisoryAffectsTarget:        "the target version is affected by a known upgrade hazard; a newer patch of its line may not be",
		CodeAdvisoryUndecided:            "advisories affect a running or target version but depend on conditions the snapshot cannot decide",
		CodeIstiodGRPCLimitTooLow:        "istiod's gRPC receive limit (ISTIO_GPRC_MAXRECVMSGSIZE) is below what reconnecting ztunnels send at the mesh's size",
		CodeIstiodTrustNotPlannable:      "a ztunnel the plan adds connects to an istiod not installed with Helm, whose trust list the plan cannot change",
		CodeIstiodTrustListFromValueFrom: "a ztunnel the plan adds connects to an istiod whose trust list comes from valueFrom, which overrides any env value a plan writes",
		CodeIstiodDiscoveryUnknown:       "whether an istiod without Helm values discovers the namespace of a ztunnel the plan adds cannot be read",
		CodeSidecarsKeepOldProxy:         "after an in-place istiod upgrade, sidecars keep their old proxy until their pods are restarted",
		CodeHelmValuePinsVersion:         "a Helm value fixes an image or version the plan cannot move to the chart's version (a tag that names no release, a digest, an image without a tag)",
	} {
		codeHelp[c] = help
	}
}
