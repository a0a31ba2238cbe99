package advisories

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// APIVersion is the apiVersion of advisory data documents.
const APIVersion = "ambientkit.io/v1alpha1"

// Kind is the kind of an advisory data document.
const Kind = "UpgradeAdvisories"

// document is the file shape: apiVersion and kind, then the data.
type document struct {
	APIVersion string     `json:"apiVersion" yaml:"apiVersion"`
	Kind       string     `json:"kind" yaml:"kind"`
	Horizons   []Horizon  `json:"horizons" yaml:"horizons"`
	Advisories []Advisory `json:"advisories" yaml:"advisories"`
}

var (
	idPattern     = regexp.MustCompile(`^((istio|ztunnel|api)#[1-9][0-9]*|istio-note/[a-z0-9][a-z0-9._-]*)$`)
	minorPattern  = regexp.MustCompile(`^[1-9][0-9]*\.(0|[1-9][0-9]*)$`)
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
	urlPattern    = regexp.MustCompile(`^https://github\.com/istio/[a-z.]+/(issues|pull)/[1-9][0-9]*$`)
	placeholders  = regexp.MustCompile(`\{[^}]*\}`)
)

// decode reads a document, strictly, and checks every entry.
func decode(raw []byte, origin Origin) (*Data, error) {
	js, err := sigsyaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	return decodeJSON(js, origin)
}

