package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

func TestMoveTagPrintsTheRankedTagsAndAPlanThatDecodes(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), onDemo([]string{"--assume-installed", "1.31.4"}), nil, &out, io.Discard); err != nil {
		t.Fatalf("move-tag: %v", err)
	}
	if !strings.Contains(out.String(), "# Tags, lowest risk first") {
		t.Errorf("output lacks the ranked tags:\n%s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), onDemo([]string{"--assume-installed", "1.31.4", "-o", "yaml"}), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if p, err := plan.Decode(out.Bytes()); err != nil || len(p.Steps) == 0 {
		t.Errorf("-o yaml does not decode to a plan with steps: %v", err)
	}
	for _, args := range [][]string{{"-o", "xml"}, {"--assume-installed", "latest"}} {
		if code := cli.ExitCode(run(context.Background(), onDemo(args), nil, &bytes.Buffer{}, io.Discard)); code != cli.ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
}

// onDemo plans the embedded demo mesh: the examples read the live cluster unless told otherwise.
func onDemo(args []string) []string { return append([]string{"--demo"}, args...) }
