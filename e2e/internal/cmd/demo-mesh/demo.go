package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// demoMesh is the embedded demo cluster, decoded in file order.
type demoMesh struct {
	objs []*unstructured.Unstructured
}

func loadDemo() (*demoMesh, error) {
	files := demo.Files()
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("read the demo's files: %w", err)
	}
	d := &demoMesh{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".yaml" {
			continue
		}
		b, err := fs.ReadFile(files, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read demo file %s: %w", e.Name(), err)
		}
		objs, err := kube.DecodeYAML(b)
		if err != nil {
			return nil, fmt.Errorf("decode demo file %s: %w", e.Name(), err)
		}
		d.objs = append(d.objs, objs...)
	}
	return d, nil
}

// ofKind returns the demo's objects of a kind, in file order.
func (d *demoMesh) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range d.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// find returns the demo's object of that kind, namespace and name, or nil.
func (d *demoMesh) find(kind, ns, name string) *unstructured.Unstructured {
	for _, o := range d.objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	return nil
}

// helmManaged reports whether a chart made the object (Helm's ownership annotation).
func helmManaged(o *unstructured.Unstructured) bool {
	return o.GetAnnotations()["meta.helm.sh/release-name"] != ""
}

// helmRelease is one release with its recorded history (version → record).
type helmRelease struct {
	name, namespace, chart, chartVersion string
	history                              map[int]*release.Release
}

// helmReleases decodes the demo's Helm release Secrets (type helm.sh/release.v1), in the order the
// demo's files first name each release.
func (d *demoMesh) helmReleases() ([]*helmRelease, error) {
	var out []*helmRelease
	byName := map[string]*helmRelease{}
	for _, s := range d.ofKind("Secret") {
		if t, _, _ := unstructured.NestedString(s.Object, "type"); t != "helm.sh/release.v1" {
			continue
		}
		r, err := decodeRelease(s)
		if err != nil {
			return nil, fmt.Errorf("demo Secret %s/%s: %w", s.GetNamespace(), s.GetName(), err)
		}
		key := r.Namespace + "/" + r.Name
		h := byName[key]
		if h == nil {
			h = &helmRelease{name: r.Name, namespace: r.Namespace, chart: r.Chart.Metadata.Name, chartVersion: r.Chart.Metadata.Version, history: map[int]*release.Release{}}
			byName[key] = h
			out = append(out, h)
		}
		h.history[r.Version] = r
		if r.Info != nil && r.Info.Status == release.StatusDeployed {
			h.chartVersion = r.Chart.Metadata.Version
		}
	}
	return out, nil
}

// steps returns the values of each revision 1..latest of the release: a revision the demo keeps no
// record of takes the values of the next one it has (Helm prunes old records; the values the
// release went through are not known, the latest are).
func (h *helmRelease) steps() []map[string]any {
	latest := 0
	for v := range h.history {
		latest = max(latest, v)
	}
	out := make([]map[string]any, latest)
	var next map[string]any
	for v := latest; v >= 1; v-- {
		if r := h.history[v]; r != nil {
			next = r.Config
		}
		out[v-1] = next
	}
	return out
}

// decodeRelease reads a Helm release Secret: data.release is base64 (the Secret's) of base64 (Helm's)
// of gzipped JSON, as helm.sh/helm/v3/pkg/storage/driver encodes it.
func decodeRelease(s *unstructured.Unstructured) (*release.Release, error) {
	data, _, _ := unstructured.NestedString(s.Object, "data", "release")
	if data == "" {
		return nil, fmt.Errorf("no data.release")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("data.release: %w", err)
	}
	if b, err = base64.StdEncoding.DecodeString(string(b)); err != nil {
		return nil, fmt.Errorf("data.release (Helm's base64): %w", err)
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("data.release (gzip): %w", err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("data.release (gzip): %w", err)
		}
	}
	var r release.Release
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("data.release (JSON): %w", err)
	}
	if r.Chart == nil || r.Chart.Metadata == nil {
		return nil, fmt.Errorf("release %s has no chart metadata", r.Name)
	}
	return &r, nil
}

// tagsByRevision returns the demo's revision tags (MutatingWebhookConfigurations labelled
// istio.io/tag) per revision they point at.
func (d *demoMesh) tagsByRevision() map[string][]string {
	out := map[string][]string{}
	for _, w := range d.ofKind("MutatingWebhookConfiguration") {
		tag := w.GetLabels()["istio.io/tag"]
		if tag == "" {
			continue
		}
		rev := w.GetLabels()["istio.io/rev"]
		out[rev] = append(out[rev], tag)
	}
	for _, tags := range out {
		sort.Strings(tags)
	}
	return out
}

// clean returns a copy of o fit to apply: no status and no bookkeeping metadata.
func clean(o *unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	delete(c.Object, "status")
	meta := map[string]any{"name": c.GetName()}
	if ns := c.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	if l := c.GetLabels(); len(l) > 0 {
		meta["labels"] = toAny(l)
	}
	ann := c.GetAnnotations()
	for k := range ann {
		if k == "deployment.kubernetes.io/revision" || strings.HasPrefix(k, "kubectl.kubernetes.io/last-applied") {
			delete(ann, k)
		}
	}
	if len(ann) > 0 {
		meta["annotations"] = toAny(ann)
	}
	c.Object["metadata"] = meta
	return c
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
