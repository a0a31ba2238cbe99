package releases

import (
	"fmt"
	"strings"
)

// Field names one piece of a minor's release data, so that a caller can ask where it came from
// (Minor.Source), whether it is an estimate (Minor.IsEstimated) and whether it is known at all
// (Minor.Known). The values are the keys of the release data document.
type Field string

// The fields of a minor.
const (
	// FieldReleased is the date of x.y.0.
	FieldReleased Field = "released"
	// FieldEndOfLife is the date support ends. When the data has none, Data.EndOfLife derives it
	// from the support policy (six weeks after minor+2's release).
	FieldEndOfLife Field = "endOfLife"
	// FieldPatches is the set of patch releases a plan may target.
	FieldPatches Field = "patches"
	// FieldKubernetes is the supported Kubernetes range.
	FieldKubernetes Field = "kubernetes"
	// FieldKubernetesTested is the tested-but-not-supported Kubernetes range.
	FieldKubernetesTested Field = "kubernetesTested"
	// FieldMinKubernetes is the minimum istioctl checks (MinK8SVersion).
	FieldMinKubernetes Field = "minKubernetes"
	// FieldGatewayAPI is the Gateway API version the release is built against.
	FieldGatewayAPI Field = "gatewayAPI"
)

// Fields returns every field in document order.
func Fields() []Field {
	return []Field{FieldReleased, FieldEndOfLife, FieldPatches, FieldKubernetes, FieldKubernetesTested, FieldMinKubernetes, FieldGatewayAPI}
}

func (f Field) valid() bool {
	for _, g := range Fields() {
		if f == g {
			return true
		}
	}
	return false
}

// fieldInfo is what the data says about one field of a minor besides its value.
type fieldInfo struct {
	known     bool
	source    string
	estimated bool
}

// Source returns where the field's value came from, as the data states it (an upstream file and
// version, a chart repository index, or why the value is unknown). It is empty when the data does
// not say, as in documents of the older ambientkit.io/v1alpha1 shape.
func (m *Minor) Source(f Field) string {
	if i, ok := m.info[f]; ok && i.source != "" {
		return i.source
	}
	if f == FieldEndOfLife && !m.Known(FieldEndOfLife) && !m.version.IsZero() {
		return fmt.Sprintf("not stated; the support policy puts it six weeks after %d.%d.0 (Data.EndOfLife)", m.version.Major, m.version.Minor+2)
	}
	return ""
}

// IsEstimated reports whether the field's value is an estimate or a lower bound rather than a value
// read from an announcement, a release tag or the caller's chart source. A planner that lets an
// estimate decide something should say so (an info finding). A field without a value is not
// estimated; it is unknown (see Known).
func (m *Minor) IsEstimated(f Field) bool { return m.info[f].estimated }

// Known reports whether the data has a value for the field. A minor that a Helm repository index
// serves but the base release data does not describe has no dates and no ranges; planners can still
// target it and should report what is unknown (Unknown lists it).
func (m *Minor) Known(f Field) bool {
	if i, ok := m.info[f]; ok {
		return i.known
	}
	// Data built in code rather than loaded: judge by the exported fields.
	switch f {
	case FieldReleased:
		return m.Released != ""
	case FieldEndOfLife:
		return m.EndOfLife != ""
	case FieldPatches:
		return true
	case FieldKubernetes:
		return len(m.Kubernetes) == 2
	case FieldKubernetesTested:
		return len(m.KubernetesTested) == 2
	case FieldMinKubernetes:
		return m.MinKubernetes != ""
	case FieldGatewayAPI:
		return m.GatewayAPI != ""
	}
	return false
}

// Estimates returns the fields whose values are estimates, in document order.
func (m *Minor) Estimates() []Field {
	var out []Field
	for _, f := range Fields() {
		if m.IsEstimated(f) {
			out = append(out, f)
		}
	}
	return out
}

// Unknown returns the fields the data has no value for, in document order. An end of life the data
// does not state is left out: Data.EndOfLife derives it from the support policy when it can.
func (m *Minor) Unknown() []Field {
	var out []Field
	for _, f := range Fields() {
		if f != FieldEndOfLife && !m.Known(f) {
			out = append(out, f)
		}
	}
	return out
}

// OriginKind says what produced a Data.
type OriginKind string

// Origin kinds.
const (
	// OriginEmbedded is the release data compiled into this package (releases.yaml).
	OriginEmbedded OriginKind = "embedded"
	// OriginFile is a release data document read with LoadFile.
	OriginFile OriginKind = "file"
	// OriginReader is a release data document read with Load.
	OriginReader OriginKind = "reader"
	// OriginHelmIndex is a Helm repository index (FromHelmIndex, LoadHelmIndexFile): the versions are
	// exactly the chart versions it serves; dates and ranges come from Origin.Base.
	OriginHelmIndex OriginKind = "helm-index"
)

// Origin describes where a Data came from, for messages, findings and logs.
type Origin struct {
	// Kind says what produced the data.
	Kind OriginKind `json:"kind"`
	// Name is the file path, the index's URL or path as the caller named it, or empty.
	Name string `json:"name,omitempty"`
	// APIVersion is the apiVersion of the release data document as read (documents of the older
	// ambientkit.io/v1alpha1 shape state no sources). Empty for a Helm index.
	APIVersion string `json:"apiVersion,omitempty"`
	// Generated is the index's own "generated" timestamp, verbatim.
	Generated string `json:"generated,omitempty"`
	// Charts are the charts that all had to serve a version for it to be targetable.
	Charts []string `json:"charts,omitempty"`
	// Base is where the dates, ranges and Gateway API versions of a Helm index's data came from.
	Base *Origin `json:"base,omitempty"`
}

// String describes the origin in a phrase: "embedded release data (releases.yaml)",
// "Helm repository index ./index.yaml (charts base, istiod, cni, ztunnel), with dates and ranges from
// embedded release data (releases.yaml)".
func (o Origin) String() string {
	switch o.Kind {
	case OriginEmbedded:
		return "embedded release data (releases.yaml)"
	case OriginFile:
		return "release data file " + o.Name
	case OriginReader:
		if o.Name != "" {
			return "release data " + o.Name
		}
		return "release data"
	case OriginHelmIndex:
		var b strings.Builder
		b.WriteString("Helm repository index")
		if o.Name != "" {
			b.WriteString(" " + o.Name)
		}
		var notes []string
		if o.Generated != "" {
			notes = append(notes, "generated "+o.Generated)
		}
		if len(o.Charts) > 0 {
			notes = append(notes, "charts "+strings.Join(o.Charts, ", "))
		}
		if len(notes) > 0 {
			b.WriteString(" (" + strings.Join(notes, "; ") + ")")
		}
		if o.Base != nil {
			b.WriteString(", with dates and ranges from " + o.Base.String())
		}
		return b.String()
	}
	return "release data of unknown origin"
}

// short names the origin in an error message: String without the timestamp and the base data.
func (o Origin) short() string {
	if o.Kind != OriginHelmIndex {
		return o.String()
	}
	s := "Helm repository index"
	if o.Name != "" {
		s += " " + o.Name
	}
	if len(o.Charts) > 0 {
		s += " (charts " + strings.Join(o.Charts, ", ") + ")"
	}
	return s
}
