package releases

import (
	"encoding/json"
	"fmt"
	"sort"

	"sigs.k8s.io/yaml"
)

// APIVersion is the apiVersion of the release data documents this package writes: each field of a
// minor is an object that states its value, its source and whether it is an estimate.
const APIVersion = "ambientkit.io/v1alpha2"

// APIVersionV1Alpha1 is the older, flat document shape (a value per field, one estimated flag per
// minor, no sources). Load still reads it, so files written for earlier versions keep working.
const APIVersionV1Alpha1 = "ambientkit.io/v1alpha1"

// The v1alpha2 document. Every field but endOfLife must be present; a value that is not known is
// written as an object with a source (why it is unknown) and no value.
type docV2 struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Releases   []minorDoc `json:"releases"`
}

type minorDoc struct {
	Minor            string      `json:"minor"`
	Released         *valueDoc   `json:"released,omitempty"`
	EndOfLife        *valueDoc   `json:"endOfLife,omitempty"`
	Patches          *patchesDoc `json:"patches,omitempty"`
	Kubernetes       *rangeDoc   `json:"kubernetes,omitempty"`
	KubernetesTested *rangeDoc   `json:"kubernetesTested,omitempty"`
	MinKubernetes    *valueDoc   `json:"minKubernetes,omitempty"`
	GatewayAPI       *valueDoc   `json:"gatewayAPI,omitempty"`
}

type valueDoc struct {
	Value     string `json:"value,omitempty"`
	Source    string `json:"source,omitempty"`
	Estimated bool   `json:"estimated,omitempty"`
}

type rangeDoc struct {
	Value     []string `json:"value,omitempty"`
	Source    string   `json:"source,omitempty"`
	Estimated bool     `json:"estimated,omitempty"`
}

// patchesDoc holds either latest (every patch from 0 to latest exists) or list (exactly these
// patches, as a chart repository serves them; may be empty).
type patchesDoc struct {
	Latest    *int   `json:"latest,omitempty"`
	List      *[]int `json:"list,omitempty"`
	Source    string `json:"source,omitempty"`
	Estimated bool   `json:"estimated,omitempty"`
}

// The v1alpha1 document, as earlier versions of this package wrote it.
type docV1 struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Releases   []minorV1 `json:"releases"`
}

type minorV1 struct {
	Minor            string   `json:"minor"`
	Released         string   `json:"released"`
	EndOfLife        string   `json:"endOfLife,omitempty"`
	Estimated        bool     `json:"estimated,omitempty"`
	LatestPatch      int      `json:"latestPatch"`
	Kubernetes       []string `json:"kubernetes"`
	KubernetesTested []string `json:"kubernetesTested,omitempty"`
	MinKubernetes    string   `json:"minKubernetes,omitempty"`
	GatewayAPI       string   `json:"gatewayAPI,omitempty"`
}

// toV2 converts a v1alpha1 minor. Its one estimated flag covered "dates and ranges"; the Gateway API
// version and the patch (a lower bound in that shape) are not marked. No field has a source.
func (o minorV1) toV2() minorDoc {
	value := func(s string, est bool) *valueDoc {
		if s == "" {
			return nil
		}
		return &valueDoc{Value: s, Estimated: est}
	}
	rng := func(r []string, est bool) *rangeDoc {
		if len(r) == 0 {
			return nil // optional in this shape, and [] meant "none"
		}
		return &rangeDoc{Value: r, Estimated: est}
	}
	latest := o.LatestPatch
	return minorDoc{
		Minor:            o.Minor,
		Released:         &valueDoc{Value: o.Released, Estimated: o.Estimated && o.Released != ""},
		EndOfLife:        value(o.EndOfLife, o.Estimated),
		Patches:          &patchesDoc{Latest: &latest},
		Kubernetes:       &rangeDoc{Value: o.Kubernetes, Estimated: o.Estimated && len(o.Kubernetes) > 0},
		KubernetesTested: rng(o.KubernetesTested, o.Estimated),
		MinKubernetes:    value(o.MinKubernetes, o.Estimated),
		GatewayAPI:       value(o.GatewayAPI, false),
	}
}