// decodeJSON checks and reads the document's JSON form (decode's second half).
func decodeJSON(js []byte, origin Origin) (*Data, error) {
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Horizons   []json.RawMessage `json:"horizons"`
		Advisories []json.RawMessage `json:"advisories"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	if head.APIVersion != APIVersion || head.Kind != Kind {
		return nil, fmt.Errorf("%w: apiVersion/kind are %q/%q; want %q and %q", ErrInvalidData, head.APIVersion, head.Kind, APIVersion, Kind)
	}
	if err := strictFields(js, []string{"apiVersion", "kind", "horizons", "advisories"}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	if len(head.Horizons) == 0 {
		return nil, fmt.Errorf("%w: no horizons; list, per minor, the newest release the data was checked against", ErrInvalidData)
	}
	d := &Data{origin: origin}
	seenMinor := map[string]bool{}
	for i, raw := range head.Horizons {
		var h Horizon
		if err := strictDecode(raw, &h); err != nil {
			return nil, fmt.Errorf("%w: horizons[%d]: %v", ErrInvalidData, i, err)
		}
		if err := h.check(); err != nil {
			return nil, fmt.Errorf("%w: horizons[%d] (minor %q): %v", ErrInvalidData, i, h.Minor, err)
		}
		if seenMinor[h.Minor] {
			return nil, fmt.Errorf("%w: horizons: minor %q listed twice", ErrInvalidData, h.Minor)
		}
		seenMinor[h.Minor] = true
		d.Horizons = append(d.Horizons, h)
	}
	sort.Slice(d.Horizons, func(i, j int) bool { return d.Horizons[i].version.Less(d.Horizons[j].version) })
	seenID := map[string]bool{}
	for i, raw := range head.Advisories {
		var a Advisory
		if err := strictDecode(raw, &a); err != nil {
			return nil, fmt.Errorf("%w: advisories[%d]%s: %v", ErrInvalidData, i, idOf(raw), err)
		}
		if err := a.check(d); err != nil {
			return nil, fmt.Errorf("%w: advisories[%d] (id %q): %v", ErrInvalidData, i, a.ID, err)
		}
		if seenID[a.ID] {
			return nil, fmt.Errorf("%w: advisories[%d]: id %q listed twice; merge the entries", ErrInvalidData, i, a.ID)
		}
		seenID[a.ID] = true
		d.Advisories = append(d.Advisories, a)
	}
	if len(d.Advisories) == 0 {
		return nil, fmt.Errorf("%w: no advisories", ErrInvalidData)
	}
	sort.Slice(d.Advisories, func(i, j int) bool { return d.Advisories[i].ID < d.Advisories[j].ID })
	return d, nil
}

// strictFields refuses top-level keys other than the allowed ones.
func strictFields(js []byte, allowed []string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(js, &m); err != nil {
		return err
	}
	var unknown []string
	for k := range m {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("unknown field %q; the document has only %s", unknown[0], strings.Join(allowed, ", "))
	}
	return nil
}

func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

// idOf names an entry that did not decode, when its id can still be read.
func idOf(raw json.RawMessage) string {
	var e struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &e) == nil && e.ID != "" {
		return fmt.Sprintf(" (id %q)", e.ID)
	}
	return ""
}

func (h *Horizon) check() error {
	if !minorPattern.MatchString(h.Minor) {
		return fmt.Errorf(`minor must be major.minor, e.g. "1.30"`)
	}
	v, err := mesh.ParseVersion(h.Minor + ".0")
	if err != nil {
		return err
	}
	h.version = v
	if !h.Newest.IsZero() {
		if !h.Newest.SameMinor(v) {
			return fmt.Errorf("newest %s is not a %s release", h.Newest, h.Minor)
		}
		if h.Newest.Pre != "" {
			return fmt.Errorf("newest %s is a pre-release; give the newest release read, or leave newest out", h.Newest)
		}
	}
	if strings.TrimSpace(h.Source) == "" {
		return fmt.Errorf("source is empty; say what was read (tags, branch, announcements)")
	}
	return nil
}

// check validates an entry against the vocabulary and the horizons.
func (a *Advisory) check(d *Data) error {
	switch {
	case !idPattern.MatchString(a.ID):
		return fmt.Errorf(`id must name the upstream issue ("istio#60668", "ztunnel#1966") or, for a release note without one, the note ("istio-note/<file name without .yaml>")`)
	case strings.TrimSpace(a.Title) == "":
		return fmt.Errorf("title is empty; say in a line what goes wrong")
	case !a.Component.valid():
		return fmt.Errorf("component %q is not one of %s", a.Component, join(Components()))
	case len(a.When) == 0:
		return fmt.Errorf("when is empty; name the operations it bites during (%s)", join(Whens()))
	case len(a.Conditions) == 0:
		return fmt.Errorf("conditions is empty; write [always] when it bites every mesh")
	case strings.TrimSpace(a.Action) == "":
		return fmt.Errorf("action is empty; say what to do")
	case len(a.Affected) == 0:
		return fmt.Errorf("affected is empty; an advisory must affect at least one version")
	}
	for _, w := range a.When {
		if !w.valid() {
			return fmt.Errorf("when %q is not one of %s", w, join(Whens()))
		}
	}
	for _, c := range a.Conditions {
		if c.Kind == Always && len(a.Conditions) > 1 {
			return fmt.Errorf("conditions: always must stand alone; drop it or the others")
		}
	}
	if err := a.checkRanges(d); err != nil {
		return err
	}
	for _, list := range []struct {
		name string
		rs   []Release
	}{{"introducedIn", a.IntroducedIn}, {"fixedIn", a.FixedIn}} {
		for _, r := range list.rs {
			if r.Version.IsZero() || r.Version.Pre != "" {
				return fmt.Errorf("%s: %q is not a release; give major.minor.patch", list.name, r.Version)
			}
			if strings.TrimSpace(r.Source) == "" {
				return fmt.Errorf("%s %s has no source; say where it was read", list.name, r.Version)
			}
		}
	}
	for _, f := range a.FixedIn {
		if a.Affects(f.Version) {
			return fmt.Errorf("fixedIn %s lies in an affected range; a fixed release cannot be affected", f.Version)
		}
	}
	for _, l := range a.Cleanup {
		if l.APIVersion == "" || l.Kind == "" || l.Name == "" {
			return fmt.Errorf("cleanup: every object needs apiVersion, kind and name")
		}
		for _, p := range placeholders.FindAllString(l.Namespace+l.Name, -1) {
			if p != "{revision}" && p != "{istioNamespace}" {
				return fmt.Errorf("cleanup %s %q: placeholder %s is not {revision} or {istioNamespace}", l.Kind, l.Name, p)
			}
		}
	}
	return a.Source.check()
}

// checkRanges: each range is a release span of one minor the data covers, ascending, one per minor.
func (a *Advisory) checkRanges(d *Data) error {
	for i, r := range a.Affected {
		switch {
		case r.From.IsZero() || r.From.Pre != "":
			return fmt.Errorf("affected[%d]: from %q is not a release", i, r.From)
		case !r.Open() && r.To.Pre != "":
			return fmt.Errorf("affected[%d]: to %s is a pre-release; give the last affected release", i, r.To)
		case !r.Open() && !r.To.SameMinor(r.From):
			return fmt.Errorf("affected[%d]: %s and %s are in different minors; give one range per minor", i, r.From, r.To)
		case !r.Open() && r.To.Less(r.From):
			return fmt.Errorf("affected[%d]: to %s is below from %s", i, r.To, r.From)
		case !d.Covers(r.From):
			return fmt.Errorf("affected[%d]: minor %s has no horizon; add one saying what was read of it", i, r.From.MinorString())
		case i > 0 && a.Affected[i-1].From.MinorIndex() >= r.From.MinorIndex():
			return fmt.Errorf("affected[%d]: %s must come after %s, one range per minor", i, r, a.Affected[i-1])
		}
	}
	return nil
}

func (s Source) check() error {
	switch {
	case s.Note != "" && !strings.HasPrefix(s.Note, "releasenotes/notes/"):
		return fmt.Errorf("source.note %q must be a path under releasenotes/notes/ in istio/istio", s.Note)
	case s.Note != "" && !commitPattern.MatchString(s.Commit):
		return fmt.Errorf("source.commit %q: give the full istio/istio commit the note was read at", s.Commit)
	case s.Commit != "" && !commitPattern.MatchString(s.Commit):
		return fmt.Errorf("source.commit %q is not 40 hex digits", s.Commit)
	case s.Note == "" && len(s.Refs) == 0:
		return fmt.Errorf("source has neither a note nor refs; say where the facts were read")
	case s.Issue == "" && s.PR == "":
		return fmt.Errorf("source has neither issue nor pr; link the upstream thread")
	}
	for _, u := range []string{s.Issue, s.PR} {
		if u != "" && !urlPattern.MatchString(u) {
			return fmt.Errorf("source: %q is not a github.com/istio/<repo>/issues/N or /pull/N URL", u)
		}
	}
	for _, r := range s.Refs {
		if strings.TrimSpace(r) == "" {
			return fmt.Errorf("source.refs has an empty entry")
		}
	}
	return nil
}

func join[T ~string](list []T) string {
	var s []string
	for _, x := range list {
		s = append(s, string(x))
	}
	return strings.Join(s, ", ")
}

// MarshalJSON writes the data as a document that Load reads back.
func (d Data) MarshalJSON() ([]byte, error) {
	return json.Marshal(document{APIVersion: APIVersion, Kind: Kind, Horizons: d.Horizons, Advisories: d.Advisories})
}

// UnmarshalJSON reads and checks a document, as Load does.
func (d *Data) UnmarshalJSON(b []byte) error {
	got, err := decode(b, Origin{Kind: OriginReader})
	if err != nil {
		return err
	}
	*d = *got
	return nil
}

// WriteYAML writes the data as a YAML document in field order, after header (comment lines without
// their "# "). The output is byte-for-byte the same for the same data.
func (d *Data) WriteYAML(w io.Writer, header string) error {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header == "" {
			break
		}
		b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(document{APIVersion: APIVersion, Kind: Kind, Horizons: d.Horizons, Advisories: d.Advisories}); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
