package main

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// line builds one minor of a fake mirror: tags[i] lists the notes in patch i's tree, branch the
// notes at the release branch's head (nil: no branch).
func line(minor int, tags [][]string, branch []string) Line {
	l := Line{Minor: mesh.Version{Major: 1, Minor: minor}}
	set := func(notes []string) map[string]bool {
		m := map[string]bool{}
		for _, n := range notes {
			m[n] = true
		}
		return m
	}
	for p, notes := range tags {
		v := mesh.Version{Major: 1, Minor: minor, Patch: p}
		l.Tags = append(l.Tags, Snapshot{Ref: v.String(), Commit: strings.Repeat("a", 40), Version: v, Notes: set(notes)})
	}
	if branch != nil {
		l.Branch = &Snapshot{Ref: "release-" + l.Minor.MinorString(), Commit: strings.Repeat("b", 40), Date: "2026-08-21", Notes: set(branch)}
	}
	return l
}

func ranges(c computed) string {
	var s []string
	for _, r := range c.Affected {
		s = append(s, r.String())
	}
	return strings.Join(s, "; ")
}

func releases(rs []advisories.Release) string {
	var s []string
	for _, r := range rs {
		x := r.Version.String()
		if r.Pending {
			x += "?"
		}
		s = append(s, x)
	}
	return strings.Join(s, ", ")
}

var v = mesh.MustParseVersion

func TestComputeWorksOutRangesFromTagsBranchesAndAnnouncements(t *testing.T) {
	// 1.29 has the fix from 1.29.2; 1.30 has it only on its branch after 1.30.1; 1.31 is unbranched
	// and master carries it.
	repo := &Repo{Lines: []Line{
		line(29, [][]string{{}, {}, {"fix.yaml"}, {"fix.yaml"}}, []string{"fix.yaml"}),
		line(30, [][]string{{}, {}}, []string{"fix.yaml", "new.yaml"}),
		line(31, nil, []string{"fix.yaml", "new.yaml"}),
	}}
	tests := []struct {
		name       string
		entry      Entry
		ann        map[mesh.Version]string
		ranges     string
		fixed      string
		introduced string
		err        string
	}{
		{name: "a note first in a tag fixes that patch and a branch-only note the branch's next one",
			entry:  Entry{ID: "istio#1", FixedBy: &Event{Note: "fix.yaml"}},
			ranges: "1.29.0–1.29.1; 1.30.0–1.30.1", fixed: "1.29.2, 1.30.2?, 1.31.0?"},
		{name: "an announcement that was read must be acknowledged",
			entry: Entry{ID: "istio#1", FixedBy: &Event{Note: "fix.yaml"}},
			ann:   map[mesh.Version]string{v("1.30.2"): "a"},
			err:   "add 1.30.2 to announced if it lists the change, or to unlisted if it does not"},
		{name: "an announcement that lists the change confirms the branch's next patch",
			entry:  Entry{ID: "istio#1", FixedBy: &Event{Note: "fix.yaml", Announced: []mesh.Version{v("1.30.2")}}},
			ann:    map[mesh.Version]string{v("1.30.2"): "a"},
			ranges: "1.29.0–1.29.1; 1.30.0–1.30.1", fixed: "1.29.2, 1.30.2, 1.31.0?"},
		{name: "announcements that do not list it push the fix past them",
			entry:  Entry{ID: "istio#1", FixedBy: &Event{Note: "fix.yaml", Unlisted: []mesh.Version{v("1.30.2"), v("1.30.3")}}},
			ann:    map[mesh.Version]string{v("1.30.2"): "a", v("1.30.3"): "b"},
			ranges: "1.29.0–1.29.1; 1.30.0–1.30.3", fixed: "1.29.2, 1.30.4?, 1.31.0?"},
		{name: "a hazard a note introduces stays open where nothing fixes it",
			entry:  Entry{ID: "istio#2", IntroducedBy: &Event{Note: "new.yaml"}},
			ranges: "1.30.2 and later 1.30 patches; 1.31.0 and later 1.31 patches", introduced: "1.30.2?, 1.31.0?"},
		{name: "without a fix every covered minor is open",
			entry:  Entry{ID: "istio#3"},
			ranges: "1.29.0 and later 1.29 patches; 1.30.0 and later 1.30 patches; 1.31.0 and later 1.31 patches"},
		{name: "a version event starts the hazard at that version",
			entry:  Entry{ID: "istio#4", IntroducedBy: &Event{Version: v("1.30.1"), Source: "code"}},
			ranges: "1.30.1 and later 1.30 patches; 1.31.0 and later 1.31 patches", introduced: "1.30.1"},
		{name: "a fix the mirror has no sign of comes from the announcements",
			entry:  Entry{ID: "istio#5", FixedBy: &Event{Announced: []mesh.Version{v("1.29.5"), v("1.30.3")}}},
			ann:    map[mesh.Version]string{v("1.29.5"): "a", v("1.30.3"): "b"},
			ranges: "1.29.0–1.29.4; 1.30.0–1.30.2; 1.31.0 and later 1.31 patches", fixed: "1.29.5, 1.30.3"},
		{name: "an announcement contradicting a tag is refused",
			entry: Entry{ID: "istio#1", FixedBy: &Event{Note: "fix.yaml", Announced: []mesh.Version{v("1.29.3")}}},
			ann:   map[mesh.Version]string{v("1.29.3"): "a"},
			err:   "is in tag 1.29.2, but the selection says 1.29.3 announced it first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ann := tc.ann
			if ann == nil {
				ann = map[mesh.Version]string{}
			}
			c, err := compute(repo, tc.entry, ann)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ranges(c); got != tc.ranges {
				t.Errorf("ranges = %q, want %q", got, tc.ranges)
			}
			if got := releases(c.FixedIn); got != tc.fixed {
				t.Errorf("fixed in = %q, want %q", got, tc.fixed)
			}
			if got := releases(c.IntroducedIn); got != tc.introduced {
				t.Errorf("introduced in = %q, want %q", got, tc.introduced)
			}
		})
	}
}

