package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

func TestMoveTagPrintsTheRankedTagsAndAPlanThatDecodes(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), nil, &out); err != nil {
		t.Fatalf("move-tag: %v", err)
	}
	if !strings.Contains(out.String(), "# Tags, lowest risk first") {
		t.Errorf("output lacks the ranked tags:\n%s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"-o", "yaml"}, &out); err != nil {
		t.Fatal(err)
	}
	if p, err := plan.Decode(out.Bytes()); err != nil || len(p.Steps) == 0 {
		t.Errorf("-o yaml does not decode to a plan with steps: %v", err)
	}
	for _, args := range [][]string{{"-o", "xml"}, {"--assume-installed", "latest"}} {
		if code := cli.ExitCode(run(context.Background(), args, &bytes.Buffer{})); code != cli.ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
}
