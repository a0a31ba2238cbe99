package steps

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// imageKind says how a value takes part in an image reference.
type imageKind int

const (
	// valueTag is an image tag: "1.30.3", "1.30.3-distroless".
	valueTag imageKind = iota
	// valueImage is an image name, or, when it holds a "/", a whole reference that replaces
	// hub/name:tag.
	valueImage
	// valueHub is a registry path; it fixes nothing unless it carries a digest.
	valueHub
)

// imageValue is one value of a chart that decides the image a component runs.
type imageValue struct {
	path []string
	kind imageKind
}

// imageValues are the values of each chart that fix a version or an image, read from the charts'
// values.yaml and the templates that use them (istio/istio@1.24.0 to @1.30.3 and @release-1.31:
// manifests/charts/<dir>/values.yaml, templates/deployment.yaml and daemonset.yaml):
//
//   - every chart's hub, tag and image, and global.hub and global.tag, which the charts fall back
//     to (istiod and istio-cni: ".Values.tag | default .Values.global.tag"; ztunnel flattens global
//     into the top level, templates/zzz_profile.yaml "Flatten globals");
//   - istiod's pilot.* and istio-cni's cni.*, which the charts copy over the top level
//     (templates/zzy_descope_legacy.yaml), and istio-cni's repair.hub and repair.tag;
//   - istiod's global.proxy.image and global.proxy_init.image: a value holding "/" is the whole image
//     every injected sidecar and gateway runs (files/injection-template.yaml,
//     gateway-injection-template.yaml), else istiod builds it from global.hub and global.tag;
//   - the gateway chart's pod annotation sidecar.istio.io/proxyImage (values podAnnotations), which
//     the same templates read before global.proxy.image; the chart's own image is the placeholder
//     "auto" (templates/deployment.yaml).
//
// The base chart runs no image. A variant (-distroless, -debug) fixes no version.
var imageValues = map[string][]imageValue{
	"istiod": {
		{[]string{"hub"}, valueHub}, {[]string{"tag"}, valueTag}, {[]string{"image"}, valueImage},
		{[]string{"pilot", "hub"}, valueHub}, {[]string{"pilot", "tag"}, valueTag}, {[]string{"pilot", "image"}, valueImage},
		{[]string{"global", "hub"}, valueHub}, {[]string{"global", "tag"}, valueTag},
		{[]string{"global", "proxy", "image"}, valueImage}, {[]string{"global", "proxy_init", "image"}, valueImage},
	},
	"cni": {
		{[]string{"hub"}, valueHub}, {[]string{"tag"}, valueTag}, {[]string{"image"}, valueImage},
		{[]string{"cni", "hub"}, valueHub}, {[]string{"cni", "tag"}, valueTag}, {[]string{"cni", "image"}, valueImage},
		{[]string{"repair", "hub"}, valueHub}, {[]string{"repair", "tag"}, valueTag},
		{[]string{"global", "hub"}, valueHub}, {[]string{"global", "tag"}, valueTag},
	},
	"ztunnel": {
		{[]string{"hub"}, valueHub}, {[]string{"tag"}, valueTag}, {[]string{"image"}, valueImage},
		{[]string{"global", "hub"}, valueHub}, {[]string{"global", "tag"}, valueTag},
	},
	"gateway": {
		{[]string{"podAnnotations", "sidecar.istio.io/proxyImage"}, valueImage},
	},
}

// stuckValue is a value that fixes an image the plan cannot move to the chart's version.
type stuckValue struct {
	path            []string
	key, value, why string
}

// moveImages rewrites, in values (merged, about to be passed to chart at version v), every value
// that names another Istio release than v so that it names v, keeping its variant and registry. It
// returns what it moved and what it could not move: a tag or image tag that names no release
// ("latest", a build of one's own), a digest, a whole image without a tag.
func moveImages(chart string, v mesh.Version, values map[string]any) ([]plan.MovedValue, []stuckValue) {
	var moved []plan.MovedValue
	var stuck []stuckValue
	for _, iv := range imageValues[chart] {
		parent, ok := lookupParent(values, iv.path)
		if !ok {
			continue
		}
		leaf := iv.path[len(iv.path)-1]
		raw, set := parent[leaf]
		if !set || raw == nil {
			continue
		}
		s, ok := raw.(string)
		key := setKey(iv.path)
		if !ok {
			stuck = append(stuck, stuckValue{iv.path, key, fmt.Sprint(raw), "is not a string, so it names no image tag"})
			continue
		}
		to, why := moveValue(iv.kind, s, v)
		switch {
		case why != "":
			stuck = append(stuck, stuckValue{iv.path, key, s, why})
		case to != s:
			parent[leaf] = to
			moved = append(moved, plan.MovedValue{Key: key, From: s, To: to})
		}
	}
	return moved, stuck
}

