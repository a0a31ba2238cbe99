package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestTheDocListsEveryExampleWithItsTrueLength: doc.go names every program under examples/ (a
// folder with a main.go) as a list item, and the line count it gives for each is its main.go's,
// under the bound it states.
func TestTheDocListsEveryExampleWithItsTrueLength(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	bound := regexp.MustCompile(`under (\d+) lines`).FindStringSubmatch(text)
	if bound == nil {
		t.Fatal("doc.go states no bound on the examples' length")
	}
	limit, _ := strconv.Atoi(bound[1])
	mains, _ := filepath.Glob("*/main.go")
	if len(mains) != 5 {
		t.Errorf("%d programs under examples/, want the five primitives' (and doc.go to list them): %v", len(mains), mains)
	}
	for _, m := range mains {
		name := filepath.Dir(m)
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "\n")
		if !strings.Contains(text, "//   - "+name+" (") {
			t.Errorf("doc.go does not list %s", name)
		}
		if !strings.Contains(text, fmt.Sprintf("%s %d", name, n)) {
			t.Errorf("doc.go does not give %s's length as %d lines", name, n)
		}
		if n >= limit {
			t.Errorf("%s has %d lines; doc.go says under %d", name, n, limit)
		}
	}
}
