package observe

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/internal/helmrecord"
)

// How Helm marks what it installs and stores (helm.sh/helm/v3@v3.22.0):
//   - pkg/action/validate.go, setMetadataVisitor: every object of a release gets the annotations
//     meta.helm.sh/release-name and meta.helm.sh/release-namespace and the label
//     app.kubernetes.io/managed-by=Helm (objects in a chart's crds/ folder get none of them);
//   - pkg/storage/driver/secrets.go, newSecretsObject: each revision of a release is a Secret
//     sh.helm.release.v1.<release>.v<revision> of type helm.sh/release.v1 in the release namespace,
//     labelled owner=helm, name=<release>, status, version.
//
// The Istio charts add the labels of helper istio.labels (manifests/charts/*/templates/zzz_profile.yaml,
// istio 1.24.0 to release-1.31): app.kubernetes.io/instance=<release>, app.kubernetes.io/version=
// <appVersion>, helm.sh/chart=<chart>-<version> with "+" written "_".
const (
	annotationReleaseNamespace = "meta.helm.sh/release-namespace"
	labelAppVersion            = "app.kubernetes.io/version"
	labelHelmChart             = "helm.sh/chart"
	helmNameLabel              = "name"
)

// istioCharts are the chart names (Chart.yaml name) of Istio's Helm charts, old and new.
var istioCharts = map[string]bool{
	"base": true, "istiod": true, "istio-discovery": true, "cni": true, "istio-cni": true,
	"ztunnel": true, "gateway": true, "istio-default": true,
}

// helmRelease is the part of Helm's release record the observer reads.
type helmRelease = helmrecord.Record

// decodeHelmRelease reads Helm's storage format (helmrecord.Decode).
func decodeHelmRelease(data []byte) (*helmRelease, error) { return helmrecord.Decode(data) }

// releaseKey names a Helm release: the namespace Helm keeps its records in, and the release name.
type releaseKey struct{ namespace, name string }

func (k releaseKey) String() string { return k.namespace + "/" + k.name }

// releaseRef is what the Istio objects of one release say about it.
type releaseRef struct {
	// annotated: some object carries meta.helm.sh/release-name, so Helm installed it (the
	// app.kubernetes.io/instance label alone is also rendered by helm template).
	annotated bool
	// chart is the best chart information seen (see chartRank), for a release without records.
	chart chartInfo
}

// chartInfo is a release's chart as its objects tell it.
type chartInfo struct {
	name, version, appVersion string
	// rank orders sources, lower first: 1 the helm.sh/chart label of a component's workload, 2 that
	// label on another object, 3 a workload's component without the label (chart known, version
	// not); 0 means nothing seen.
	rank int
}

func (c chartInfo) better(than chartInfo) bool {
	if than.rank == 0 || c.rank < than.rank {
		return true
	}
	if c.rank > than.rank {
		return false
	}
	return c.name+"\x00"+c.version+"\x00"+c.appVersion < than.name+"\x00"+than.version+"\x00"+than.appVersion
}

// parseChartLabel reads helm.sh/chart ("<chart>-<version>") for the Istio charts; ok is false for
// another chart or an unreadable label.
func parseChartLabel(v string) (chart, version string, ok bool) {
	for name := range istioCharts {
		rest, found := strings.CutPrefix(v, name+"-")
		// The longest matching name wins ("istio-cni-1.2.3" is istio-cni, not a chart "istio").
		if found && rest != "" && len(name) > len(chart) {
			chart, version, ok = name, strings.ReplaceAll(rest, "_", "+"), true
		}
	}
	return chart, version, ok
}