// moveValue returns the value that names version v instead of the release s names, or why it
// cannot: "" and s unchanged when s fixes nothing.
func moveValue(kind imageKind, s string, v mesh.Version) (string, string) {
	if s == "" {
		return s, ""
	}
	if strings.Contains(s, "@") && kind != valueTag {
		return s, "holds a digest, which names exactly one build: give the digest of the " + v.String() + " image, or a tag"
	}
	switch kind {
	case valueHub:
		return s, ""
	case valueImage:
		if !strings.Contains(s, "/") {
			return s, "" // a name the chart joins with hub and tag
		}
		i := strings.LastIndex(s, ":")
		if i < 0 || strings.Contains(s[i:], "/") {
			return s, "is a whole image without a tag, so it runs whatever that image is, not " + v.String()
		}
		tag, why := moveTag(s[i+1:], v)
		return s[:i+1] + tag, why
	}
	return moveTag(s, v)
}

// moveTag moves an image tag that names a release to v, keeping its variant suffix.
func moveTag(tag string, v mesh.Version) (string, string) {
	from, err := mesh.VersionFromImageTag(tag)
	if err != nil {
		return tag, fmt.Sprintf("names no Istio release, so the plan cannot tell which image of %s it should be", v)
	}
	if from == v {
		return tag, ""
	}
	core := from.String()
	if !strings.HasPrefix(tag, core) {
		return tag, fmt.Sprintf("does not start with the release it names (%s)", core)
	}
	return v.String() + strings.TrimPrefix(tag, core), ""
}

func lookupParent(values map[string]any, path []string) (map[string]any, bool) {
	cur := values
	for _, p := range path[:len(path)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

func lookup(values map[string]any, path []string) (any, bool) {
	parent, ok := lookupParent(values, path)
	if !ok {
		return nil, false
	}
	v, ok := parent[path[len(path)-1]]
	return v, ok
}

// setKey writes a value's path as helm --set does: dots inside a key escaped.
func setKey(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = strings.ReplaceAll(p, ".", `\.`)
	}
	return strings.Join(parts, ".")
}

// pinnedValues moves the image values of a release's values to the chart's version v and reports
// what it moved; each value it cannot move is a blocking finding naming the release and the value,
// unless the caller's own values for this plan (Options.Values) set it so: a digest or a build tag
// the caller passes is taken as given.
func (b *Builder) pinnedValues(values map[string]any, chart, release, namespace string, v mesh.Version) []plan.MovedValue {
	if v.IsZero() || values == nil {
		return nil
	}
	moved, stuck := moveImages(chart, v, values)
	sort.Slice(stuck, func(i, j int) bool { return stuck[i].key < stuck[j].key })
	caller := map[string]any{}
	Merge(caller, b.opts.Values[chart])
	Merge(caller, b.opts.Values[release])
	for _, st := range stuck {
		if given, ok := lookup(caller, st.path); ok && fmt.Sprint(given) == st.value {
			continue
		}
		ref := mesh.ObjectRef{Kind: "HelmRelease", Namespace: namespace, Name: release}
		b.Finding(plan.Finding{Code: plan.CodeHelmValuePinsVersion, Severity: plan.Blocking, Object: ref,
			Message: fmt.Sprintf("Helm release %s/%s (chart %s) would be installed at %s with %s=%s, which %s: the new chart would run another image than %s",
				namespace, release, chart, v, st.key, st.value, st.why, v),
			Remedy:  fmt.Sprintf("pass the value meant for %s in the plan's values (UpgradeOptions.Values[%q][%q]: the plan takes a caller's value as given), or drop it (null) so the chart's own image is used", v, release, st.key),
			Details: map[string]string{"release": release, "namespace": namespace, "chart": chart, "key": st.key, "value": st.value, "chartVersion": v.String()}})
	}
	return moved
}

// MovedNote is the note a step gets for the values the plan moved to its chart's version.
func MovedNote(moved []plan.MovedValue, v mesh.Version) string {
	if len(moved) == 0 {
		return ""
	}
	var parts []string
	for _, m := range moved {
		parts = append(parts, fmt.Sprintf("%s %s → %s", m.Key, m.From, m.To))
	}
	return fmt.Sprintf("the release's values fixed images of another version; the plan moves them to %s (%s), so the registry they name must carry the %s images",
		v, strings.Join(parts, ", "), v)
}
