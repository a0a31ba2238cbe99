// Command advisories writes ambient/knowledge/advisories/advisories.yaml, the embedded upgrade advisories, from
// an istio/istio git directory and the reviewed selection in this directory.
//
// The selection (selection.yaml) says which upstream release notes become advisories and gives, in
// our own words, each one's title, component, operations, conditions, action and cleanup. This
// program works out the versions: for every minor of the selection's coverage it lists the release
// notes in each release tag, on the minor's release branch (release-1.X) and, for the one minor not
// yet branched, on master. A note first present in tag 1.X.Y fixed (or introduced) the hazard in
// 1.X.Y; a note only on the branch lands in the branch's next patch, which the istio.io announcements
// named in the selection confirm (announced) or push back (unlisted). Affected ranges follow per minor.
// The text of every note is read only to check that it names the advisory's issue; none of it is
// copied.
//
// To refresh the data:
//
//  1. Get a current istio/istio clone or mirror (a bare one is fine), with its tags and release
//     branches: git clone --mirror https://github.com/istio/istio.
//
//  2. Read the istio.io announcements of every patch released since the newest tags
//     (content/en/news/releases/1.X.x/announcing-1.X.Y/index.md, and announcing-1.X/change-notes for
//     a minor's .0), list them under announcements in selection.yaml, and for each advisory add the
//     patches that list its change to announced, and those that do not although the branch had it
//     to unlisted. The program refuses to guess: a pending patch whose announcement was read must
//     be acknowledged one way or the other.
//
//  3. Review release notes added since the last refresh (git diff --stat <old>..master --
//     releasenotes/notes) and add the ones that bite during an ambient upgrade or uninstall.
//
//  4. Run, from the repository root:
//
//     go run ./hack/advisories -istio /path/to/istio.git -selection hack/advisories/selection.yaml -o ambient/knowledge/advisories/advisories.yaml
//
//  5. Review the diff of advisories.yaml, update the pinned expectations in
//     ambient/knowledge/advisories/embedded_test.go, and run go test ./ambient/knowledge/advisories/...
//
// The output is deterministic: the same mirror and selection give the same bytes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

func main() {
	istio := flag.String("istio", "", "istio/istio git directory (bare mirror or clone)")
	selection := flag.String("selection", "hack/advisories/selection.yaml", "the reviewed selection")
	out := flag.String("o", "ambient/knowledge/advisories/advisories.yaml", "output file; - for stdout")
	flag.Parse()
	if *istio == "" {
		fmt.Fprintln(os.Stderr, "advisories: -istio is required (an istio/istio git directory)")
		os.Exit(2)
	}
	if err := run(*istio, *selection, *out); err != nil {
		fmt.Fprintln(os.Stderr, "advisories:", err)
		os.Exit(1)
	}
}

