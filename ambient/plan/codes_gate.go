package plan

// Finding codes of the compatibility gate's rules on what the mesh refers to, on values a plan
// writes, and on known upgrade hazards (package compat), and of the component planners' Helm values.
const (
	// CodeHelmValuePinsVersion details: release, namespace, chart, key, value, chartVersion. A value
	// of the release (a tag, an image, a proxy image, a hub with a digest) fixes another version or
	// image than the chart's and the plan cannot move it. Object is the Helm release.
	CodeHelmValuePinsVersion Code = "HELM_VALUE_PINS_VERSION"
	// CodeSidecarsOnOldProxy details: revision, pods, workloads. After an in-place istiod upgrade,
	// the sidecars the revision injected keep their old proxy until restarted. Object is the
	// revision's istiod Deployment, Related the workloads.
	CodeSidecarsOnOldProxy Code = "SIDECARS_KEEP_OLD_PROXY"

	// CodeTrustNotPlannable details: revision, deployment (namespace/name), account (the ztunnel
	// to trust), env (CA_TRUSTED_NODE_ACCOUNTS), value (the whole list to set). A ztunnel the plan
	// adds connects to an istiod not installed with Helm. Object is its Deployment.
	CodeTrustNotPlannable Code = "ISTIOD_TRUST_NOT_PLANNABLE"
	// CodeTrustListOverridden details: as CodeTrustNotPlannable. The istiod a ztunnel the plan adds
	// connects to reads its trust list with valueFrom, which overrides the env value a plan writes.
	CodeTrustListOverridden Code = "ISTIOD_TRUST_LIST_FROM_VALUE_FROM"
	// CodeDiscoveryUnknown details: revision, namespace. Whether an istiod without Helm values
	// discovers the namespace of a ztunnel the plan adds cannot be read.
	CodeDiscoveryUnknown Code = "ISTIOD_DISCOVERY_UNKNOWN"
)

func init() {
	for c, help := range map[Code]string{
		CodeTrustNotPlannable:    "a ztunnel the plan adds connects to an istiod not installed with Helm, whose trust list the plan cannot change",
		CodeTrustListOverridden:  "a ztunnel the plan adds connects to an istiod whose trust list comes from valueFrom, which overrides any env value a plan writes",
		CodeDiscoveryUnknown:     "whether an istiod without Helm values discovers the namespace of a ztunnel the plan adds cannot be read",
		CodeSidecarsOnOldProxy:   "after an in-place istiod upgrade, sidecars keep their old proxy until their pods are restarted",
		CodeHelmValuePinsVersion: "a Helm value fixes an image or version the plan cannot move to the chart's version (a tag that names no release, a digest, an image without a tag)",
	} {
		codeHelp[c] = help
	}
}
