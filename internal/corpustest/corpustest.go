package corpustest

import (
	"context"
	"path/filepath"
	"sort"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// State is one mesh state: "demo" or the corpus state's folder name, and its snapshot.
type State struct {
	Name     string
	Snapshot *mesh.Snapshot
}

// States returns the demo mesh and every corpus state under root (the module's folder), sorted by
// name. It fails the test when a state cannot be read or the corpus holds fewer than 25 states.
func States(t testing.TB, root string) []State {
	t.Helper()
	ctx := context.Background()
	s, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := []State{{Name: "demo", Snapshot: s}}
	dumps, err := filepath.Glob(filepath.Join(root, "testdata", "broken", "*", "dump"))
	if err != nil || len(dumps) < 25 {
		t.Fatalf("corpus under %s: %v, %d dumps", root, err, len(dumps))
	}
	for _, d := range dumps {
		s, err := observe.Dir(ctx, d, observe.Options{})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		out = append(out, State{Name: filepath.Base(filepath.Dir(d)), Snapshot: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
