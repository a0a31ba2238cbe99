package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

const notesDir = "releasenotes/notes/"

// git runs git against the istio/istio directory (a bare mirror is fine).
type git struct{ dir string }

func (g git) run(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", g.dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// snapshot lists the release notes at ref.
func (g git) snapshot(ref string) (Snapshot, error) {
	info, err := g.run("log", "-1", "--format=%H %cs", ref+"^{commit}", "--")
	if err != nil {
		return Snapshot{}, err
	}
	commit, date, _ := strings.Cut(strings.TrimSpace(info), " ")
	files, err := g.run("ls-tree", "--name-only", commit, notesDir)
	if err != nil {
		return Snapshot{}, err
	}
	notes := map[string]bool{}
	for _, f := range strings.Fields(files) {
		notes[strings.TrimPrefix(f, notesDir)] = true
	}
	return Snapshot{Ref: ref, Commit: commit, Date: date, Notes: notes}, nil
}

func (g git) hasRef(ref string) bool {
	_, err := g.run("rev-parse", "--verify", "--quiet", ref+"^{commit}")
	return err == nil
}

// readRepo reads the lines of the minors from..to: release tags x.y.z, the branch release-x.y, and
// master for the one minor after the newest release branch.
func readRepo(g git, from, to mesh.Version) (*Repo, error) {
	tagList, err := g.run("tag", "--list")
	if err != nil {
		return nil, err
	}
	tags := map[int][]mesh.Version{}
	for _, t := range strings.Fields(tagList) {
		v, err := mesh.ParseVersion(t)
		if err != nil || v.Pre != "" || v.Major != from.Major {
			continue
		}
		tags[v.Minor] = append(tags[v.Minor], v)
	}
	head, err := g.snapshot("master")
	if err != nil {
		return nil, err
	}
	repo := &Repo{Head: head}
	masterUsed := false
	for m := from.Minor; m <= to.Minor; m++ {
		minor := mesh.Version{Major: from.Major, Minor: m}
		l := Line{Minor: minor}
		vs := tags[m]
		sort.Slice(vs, func(i, j int) bool { return vs[i].Less(vs[j]) })
		for _, v := range vs {
			s, err := g.snapshot("refs/tags/" + v.String())
			if err != nil {
				return nil, err
			}
			s.Ref, s.Version = v.String(), v
			l.Tags = append(l.Tags, s)
		}
		branch := "release-" + minor.MinorString()
		switch {
		case g.hasRef("refs/heads/" + branch):
			s, err := g.snapshot("refs/heads/" + branch)
			if err != nil {
				return nil, err
			}
			s.Ref = branch
			l.Branch = &s
		case !masterUsed && len(vs) == 0:
			s := head
			s.Ref = "master"
			l.Branch = &s
			masterUsed = true
		default:
			return nil, fmt.Errorf("minor %s has neither tags nor a branch in the mirror; narrow coverage.to", minor.MinorString())
		}
		repo.Lines = append(repo.Lines, l)
	}
	return repo, nil
}

// noteAt reads a note's text at the newest ref holding it: master, else the newest release branch.
func noteAt(g git, repo *Repo, note string) (ref, commit, text string, err error) {
	candidates := []Snapshot{repo.Head}
	for i := len(repo.Lines) - 1; i >= 0; i-- {
		if b := repo.Lines[i].Branch; b != nil {
			candidates = append(candidates, *b)
		}
	}
	for _, s := range candidates {
		if s.Notes[note] {
			text, err := g.run("show", s.Commit+":"+notesDir+note)
			return s.Ref, s.Commit, text, err
		}
	}
	return "", "", "", fmt.Errorf("release note %s is on no branch the mirror has", note)
}

// addedBy returns the subject of the commit that added the note on the ref.
func addedBy(g git, ref, note string) (string, error) {
	out, err := g.run("log", "--diff-filter=A", "--format=%h %s", ref, "--", notesDir+note)
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1], nil
}
