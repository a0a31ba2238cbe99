package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Line is what the istio/istio mirror holds of one minor: its release tags and the head of the
// branch its next patch comes from (release-1.X, or master for the minor not yet branched).
type Line struct {
	Minor  mesh.Version // x.y.0
	Tags   []Snapshot   // releases only, ascending
	Branch *Snapshot    // nil when the mirror has no branch for the minor
}

// Snapshot is the set of release notes at one ref.
type Snapshot struct {
	Ref     string       // "1.30.2", "release-1.30", "master"
	Commit  string       // full hash
	Date    string       // commit date, YYYY-MM-DD
	Version mesh.Version // for a tag; zero for a branch
	Notes   map[string]bool
}

// Repo is the mirror as the computation sees it.
type Repo struct {
	Lines []Line // ascending by minor
	// Head is master: the commit notes are read at when they are on it.
	Head Snapshot
}

// found is where, in one minor, an event first shows.
type found struct {
	ok      bool
	patch   int
	pending bool
	source  string
}

// locate finds the first patch of the line that has the event.
//
// landedAtZero is true when an earlier minor already shipped the event in its .0: a later minor,
// branched from master after it, has it from its .0 too, and the announcements need not say so.
func locate(l Line, ev *Event, ann map[mesh.Version]string, landedAtZero bool) (found, error) {
	if ev == nil {
		return found{}, nil
	}
	if landedAtZero && ev.Note != "" {
		has := l.Branch != nil && l.Branch.Notes[ev.Note]
		if len(l.Tags) > 0 {
			has = l.Tags[0].Notes[ev.Note]
		}
		if !has {
			return found{}, fmt.Errorf("%s shipped in an earlier minor's .0 but is missing from %s; a revert? check by hand", ev.Note, l.Minor.MinorString())
		}
		return found{ok: true, patch: 0, source: "as in the earlier minors"}, nil
	}
	if !ev.Version.IsZero() {
		switch {
		case ev.Version.MinorIndex() > l.Minor.MinorIndex():
			return found{}, nil
		case ev.Version.SameMinor(l.Minor):
			return found{ok: true, patch: ev.Version.Patch, source: ev.Source}, nil
		}
		return found{ok: true, patch: 0, source: ev.Source}, nil
	}
	var announcedHere []mesh.Version
	for _, v := range ev.Announced {
		if v.SameMinor(l.Minor) {
			announcedHere = append(announcedHere, v)
		}
	}
	sort.Slice(announcedHere, func(i, j int) bool { return announcedHere[i].Less(announcedHere[j]) })
	lastTag := -1
	if n := len(l.Tags); n > 0 {
		lastTag = l.Tags[n-1].Version.Patch
	}
	if ev.Note != "" {
		for i, t := range l.Tags {
			if !t.Notes[ev.Note] {
				continue
			}
			for _, later := range l.Tags[i+1:] {
				if !later.Notes[ev.Note] {
					return found{}, fmt.Errorf("%s is in tag %s but not in the later tag %s; a revert? check by hand", ev.Note, t.Ref, later.Ref)
				}
			}
			if l.Branch != nil && !l.Branch.Notes[ev.Note] {
				return found{}, fmt.Errorf("%s is in tag %s but not on %s; a revert? check by hand", ev.Note, t.Ref, l.Branch.Ref)
			}
			for _, a := range announcedHere {
				if a.Patch != t.Version.Patch {
					return found{}, fmt.Errorf("%s is in tag %s, but the selection says %s announced it first", ev.Note, t.Ref, a)
				}
			}
			return found{ok: true, patch: t.Version.Patch, source: fmt.Sprintf("istio/istio tag %s (%s)", t.Ref, short(t.Commit))}, nil
		}
		if l.Branch != nil && l.Branch.Notes[ev.Note] {
			next := lastTag + 1
			where := fmt.Sprintf("on istio/istio %s at %s (%s), after tag %s", l.Branch.Ref, short(l.Branch.Commit), l.Branch.Date, tagName(l.Minor, lastTag))
			if lastTag < 0 {
				where = fmt.Sprintf("on istio/istio %s at %s (%s), which has no release tag yet", l.Branch.Ref, short(l.Branch.Commit), l.Branch.Date)
			}
			// Walk the announcements read for this line from the branch's next patch on.
			var read []mesh.Version
			for v := range ann {
				if v.SameMinor(l.Minor) && v.Patch >= next {
					read = append(read, v)
				}
			}
			sort.Slice(read, func(i, j int) bool { return read[i].Less(read[j]) })
			var unlisted []string
			for _, v := range read {
				switch {
				case containsVersion(ev.Announced, v):
					src := where + "; listed in " + ann[v]
					if len(unlisted) > 0 {
						src += " (not listed in the earlier " + strings.Join(unlisted, ", ") + ")"
					}
					return found{ok: true, patch: v.Patch, source: src}, nil
				case containsVersion(ev.Unlisted, v):
					unlisted = append(unlisted, v.String())
				default:
					return found{}, fmt.Errorf("%s is %s and the %s announcement was read: add %s to announced if it lists the change, or to unlisted if it does not", ev.Note, where, v, v)
				}
			}
			if len(unlisted) > 0 {
				next = read[len(read)-1].Patch + 1
				where += "; not listed in the announcements of " + strings.Join(unlisted, ", ")
			}
			return found{ok: true, patch: next, pending: true, source: where}, nil
		}
	}
	if len(announcedHere) > 0 {
		v := announcedHere[0]
		return found{ok: true, patch: v.Patch, source: "listed in " + ann[v]}, nil
	}
	return found{}, nil
}