func TestANoteThatDisappearsIsRefused(t *testing.T) {
	repo := &Repo{Lines: []Line{line(30, [][]string{{}, {"fix.yaml"}, {}}, []string{"fix.yaml"})}}
	_, err := compute(repo, Entry{ID: "istio#1", FixedBy: &Event{Note: "fix.yaml"}}, map[mesh.Version]string{})
	if err == nil || !strings.Contains(err.Error(), "not in the later tag 1.30.2; a revert?") {
		t.Fatalf("error = %v", err)
	}
	repo = &Repo{Lines: []Line{
		line(29, [][]string{{"fix.yaml"}}, []string{"fix.yaml"}),
		line(30, [][]string{{}}, []string{}),
	}}
	_, err = compute(repo, Entry{ID: "istio#1", FixedBy: &Event{Note: "fix.yaml"}}, map[mesh.Version]string{})
	if err == nil || !strings.Contains(err.Error(), "shipped in an earlier minor's .0 but is missing from 1.30") {
		t.Fatalf("error = %v", err)
	}
}

func TestTheNoteMustNameTheAdvisorysIssue(t *testing.T) {
	tests := []struct {
		name, id, note string
		ok             bool
	}{
		{"a bare number matches an istio id", "istio#60668", "issue:\n- 60668\n", true},
		{"a URL matches", "ztunnel#1966", "issue:\n  - https://github.com/istio/ztunnel/issues/1966\n", true},
		{"the same number in another repository does not", "istio#1966", "issue:\n  - https://github.com/istio/ztunnel/issues/1966\n", false},
		{"another number does not", "istio#59499", "issue:\n  - 57844\n", false},
		{"a flow list of numbers is read", "istio#57656", "issue: [57656]\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkIssue(Entry{ID: tc.id, Note: "n.yaml"}, tc.note)
			if (err == nil) != tc.ok {
				t.Errorf("checkIssue = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// The selection in this directory is well formed and names only what the vocabulary allows.
func TestTheCommittedSelectionLoads(t *testing.T) {
	s, err := loadSelection("selection.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Advisories) == 0 || len(s.Announcements) == 0 {
		t.Fatalf("selection has %d advisories and %d announcements", len(s.Advisories), len(s.Announcements))
	}
}
