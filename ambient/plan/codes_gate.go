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
)

func init() {
	for c, help := range map[Code]string{
		CodeSidecarsOnOldProxy:   "after an in-place istiod upgrade, sidecars keep their old proxy until their pods are restarted",
		CodeHelmValuePinsVersion: "a Helm value fixes an image or version the plan cannot move to the chart's version (a tag that names no release, a digest, an image without a tag)",
	} {
		codeHelp[c] = help
	}
}