func run(istioDir, selectionPath, outPath string) error {
	sel, err := loadSelection(selectionPath)
	if err != nil {
		return err
	}
	from := mesh.MustParseVersion(sel.Coverage.From + ".0")
	to := mesh.MustParseVersion(sel.Coverage.To + ".0")
	g := git{dir: istioDir}
	repo, err := readRepo(g, from, to)
	if err != nil {
		return err
	}
	ann := map[mesh.Version]string{}
	for _, a := range sel.Announcements {
		ann[a.Version] = fmt.Sprintf("the %s announcement (%s)", a.Version, a.Source)
	}
	data := &advisories.Data{Horizons: horizons(repo, sel)}
	for _, e := range sel.Advisories {
		a, err := build(g, repo, e, ann)
		if err != nil {
			return err
		}
		data.Advisories = append(data.Advisories, a)
	}
	sort.Slice(data.Advisories, func(i, j int) bool { return data.Advisories[i].ID < data.Advisories[j].ID })
	var b bytes.Buffer
	if err := data.WriteYAML(&b, header(repo)); err != nil {
		return err
	}
	if _, err := advisories.Load(bytes.NewReader(b.Bytes())); err != nil {
		return fmt.Errorf("the generated data does not load: %w", err)
	}
	for _, a := range data.Advisories {
		var rs []string
		for _, r := range a.Affected {
			rs = append(rs, r.String())
		}
		fmt.Fprintf(os.Stderr, "%-45s %-9s %s\n", a.ID, a.Component, strings.Join(rs, "; "))
	}
	if outPath == "-" {
		_, err = os.Stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(outPath, b.Bytes(), 0o644)
}

var issueNumber = regexp.MustCompile(`^(istio|ztunnel|api)#([0-9]+)$`)

// build turns a selected entry into an advisory, with the versions the mirror gives.
func build(g git, repo *Repo, e Entry, ann map[mesh.Version]string) (advisories.Advisory, error) {
	c, err := compute(repo, e, ann)
	if err != nil {
		return advisories.Advisory{}, err
	}
	src := advisories.Source{Issue: e.Issue, PR: e.PR}
	notes := []string{}
	if e.Note != "" {
		notes = append(notes, e.Note)
	}
	for _, ev := range []*Event{e.IntroducedBy, e.FixedBy} {
		if ev != nil && ev.Note != "" && ev.Note != e.Note {
			notes = append(notes, ev.Note)
		}
	}
	for i, n := range notes {
		ref, commit, text, err := noteAt(g, repo, n)
		if err != nil {
			return advisories.Advisory{}, fmt.Errorf("%s: %w", e.ID, err)
		}
		if i == 0 {
			src.Note, src.Commit = notesDir+n, commit
			if err := checkIssue(e, text); err != nil {
				return advisories.Advisory{}, err
			}
		} else {
			src.Refs = append(src.Refs, fmt.Sprintf("istio/istio@%s:%s%s", commit, notesDir, n))
		}
		subject, err := addedBy(g, ref, n)
		if err != nil {
			return advisories.Advisory{}, err
		}
		src.Refs = append(src.Refs, fmt.Sprintf("%s was added on %s by %s", n, ref, subject))
	}
	src.Refs = append(src.Refs, e.Refs...)
	return advisories.Advisory{
		ID: e.ID, Title: e.Title, Component: e.Component, When: e.When, Conditions: e.Conditions,
		Affected: c.Affected, IntroducedIn: c.IntroducedIn, FixedIn: c.FixedIn,
		Action: strings.TrimSpace(e.Action) + "\n", Cleanup: e.Cleanup, Source: src, Reviewed: e.Reviewed,
	}, nil
}

// checkIssue makes sure the note names the advisory's issue, so an ID cannot drift from its note.
func checkIssue(e Entry, text string) error {
	m := issueNumber.FindStringSubmatch(e.ID)
	if m == nil || e.NoteIssue != "" {
		return nil
	}
	var note struct {
		Issue  []any `json:"issue"`
		Issues []any `json:"issues"`
	}
	if err := yaml.Unmarshal([]byte(text), &note); err != nil {
		return fmt.Errorf("%s: reading %s: %w", e.ID, e.Note, err)
	}
	repo := map[string]string{"istio": "istio/istio", "ztunnel": "istio/ztunnel", "api": "istio/api"}[m[1]]
	for _, raw := range append(note.Issue, note.Issues...) {
		i := strings.TrimSpace(fmt.Sprint(raw))
		if i == m[2] && m[1] == "istio" || strings.HasSuffix(i, repo+"/issues/"+m[2]) || strings.HasSuffix(i, repo+"/pull/"+m[2]) {
			return nil
		}
	}
	return fmt.Errorf("%s: note %s names issues %v, not %s; fix the id or say why in noteIssue", e.ID, e.Note, append(note.Issue, note.Issues...), e.ID)
}

// horizons says, per minor, the newest release read.
func horizons(repo *Repo, sel *Selection) []advisories.Horizon {
	var out []advisories.Horizon
	for _, l := range repo.Lines {
		h := advisories.Horizon{Minor: l.Minor.MinorString()}
		var parts []string
		if n := len(l.Tags); n > 0 {
			h.Newest = l.Tags[n-1].Version
			parts = append(parts, fmt.Sprintf("istio/istio tags %s to %s", l.Tags[0].Ref, l.Tags[n-1].Ref))
		}
		if b := l.Branch; b != nil {
			parts = append(parts, fmt.Sprintf("%s at %s (%s)", b.Ref, short(b.Commit), b.Date))
		}
		var read []string
		for _, a := range sel.Announcements {
			if a.Version.SameMinor(l.Minor) {
				read = append(read, a.Version.String())
				if h.Newest.Less(a.Version) {
					h.Newest = a.Version
				}
			}
		}
		if len(read) > 0 {
			parts = append(parts, "istio.io announcements of "+strings.Join(read, ", "))
		}
		h.Source = strings.Join(parts, "; ")
		out = append(out, h)
	}
	return out
}

func header(repo *Repo) string {
	return strings.TrimSpace(fmt.Sprintf(`
Known hazards of Istio ambient upgrades and uninstalls, by version. Generated: do not edit by hand.
Made by hack/advisories (see its header to refresh) from hack/advisories/selection.yaml and the
release notes of istio/istio at master %s (%s) with its release tags and branches.
Replace it without recompiling: advisories.LoadFile(path) or advisories.Load(reader).

Every sentence is ours; the facts, names and numbers come from the sources each entry names.
  horizons      per minor, the newest release read (tags, branch heads, istio.io announcements);
                an open range (no "to") means no fix was seen in that minor up to its horizon
  id            the upstream issue (istio#N, ztunnel#N) or, for a note without one, istio-note/<name>
  component     whose version the ranges describe: istiod, cni, ztunnel, gateway, waypoint, base, istioctl
  when          the operations during which it bites
  conditions    all must hold: always, workloads>=N, or a named condition (ambient/knowledge/advisories/vocab.go)
  affected      per minor, from..to (to omitted: open, no fix in that minor yet)
  introducedIn  where the hazard arrived; omitted when it was not traced (ranges then start at the
                oldest covered minor)
  fixedIn       the first fixed patch per affected minor, and the first minor release shipping the
                fix; pending: on the release branch, in no release read yet
  action        what to do; cleanup: objects left behind ({revision}, {istioNamespace} placeholders)
  source        the release note and the commit it was read at, the issue and pull request, and
                what else was checked; reviewed: checked by hand against those sources
`, short(repo.Head.Commit), repo.Head.Date))
}