// noteRelease records the Helm release an Istio object belongs to, so that only the records of
// Istio's own releases are read, and a release without records can be described from its
// objects. component is the chart of the component the object is (istiod, cni, ztunnel, gateway),
// "" for other objects. The release is meta.helm.sh/release-name in meta.helm.sh/release-namespace;
// without the annotations, the app.kubernetes.io/instance label in the object's namespace.
func (b *builder) noteRelease(o metav1.Object, component string) {
	ann, lbl := o.GetAnnotations(), o.GetLabels()
	key := releaseKey{namespace: ann[annotationReleaseNamespace], name: ann[annotationRelease]}
	annotated := key.name != ""
	if !annotated {
		key.name = lbl[labelInstance]
	}
	if key.namespace == "" {
		key.namespace = o.GetNamespace()
	}
	// Helm labels its records name=<release> in the release namespace: anything else has no records.
	if key.name == "" || len(validation.IsValidLabelValue(key.name)) > 0 || len(validation.IsDNS1123Label(key.namespace)) > 0 {
		return
	}
	ref := b.releases[key]
	if ref == nil {
		ref = &releaseRef{}
		b.releases[key] = ref
	}
	ref.annotated = ref.annotated || annotated
	c := chartInfo{appVersion: lbl[labelAppVersion]}
	if label, ok := lbl[labelHelmChart]; ok {
		name, version, ok := parseChartLabel(label)
		if !ok {
			return // another chart's object
		}
		c.name, c.version, c.rank = name, version, 2
		if component != "" {
			c.rank = 1
		}
	} else if component != "" {
		c.name, c.rank = component, 3
	} else {
		return
	}
	if c.better(ref.chart) {
		ref.chart = c
	}
}

// releaseNamespaces returns the namespaces holding Istio releases and their release names, sorted.
func (b *builder) releaseNamespaces() (namespaces []string, names map[string][]string) {
	names = map[string][]string{}
	for k := range b.releases {
		if _, ok := names[k.namespace]; !ok {
			namespaces = append(namespaces, k.namespace)
		}
		names[k.namespace] = append(names[k.namespace], k.name)
	}
	sort.Strings(namespaces)
	for _, n := range names {
		sort.Strings(n)
	}
	return namespaces, names
}

// releaseSelector selects the records of the named releases: owner=helm,name in (...).
func releaseSelector(releases []string) (labels.Selector, error) {
	owner, err := labels.NewRequirement(helmOwnerLabel, selection.Equals, []string{"helm"})
	if err != nil {
		return nil, err
	}
	name, err := labels.NewRequirement(helmNameLabel, selection.In, releases)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*owner, *name), nil
}

// helmRecord is a Helm storage Secret, kept undecoded until the Istio releases are known.
type helmRecord struct {
	namespace, secret, release string
	// data is data.release as the Secret holds it (base64 in the object); hasData is false when
	// it is missing.
	data    any
	hasData bool
	// where names the offline document ("" live).
	where string
}

// addHelmRecord keeps a Secret labelled owner=helm for finishHelm. Nothing of it is read yet: only
// the records of Istio's releases ever are, so a broken record of another chart cannot fail the
// observation and other teams' values are never decoded.
func (b *builder) addHelmRecord(u *unstructured.Unstructured, where string) {
	if u.GetLabels()[helmOwnerLabel] != "helm" {
		return
	}
	rec := helmRecord{namespace: u.GetNamespace(), secret: u.GetName(), release: u.GetLabels()[helmNameLabel], where: where}
	if data, ok := u.Object["data"].(map[string]any); ok {
		rec.data, rec.hasData = data["release"]
		rec.hasData = rec.hasData && rec.data != nil
	}
	b.helmRecords = append(b.helmRecords, rec)
}