func tagName(minor mesh.Version, patch int) string {
	return fmt.Sprintf("%d.%d.%d", minor.Major, minor.Minor, patch)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func containsVersion(list []mesh.Version, v mesh.Version) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// computed is what the mirror says of one entry.
type computed struct {
	Affected     []advisories.Range
	IntroducedIn []advisories.Release
	FixedIn      []advisories.Release
}

// compute works out the affected ranges and the releases of an entry's events, minor by minor.
func compute(repo *Repo, e Entry, ann map[mesh.Version]string) (computed, error) {
	var out computed
	introLandedAtZero, fixLandedAtZero := false, false
	for _, l := range repo.Lines {
		intro := found{ok: true, patch: 0}
		if e.IntroducedBy != nil {
			var err error
			if intro, err = locate(l, e.IntroducedBy, ann, introLandedAtZero); err != nil {
				return out, fmt.Errorf("%s introducedBy in %s: %w", e.ID, l.Minor.MinorString(), err)
			}
		}
		fix, err := locate(l, e.FixedBy, ann, fixLandedAtZero)
		if err != nil {
			return out, fmt.Errorf("%s fixedBy in %s: %w", e.ID, l.Minor.MinorString(), err)
		}
		version := func(p int) mesh.Version { return mesh.Version{Major: l.Minor.Major, Minor: l.Minor.Minor, Patch: p} }
		byVersion := e.IntroducedBy != nil && !e.IntroducedBy.Version.IsZero()
		listIntro := byVersion && e.IntroducedBy.Version.SameMinor(l.Minor) || !byVersion && (intro.patch > 0 || !introLandedAtZero)
		if e.IntroducedBy != nil && intro.ok && listIntro {
			out.IntroducedIn = append(out.IntroducedIn, advisories.Release{Version: version(intro.patch), Pending: intro.pending, Source: intro.source})
			introLandedAtZero = introLandedAtZero || intro.patch == 0
		}
		if !intro.ok {
			continue
		}
		if fix.ok && fix.patch <= intro.patch {
			if fix.patch == 0 && !fixLandedAtZero {
				out.FixedIn = append(out.FixedIn, advisories.Release{Version: version(0), Pending: fix.pending, Source: fix.source})
				fixLandedAtZero = true
			}
			continue
		}
		r := advisories.Range{From: version(intro.patch)}
		if fix.ok {
			r.To = version(fix.patch - 1)
			out.FixedIn = append(out.FixedIn, advisories.Release{Version: version(fix.patch), Pending: fix.pending, Source: fix.source})
		}
		out.Affected = append(out.Affected, r)
	}
	return out, nil
}
