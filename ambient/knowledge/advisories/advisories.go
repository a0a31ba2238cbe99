package advisories

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

//go:embed advisories.yaml
var embedded []byte

// ErrInvalidData is wrapped by every error that rejects an advisory data document.
var ErrInvalidData = errors.New("invalid advisory data")

// Data is a set of upgrade advisories. Load it with Default, Load or LoadFile.
type Data struct {
	// Horizons says, per minor, the newest release the data was checked against.
	Horizons []Horizon `json:"horizons" yaml:"horizons"`
	// Advisories are the entries, sorted by ID.
	Advisories []Advisory `json:"advisories" yaml:"advisories"`

	origin Origin
}

// Horizon is how far the data has looked into one release line: an advisory that has no fix in the
// minor (an open range) says so only up to Newest.
type Horizon struct {
	// Minor is "1.30".
	Minor string `json:"minor" yaml:"minor"`
	// Newest is the newest release of the minor that was read (a tag or an announcement); zero when
	// the line has no release yet and only its branch was read.
	Newest mesh.Version `json:"newest,omitzero" yaml:"newest,omitempty"`
	// Source says what was read.
	Source string `json:"source" yaml:"source"`

	version mesh.Version
}

// Advisory is one known hazard of an upgrade or an uninstall.
type Advisory struct {
	// ID names the upstream issue ("istio#60668", "ztunnel#1966"), or for a release note that names no
	// issue, the note ("istio-note/ztunnel-helm-chart").
	ID string `json:"id" yaml:"id"`
	// Title says what goes wrong, in a line.
	Title string `json:"title" yaml:"title"`
	// Component is whose version the ranges describe.
	Component Component `json:"component" yaml:"component"`
	// When lists the operations during which it bites.
	When []When `json:"when" yaml:"when"`
	// Conditions must all hold for it to bite.
	Conditions []Condition `json:"conditions" yaml:"conditions"`
	// Affected are the affected versions, at most one range per minor, ascending.
	Affected []Range `json:"affected" yaml:"affected"`
	// IntroducedIn lists where the hazard arrived, when the data knows; when empty, the ranges start at
	// the oldest minor the data covers because the introduction was not traced.
	IntroducedIn []Release `json:"introducedIn,omitempty" yaml:"introducedIn,omitempty"`
	// FixedIn lists the first fixed patch of each minor that had the hazard and has a fix, and the
	// first minor release that shipped with the fix.
	FixedIn []Release `json:"fixedIn,omitempty" yaml:"fixedIn,omitempty"`
	// Action is what to do about it.
	Action string `json:"action" yaml:"action"`
	// Cleanup lists objects the operation leaves behind, for a planner to add cleanup steps.
	Cleanup []Leftover `json:"cleanup,omitempty" yaml:"cleanup,omitempty"`
	// Source says where every fact of the entry was read.
	Source Source `json:"source" yaml:"source"`
	// Reviewed is true when a person checked the entry against its sources.
	Reviewed bool `json:"reviewed" yaml:"reviewed"`
}

// Range is a span of affected patches of one minor. A range without To is open: no fix is known in
// that minor up to the data's horizon, and every later patch of it counts as affected.
type Range struct {
	From mesh.Version `json:"from" yaml:"from"`
	To   mesh.Version `json:"to,omitzero" yaml:"to,omitempty"`
}

// Open reports whether the range has no known end in its minor.
func (r Range) Open() bool { return r.To.IsZero() }

// Contains reports whether v lies in the range.
func (r Range) Contains(v mesh.Version) bool {
	if !v.SameMinor(r.From) || v.Less(r.From) {
		return false
	}
	return r.Open() || v.Compare(r.To) <= 0
}

// String prints "1.30.0–1.30.3", "1.30.0", or "1.29.0 and later 1.29 patches".
func (r Range) String() string {
	switch {
	case r.Open():
		return fmt.Sprintf("%s and later %s patches", r.From, r.From.MinorString())
	case r.From == r.To:
		return r.From.String()
	}
	return fmt.Sprintf("%s–%s", r.From, r.To)
}

