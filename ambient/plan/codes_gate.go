package plan

// Finding codes of the compatibility gate's rules on what the mesh refers to, on values a plan
// writes, and on known upgrade hazards (package compat), and of the component planners' Helm values.
const (
	// CodeHelmValuePinsVersion details: release, namespace, chart, key, value, chartVersion. A value
	// of the release (a tag, an image, a proxy image, a hub with a digest) fixes another version or
	// image than the chart's and the plan cannot move it. Object is the Helm release.
	CodeHelmValuePinsVersion Code = "HELM_VALUE_PINS_VERSION"
)

func init() {
	for c, help := range map[Code]string{
		CodeHelmValuePinsVersion: "a Helm value fixes an image or version the plan cannot move to the chart's version (a tag that names no release, a digest, an image without a tag)",
	} {
		codeHelp[c] = help
	}
}
