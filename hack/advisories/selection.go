package main

import (
	"fmt"
	"os"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Selection is the reviewed input: which upstream notes become advisories, with our own words for
// each, and the istio.io announcements that were read to see past the mirror's newest tags.
type Selection struct {
	// Coverage is the span of minors the data describes, e.g. {from: "1.24", to: "1.32"}.
	Coverage struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"coverage"`
	// Announcements are istio.io patch announcements read by hand. A patch named here counts as
	// released; an advisory's event names in `announced` the ones that list its change.
	Announcements []Announcement `json:"announcements"`
	Advisories    []Entry        `json:"advisories"`
}

// Announcement is one istio.io release announcement that was read.
type Announcement struct {
	Version mesh.Version `json:"version"`
	// Source is repo@commit:path of the announcement.
	Source string `json:"source"`
}

// Entry is one advisory as reviewed: the text is ours, the versions are computed.
type Entry struct {
	ID         string                 `json:"id"`
	Title      string                 `json:"title"`
	Component  advisories.Component   `json:"component"`
	When       []advisories.When      `json:"when"`
	Conditions []advisories.Condition `json:"conditions"`
	// Note is the release note the entry is read from (a file name in releasenotes/notes/), if any.
	Note string `json:"note,omitempty"`
	// NoteIssue says why the note's issue list does not name the ID, when it does not.
	NoteIssue string `json:"noteIssue,omitempty"`
	// IntroducedBy is where the hazard arrives; omitted, it is present in every covered version.
	IntroducedBy *Event `json:"introducedBy,omitempty"`
	// FixedBy is where it goes away; omitted, there is no fix.
	FixedBy *Event                `json:"fixedBy,omitempty"`
	Action  string                `json:"action"`
	Cleanup []advisories.Leftover `json:"cleanup,omitempty"`
	Issue   string                `json:"issue,omitempty"`
	PR      string                `json:"pr,omitempty"`
	// Refs are further sources checked by hand (code at a commit, an issue thread, an announcement).
	Refs     []string `json:"refs,omitempty"`
	Reviewed bool     `json:"reviewed"`
}

// Event says in which versions something is present: those whose tree holds a release note, those
// whose announcement lists it, or every version from a given one on.
type Event struct {
	// Note is a file in releasenotes/notes/: a version has the event when its tag has the file.
	Note string `json:"note,omitempty"`
	// Announced are patches whose announcement (listed under announcements) states the change. They
	// confirm a patch the release branch has not tagged yet, and add patches the mirror has no sign of.
	Announced []mesh.Version `json:"announced,omitempty"`
	// Unlisted are patches whose announcement was read and does not state the change although the
	// release branch had it before: the change counts from the patch after the newest of them.
	Unlisted []mesh.Version `json:"unlisted,omitempty"`
	// Version and Source: every version from Version on has the event, as Source shows.
	Version mesh.Version `json:"version,omitzero"`
	Source  string       `json:"source,omitempty"`
}

var noteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*\.ya?ml$`)

func loadSelection(path string) (*Selection, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Selection
	if err := yaml.UnmarshalStrict(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

func (s *Selection) check() error {
	from, err := mesh.ParseVersion(s.Coverage.From + ".0")
	if err != nil {
		return fmt.Errorf("coverage.from: %w", err)
	}
	to, err := mesh.ParseVersion(s.Coverage.To + ".0")
	if err != nil {
		return fmt.Errorf("coverage.to: %w", err)
	}
	if to.Less(from) {
		return fmt.Errorf("coverage: to %s is below from %s", s.Coverage.To, s.Coverage.From)
	}
	announced := map[mesh.Version]bool{}
	for _, a := range s.Announcements {
		if a.Version.IsZero() || a.Version.Pre != "" || a.Source == "" {
			return fmt.Errorf("announcements: each needs a release version and its source")
		}
		announced[a.Version] = true
	}
	seen := map[string]bool{}
	for _, e := range s.Advisories {
		if seen[e.ID] {
			return fmt.Errorf("advisory %s listed twice", e.ID)
		}
		seen[e.ID] = true
		if e.Note != "" && !noteName.MatchString(e.Note) {
			return fmt.Errorf("advisory %s: note %q is not a file name in releasenotes/notes/", e.ID, e.Note)
		}
		for _, ev := range []*Event{e.IntroducedBy, e.FixedBy} {
			if ev == nil {
				continue
			}
			n := 0
			if ev.Note != "" {
				n++
				if !noteName.MatchString(ev.Note) {
					return fmt.Errorf("advisory %s: note %q is not a file name in releasenotes/notes/", e.ID, ev.Note)
				}
			}
			if !ev.Version.IsZero() {
				n++
				if ev.Source == "" {
					return fmt.Errorf("advisory %s: an event at version %s needs a source", e.ID, ev.Version)
				}
			}
			if n == 0 && len(ev.Announced) == 0 {
				return fmt.Errorf("advisory %s: an event needs a note, announced patches, or a version", e.ID)
			}
			if n > 1 {
				return fmt.Errorf("advisory %s: an event gives a note or a version, not both", e.ID)
			}
			for _, v := range append(append([]mesh.Version(nil), ev.Announced...), ev.Unlisted...) {
				if !announced[v] {
					return fmt.Errorf("advisory %s: %s is announced but no announcement of it is listed as read", e.ID, v)
				}
			}
		}
	}
	return nil
}