// decode reads a release data document of either shape and checks it.
func decode(raw []byte, origin Origin) (*Data, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	if head.Kind != Kind || (head.APIVersion != APIVersion && head.APIVersion != APIVersionV1Alpha1) {
		return nil, fmt.Errorf("%w: apiVersion/kind are %q/%q; want %q (or the older %q) and %q",
			ErrInvalidData, head.APIVersion, head.Kind, APIVersion, APIVersionV1Alpha1, Kind)
	}
	var docs []minorDoc
	v2 := head.APIVersion == APIVersion
	if v2 {
		var d docV2
		if err := yaml.UnmarshalStrict(raw, &d); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
		}
		docs = d.Releases
	} else {
		var d docV1
		if err := yaml.UnmarshalStrict(raw, &d); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
		}
		for _, m := range d.Releases {
			docs = append(docs, m.toV2())
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w: no releases", ErrInvalidData)
	}
	origin.APIVersion = head.APIVersion
	d := &Data{APIVersion: APIVersion, Kind: Kind, origin: origin}
	seen := map[string]bool{}
	for i, doc := range docs {
		if v2 {
			if err := doc.complete(); err != nil {
				return nil, fmt.Errorf("%w: releases[%d] (minor %q): %v", ErrInvalidData, i, doc.Minor, err)
			}
		}
		m, err := doc.build()
		if err != nil {
			return nil, fmt.Errorf("%w: releases[%d] (minor %q): %v", ErrInvalidData, i, doc.Minor, err)
		}
		if seen[m.Minor] {
			return nil, fmt.Errorf("%w: minor %q listed twice", ErrInvalidData, m.Minor)
		}
		seen[m.Minor] = true
		d.Releases = append(d.Releases, m)
	}
	d.sort()
	return d, nil
}

// complete says which required field of a v1alpha2 minor is missing: all but endOfLife.
func (doc minorDoc) complete() error {
	for _, f := range Fields() {
		if f != FieldEndOfLife && !doc.isSet(f) {
			return fmt.Errorf("%s is missing; give {value: ..., source: ...}, or {source: <why it is unknown>} when it is not known", f)
		}
	}
	return nil
}

// build turns a document minor into a checked Minor.
func (doc minorDoc) build() (Minor, error) {
	m := Minor{Minor: doc.Minor, info: map[Field]fieldInfo{}}
	note := func(f Field, known bool, source string, est bool) error {
		if est && !known {
			return fmt.Errorf("%s is marked estimated but has no value; drop estimated or give the value", f)
		}
		if !known && source == "" {
			return fmt.Errorf("%s has neither a value nor a source", f)
		}
		m.info[f] = fieldInfo{known: known, source: source, estimated: est}
		return nil
	}
	if v := doc.Released; v != nil {
		m.Released = v.Value
		if err := note(FieldReleased, v.Value != "", v.Source, v.Estimated); err != nil {
			return m, err
		}
	}
	if v := doc.EndOfLife; v != nil {
		m.EndOfLife = v.Value
		if err := note(FieldEndOfLife, v.Value != "", v.Source, v.Estimated); err != nil {
			return m, err
		}
	}
	if p := doc.Patches; p != nil {
		switch {
		case p.Latest != nil && p.List != nil:
			return m, fmt.Errorf("patches has both latest and list; give one")
		case p.Latest != nil:
			if *p.Latest < 0 {
				return m, fmt.Errorf("patches.latest is negative")
			}
			m.LatestPatch, m.newestKnown = *p.Latest, *p.Latest
		case p.List != nil:
			list := append([]int(nil), *p.List...)
			sort.Ints(list)
			for i, n := range list {
				if n < 0 {
					return m, fmt.Errorf("patches.list has a negative patch %d", n)
				}
				if i > 0 && list[i-1] == n {
					return m, fmt.Errorf("patches.list has patch %d twice", n)
				}
			}
			m.exact, m.patches = true, list
			if len(list) > 0 {
				m.LatestPatch, m.newestKnown = list[len(list)-1], list[len(list)-1]
			}
		default:
			return m, fmt.Errorf("patches needs latest (every patch up to it exists) or list (exactly these)")
		}
		if p.Estimated && p.Latest == nil {
			return m, fmt.Errorf("patches.list is marked estimated; a list is exact, use latest for a lower bound")
		}
		m.info[FieldPatches] = fieldInfo{known: true, source: p.Source, estimated: p.Estimated}
	}
	if r := doc.Kubernetes; r != nil {
		m.Kubernetes = r.Value
		if err := note(FieldKubernetes, len(r.Value) > 0, r.Source, r.Estimated); err != nil {
			return m, err
		}
	}
	if r := doc.KubernetesTested; r != nil {
		m.KubernetesTested = r.Value
		if err := note(FieldKubernetesTested, len(r.Value) > 0, r.Source, r.Estimated); err != nil {
			return m, err
		}
	}
	if v := doc.MinKubernetes; v != nil {
		m.MinKubernetes = v.Value
		if err := note(FieldMinKubernetes, v.Value != "", v.Source, v.Estimated); err != nil {
			return m, err
		}
	}
	if v := doc.GatewayAPI; v != nil {
		m.GatewayAPI = v.Value
		if err := note(FieldGatewayAPI, v.Value != "", v.Source, v.Estimated); err != nil {
			return m, err
		}
	}
	for _, f := range Fields() {
		if _, ok := m.info[f]; !ok {
			m.info[f] = fieldInfo{}
		}
	}
	if m.Known(FieldMinKubernetes) && !m.Known(FieldKubernetes) {
		// Planners advise the supported range's first version whenever the minimum refuses a cluster.
		return m, fmt.Errorf("minKubernetes is known but kubernetes is not; give the supported range too, or neither")
	}
	if err := m.parse(); err != nil {
		return m, err
	}
	return m, nil
}