// Release is a version where something arrived (a fix, or the hazard itself), with where that was read.
type Release struct {
	Version mesh.Version `json:"version" yaml:"version"`
	// Pending is true when the change is on the minor's release branch but in no release the data
	// read: Version is the next patch that branch will ship.
	Pending bool `json:"pending,omitempty" yaml:"pending,omitempty"`
	// Source is where it was read: a tag, a branch head, an istio.io announcement.
	Source string `json:"source" yaml:"source"`
}

// Leftover is an object that an operation leaves behind. Name and Namespace may hold the
// placeholders {revision} (the revision's name, "default" for a revision without one) and
// {istioNamespace} (the control plane's namespace).
type Leftover struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	// Namespace is empty for a cluster-scoped object.
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Name      string `json:"name" yaml:"name"`
}

// Resolve fills the placeholders.
func (l Leftover) Resolve(revision, istioNamespace string) (namespace, name string) {
	if revision == "" {
		revision = "default"
	}
	r := strings.NewReplacer("{revision}", revision, "{istioNamespace}", istioNamespace)
	return r.Replace(l.Namespace), r.Replace(l.Name)
}

// Source is where an advisory's facts were read.
type Source struct {
	// Note is the release note's path in istio/istio ("releasenotes/notes/60668.yaml"), when there is one.
	Note string `json:"note,omitempty" yaml:"note,omitempty"`
	// Commit is the istio/istio commit the note was read at (40 hex digits).
	Commit string `json:"commit,omitempty" yaml:"commit,omitempty"`
	// Issue is the issue's URL.
	Issue string `json:"issue,omitempty" yaml:"issue,omitempty"`
	// PR is the URL of the pull request that carries the fix or the change.
	PR string `json:"pr,omitempty" yaml:"pr,omitempty"`
	// Refs are further places read to check the entry (code at a commit, an announcement).
	Refs []string `json:"refs,omitempty" yaml:"refs,omitempty"`
}

// Default returns the embedded advisory data. It panics only if the embedded file is broken, which a
// test rules out.
func Default() *Data {
	d, err := decodeJSON(embeddedJSON(), Origin{Kind: OriginEmbedded})
	if err != nil {
		panic(err)
	}
	return d
}

// embeddedJSON is the embedded document's JSON form, converted once: each Default still decodes
// and checks its own copy, but the YAML parse, most of the cost, happens once per process.
var embeddedJSON = sync.OnceValue(func() []byte {
	js, err := sigsyaml.YAMLToJSONStrict(embedded)
	if err != nil {
		panic(fmt.Errorf("%w: %v", ErrInvalidData, err))
	}
	return js
})

// Load reads and checks an advisory data document (YAML or JSON).
func Load(r io.Reader) (*Data, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	return decode(raw, Origin{Kind: OriginReader})
}

// LoadFile reads and checks an advisory data document from a file.
func LoadFile(path string) (*Data, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("advisory data: %w", err)
	}
	d, err := decode(raw, Origin{Kind: OriginFile, Name: path})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// OriginKind says what produced a Data.
type OriginKind string

// Origin kinds.
const (
	// OriginEmbedded is the data compiled into this package (advisories.yaml).
	OriginEmbedded OriginKind = "embedded"
	// OriginFile is a document read with LoadFile.
	OriginFile OriginKind = "file"
	// OriginReader is a document read with Load.
	OriginReader OriginKind = "reader"
)

// Origin says where a Data came from, for messages and findings.
type Origin struct {
	Kind OriginKind `json:"kind"`
	// Name is the file path for OriginFile.
	Name string `json:"name,omitempty"`
}

// String describes the origin: "embedded advisory data (advisories.yaml)".
func (o Origin) String() string {
	switch o.Kind {
	case OriginEmbedded:
		return "embedded advisory data (advisories.yaml)"
	case OriginFile:
		return "advisory data file " + o.Name
	}
	return "advisory data"
}

// Origin says where the data came from.
func (d *Data) Origin() Origin { return d.origin }