// decode reads one record. Errors name the Secret and never quote its data.
func (rec helmRecord) decode() (*helmRelease, error) {
	at := ""
	if rec.where != "" {
		at = rec.where + ": "
	}
	if !rec.hasData {
		return nil, fmt.Errorf("%w: %sSecret %s/%s is labelled owner=helm and name=%s but has no data.release; remove the labels or the Secret if it is not Helm's record of release %s",
			ErrInvalidInput, at, rec.namespace, rec.secret, rec.release, rec.release)
	}
	s, ok := rec.data.(string)
	if !ok {
		return nil, fmt.Errorf("%w: %sSecret %s/%s: data.release is a %s, not base64 text; repair or delete it (helm history will fail on it too)",
			ErrInvalidInput, at, rec.namespace, rec.secret, describe(rec.data))
	}
	// The Secret's own encoding: data values are base64 in the object.
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %sSecret %s/%s: data.release is not base64 (%v); repair or delete it (helm history will fail on it too)",
			ErrInvalidInput, at, rec.namespace, rec.secret, err)
	}
	r, err := decodeHelmRelease(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %sSecret %s/%s (Helm's record of Istio release %s): %v; repair or delete it (helm history will fail on it too)",
			ErrInvalidInput, at, rec.namespace, rec.secret, rec.release, err)
	}
	return r, nil
}

// finishHelm reads the records of Istio's releases, keeping the newest revision of each release of
// an Istio chart, and describes every release Helm installed whose records were not in the input
// from its objects (mesh.HelmRelease.Inferred).
func (b *builder) finishHelm() ([]mesh.HelmRelease, error) {
	recs := append([]helmRecord(nil), b.helmRecords...)
	sort.Slice(recs, func(i, j int) bool {
		return recs[i].namespace+"/"+recs[i].secret < recs[j].namespace+"/"+recs[j].secret
	})
	newest := map[string]mesh.HelmRelease{}
	// deployed is, by release, the newest record that was deployed (deployed, or superseded by a
	// later one): its values are the release's, whatever a pending or failed record after it holds.
	type deployedRecord struct {
		revision int
		values   map[string]any
	}
	deployed := map[string]*deployedRecord{}
	recorded := map[releaseKey]bool{}
	for _, rec := range recs {
		key := releaseKey{namespace: rec.namespace, name: rec.release}
		if b.releases[key] == nil {
			continue // another team's release: never decoded
		}
		recorded[key] = true
		r, err := rec.decode()
		if err != nil {
			return nil, err
		}
		if !istioCharts[r.Chart.Metadata.Name] {
			continue
		}
		if r.Name == "" {
			r.Name = rec.release
		}
		if r.Namespace == "" {
			r.Namespace = rec.namespace
		}
		k := r.Namespace + "/" + r.Name
		if st := r.Info.Status; (st == "deployed" || st == "superseded") && (deployed[k] == nil || deployed[k].revision < r.Version) {
			deployed[k] = &deployedRecord{revision: r.Version, values: r.Config}
		}
		if old, ok := newest[k]; ok && old.Revision >= r.Version {
			continue
		}
		h := mesh.HelmRelease{
			Name:         r.Name,
			Namespace:    r.Namespace,
			Chart:        r.Chart.Metadata.Name,
			ChartVersion: r.Chart.Metadata.Version,
			AppVersion:   r.Chart.Metadata.AppVersion,
			Revision:     r.Version,
			Status:       r.Info.Status,
		}
		if len(r.Config) > 0 {
			h.Values = r.Config
		}
		newest[k] = h
	}
	for key, ref := range b.releases {
		if !ref.annotated || recorded[key] || ref.chart.rank == 0 {
			continue
		}
		if _, ok := newest[key.String()]; ok {
			continue
		}
		newest[key.String()] = mesh.HelmRelease{
			Name: key.name, Namespace: key.namespace,
			Chart: ref.chart.name, ChartVersion: ref.chart.version, AppVersion: ref.chart.appVersion,
			Inferred: true,
		}
	}
	var out []mesh.HelmRelease
	for k, h := range newest {
		// A release whose latest record is pending or failed keeps the values it was last deployed
		// with (helm get values --revision N): the plan refuses to change it (the steps package's
		// RequireDeployed), and nothing of it is taken from the change that did not finish.
		if d := deployed[k]; d != nil && h.Status != "deployed" && d.revision < h.Revision {
			h.Values = nil
			if len(d.values) > 0 {
				h.Values = d.values
			}
		}
		out = append(out, h)
	}
	return out, nil
}
