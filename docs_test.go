package ambientkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink finds Markdown links and images: [text](target) and ![alt](target).
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// brokenLinks returns the links of a Markdown file (at path, inside root) that do not resolve to a
// file or folder of the repository: relative links must stay inside root and exist; web links
// (http, https, mailto) and anchors are not followed.
func brokenLinks(root, path, text string) []string {
	var bad []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		abs := filepath.Clean(filepath.Join(filepath.Dir(path), target))
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			bad = append(bad, m[1]+" (outside the repository)")
			continue
		}
		if _, err := os.Stat(abs); err != nil {
			bad = append(bad, m[1]+" (no such file)")
		}
	}
	return bad
}

func TestEveryMarkdownLinkResolvesInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 3 {
		t.Fatalf("found %d Markdown files; the repository has more", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree
			}
			t.Fatal(err)
		}
		for _, l := range brokenLinks(root, filepath.Join(root, f), string(b)) {
			t.Errorf("%s links to %s", f, l)
		}
		if strings.Contains(string(b), "../shared/") {
			t.Errorf("%s names ../shared/, which a clone does not have; the design notes are docs/design.md", f)
		}
	}
}

func TestALinkOutsideTheRepositoryOrToNothingIsBroken(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.md"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := brokenLinks(root, filepath.Join(root, "README.md"),
		"[ok](a.md) [web](https://istio.io) [anchor](#x) [up](../shared/docs/design.md) [gone](docs/none.md)")
	want := []string{"../shared/docs/design.md (outside the repository)", "docs/none.md (no such file)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("broken links %q, want %q", got, want)
	}
}