// isSet reports whether the document has an object for the field (even an empty one).
func (doc minorDoc) isSet(f Field) bool {
	switch f {
	case FieldReleased:
		return doc.Released != nil
	case FieldEndOfLife:
		return doc.EndOfLife != nil
	case FieldPatches:
		return doc.Patches != nil
	case FieldKubernetes:
		return doc.Kubernetes != nil
	case FieldKubernetesTested:
		return doc.KubernetesTested != nil
	case FieldMinKubernetes:
		return doc.MinKubernetes != nil
	case FieldGatewayAPI:
		return doc.GatewayAPI != nil
	}
	return false
}

// doc writes a minor in the v1alpha2 shape.
func (m *Minor) doc() minorDoc {
	// A field with neither value nor source would not load again; say why it is empty.
	source := func(f Field) string {
		if s := m.info[f].source; s != "" || m.Known(f) || f == FieldEndOfLife {
			return s
		}
		return "not stated"
	}
	value := func(f Field, v string) *valueDoc {
		return &valueDoc{Value: v, Source: source(f), Estimated: m.IsEstimated(f)}
	}
	rng := func(f Field, r []string) *rangeDoc {
		return &rangeDoc{Value: r, Source: source(f), Estimated: m.IsEstimated(f)}
	}
	out := minorDoc{
		Minor:            m.Minor,
		Released:         value(FieldReleased, m.Released),
		Kubernetes:       rng(FieldKubernetes, m.Kubernetes),
		KubernetesTested: rng(FieldKubernetesTested, m.KubernetesTested),
		MinKubernetes:    value(FieldMinKubernetes, m.MinKubernetes),
		GatewayAPI:       value(FieldGatewayAPI, m.GatewayAPI),
	}
	if m.EndOfLife != "" || m.info[FieldEndOfLife].source != "" {
		out.EndOfLife = value(FieldEndOfLife, m.EndOfLife)
	}
	p := &patchesDoc{Source: m.info[FieldPatches].source, Estimated: m.IsEstimated(FieldPatches)}
	if m.exact {
		list := append([]int{}, m.patches...)
		p.List = &list
	} else {
		latest := m.LatestPatch
		p.Latest = &latest
	}
	out.Patches = p
	return out
}

// MarshalJSON writes the data as an ambientkit.io/v1alpha2 document, which Load reads back; with
// sigs.k8s.io/yaml it gives the YAML form.
func (d Data) MarshalJSON() ([]byte, error) {
	out := docV2{APIVersion: APIVersion, Kind: Kind, Releases: []minorDoc{}}
	for i := range d.Releases {
		out.Releases = append(out.Releases, d.Releases[i].doc())
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a release data document of either shape and checks it, as Load does.
func (d *Data) UnmarshalJSON(b []byte) error {
	got, err := decode(b, Origin{Kind: OriginReader})
	if err != nil {
		return err
	}
	*d = *got
	return nil
}
