package ambient

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// baseCRDs adds the upgrade of the base chart (the Istio CRDs), first of every hop.
func (u *upgrader) baseCRDs(s *mesh.Snapshot, target mesh.Version, prefix string) {
	b := u.b
	h, ok := b.Release(s, "base", "")
	if !ok {
		b.NoRelease(mesh.ObjectRef{Kind: "HelmRelease", Namespace: "istio-system", Name: "istio-base"}, "the Istio CRDs (chart base)")
		return
	}
	st := b.Upgrade(prefix+"base/upgrade", fmt.Sprintf("upgrade the Istio CRDs (release %s) to %s", h.Name, target),
		"CRDs go first: a newer control plane may need new fields and versions", h, target, nil, plan.RiskLow,
		plan.NewCheck(mesh.ObjectRef{}, plan.CRDsEstablishedArgs{Group: "istio.io"}, "every Istio CRD is Established"))
	st.Notes = append(st.Notes, "Istio CRDs carry helm.sh/resource-policy: keep; rolling base back leaves the newer CRDs in place, which older istiod accepts")
	b.Add(st)
}

// settingChange is a chart default that changes at a version.
type settingChange struct {
	chart, key string
	since      mesh.Version
	what       string
}

var settingChanges = []settingChange{
	{"cni", "ambient.dnsCapture", mesh.Version{Major: 1, Minor: 25}, "DNS capture for ambient pods turns on by default (false → true)"},
	{"cni", "ambient.reconcileIptablesOnStartup", mesh.Version{Major: 1, Minor: 29}, "the agent reconciles pod iptables rules on start (false → true)"},
	{"cni", "terminationGracePeriodSeconds", mesh.Version{Major: 1, Minor: 29}, "the CNI agent's grace period becomes a value, default 30s instead of a fixed 5s"},
	{"ztunnel", "resourceName", mesh.Version{Major: 1, Minor: 25, Patch: 1}, "ztunnel can be renamed (resourceName); istiod's trustedZtunnelName follows in 1.25.2"},
	{"ztunnel", "updateStrategy", mesh.Version{Major: 1, Minor: 26}, "the ztunnel update strategy becomes a value (needed for node by node)"},
	{"gateway", "labels", mesh.Version{Major: 1, Minor: 25}, "gateway pods get istio.io/dataplane-mode=none by default and stay out of ambient"},
	{"base", "crds", mesh.Version{Major: 1, Minor: 27}, "networking.istio.io CRDs store v1 instead of v1beta1"},
	{"base", "crds", mesh.Version{Major: 1, Minor: 28}, "security.istio.io CRDs store v1 instead of v1beta1; tags are also rendered as Services"},
}

// settingFindings reports the chart defaults that change between a release's chart and the target,
// for settings the release does not set itself.
func settingFindings(b *steps.Builder, s *mesh.Snapshot, target mesh.Version) []plan.Finding {
	var out []plan.Finding
	for _, c := range settingChanges {
		h, ok := b.Release(s, c.chart, "")
		if !ok {
			continue
		}
		from, err := mesh.ParseVersion(h.ChartVersion)
		if err != nil || !from.Less(c.since) || target.Less(c.since) {
			continue
		}
		if c.key != "crds" && hasValue(h.Values, c.key) {
			continue
		}
		out = append(out, plan.Finding{Code: plan.CodeSettingDefaultChanges, Severity: plan.Info, Object: steps.HelmRef(h),
			Message: fmt.Sprintf("%s: from %s %s (release %s does not set %s)", c.chart, c.since, c.what, h.Name, c.key),
			Remedy:  fmt.Sprintf("set %s in the release values if you need the old behaviour", c.key)})
	}
	return out
}

func hasValue(v map[string]any, dotted string) bool {
	cur := any(v)
	for _, part := range strings.Split(dotted, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