// Advisory returns the entry with the ID.
func (d *Data) Advisory(id string) (Advisory, bool) {
	for _, a := range d.Advisories {
		if a.ID == id {
			return a, true
		}
	}
	return Advisory{}, false
}

// Affecting returns the advisories of the component that affect version v, in ID order. Their
// conditions are not checked: see Advisory.Applies.
func (d *Data) Affecting(component Component, v mesh.Version) []Advisory {
	var out []Advisory
	for _, a := range d.Advisories {
		if a.Component == component && a.Affects(v) {
			out = append(out, a)
		}
	}
	return out
}

// LeftBehind is one object an operation leaves behind, and the advisory that says so.
type LeftBehind struct {
	AdvisoryID string
	Leftover
}

// LeftBehind returns the objects that operation `when` on the component at version v leaves behind,
// by the advisories that affect v, in ID order. Resolve each with the revision and namespace the
// operation concerns; a planner should delete only what exists.
func (d *Data) LeftBehind(when When, component Component, v mesh.Version) []LeftBehind {
	var out []LeftBehind
	for _, a := range d.Affecting(component, v) {
		if !contains(a.When, when) {
			continue
		}
		for _, l := range a.Cleanup {
			out = append(out, LeftBehind{AdvisoryID: a.ID, Leftover: l})
		}
	}
	return out
}

// Horizon returns how far the data has looked into v's minor.
func (d *Data) Horizon(v mesh.Version) (Horizon, bool) {
	for _, h := range d.Horizons {
		if h.version.SameMinor(v) {
			return h, true
		}
	}
	return Horizon{}, false
}

// Covers reports whether the data describes v's minor at all. Advisories say nothing of a minor the
// data does not cover: no entry affects it, which is not the same as it being safe.
func (d *Data) Covers(v mesh.Version) bool {
	_, ok := d.Horizon(v)
	return ok
}

// Affects reports whether version v of the component is affected.
func (a Advisory) Affects(v mesh.Version) bool {
	for _, r := range a.Affected {
		if r.Contains(v) {
			return true
		}
	}
	return false
}

// Applies reports whether the advisory bites version v of a mesh with the given facts: v is affected
// and no condition is known to be false. unknown lists the conditions the facts could not decide; a
// planner should say that the advisory may apply.
func (a Advisory) Applies(v mesh.Version, f Facts) (applies bool, unknown []Condition) {
	if !a.Affects(v) {
		return false, nil
	}
	for _, c := range a.Conditions {
		holds, known := c.Holds(f)
		if !known {
			unknown = append(unknown, c)
			continue
		}
		if !holds {
			return false, nil
		}
	}
	return true, unknown
}

// FixedPatch returns the first patch of minor's release line that has the fix, as the data states it
// (it may be a pending patch, or newer than any the caller can install).
func (a Advisory) FixedPatch(minor mesh.Version) (Release, bool) {
	for _, f := range a.FixedIn {
		if f.Version.SameMinor(minor) {
			return f, true
		}
	}
	return Release{}, false
}

// NewestUnaffected returns the newest of the known versions in minor's release line that the
// advisory does not affect. known is what the caller can install (releases.Data patches, a chart
// repository's index); pre-releases are skipped. ok is false when every known patch of the line is
// affected or none is known.
func (a Advisory) NewestUnaffected(minor mesh.Version, known []mesh.Version) (mesh.Version, bool) {
	var best mesh.Version
	found := false
	for _, v := range known {
		if v.Pre != "" || !v.SameMinor(minor) || a.Affects(v) {
			continue
		}
		if !found || best.Less(v) {
			best, found = v, true
		}
	}
	return best, found
}

// FirstUnaffectedAfter returns the oldest known version newer than v that the advisory does not
// affect, in v's minor or a later one: for a line without a fix it is where the way out is.
func (a Advisory) FirstUnaffectedAfter(v mesh.Version, known []mesh.Version) (mesh.Version, bool) {
	sorted := append([]mesh.Version(nil), known...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Less(sorted[j]) })
	for _, k := range sorted {
		if k.Pre == "" && v.Less(k) && !a.Affects(k) {
			return k, true
		}
	}
	return mesh.Version{}, false
}
