package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

func TestYAMLOutputDecodesBackToTheSamePlan(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), onDemo([]string{"-o", "yaml", "--today", "2026-11-30"}), nil, &out, io.Discard)
	// The demo mesh has a PodDisruptionBudget that allows no disruption: waivable, not waived.
	if code := cli.ExitCode(err); code != cli.ExitNeedsWaiver {
		t.Fatalf("plan-upgrade -o yaml: exit %d (%v), want %d", code, err, cli.ExitNeedsWaiver)
	}
	p, err := plan.Decode(out.Bytes())
	if err != nil {
		t.Fatalf("the printed plan does not decode: %v", err)
	}
	if len(p.Steps) == 0 || p.Metadata.To.String() != "1.31.4" {
		t.Fatalf("want a full plan to 1.31.4, got %d steps to %s", len(p.Steps), p.Metadata.To)
	}
	// The same plan, made directly through the public API, must be equal to the decoded one.
	snap, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	direct, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: p.Metadata.To, Today: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Source != plan.SourceDemo {
		t.Errorf("the plan records its source as %q, want %q", p.Metadata.Source, plan.SourceDemo)
	}
	direct.Metadata.Source = plan.SourceDemo // the program records it; the planner sees the snapshot only
	if d := cmp.Diff(direct, p); d != "" {
		t.Fatalf("decoded plan differs from the planned one (-planned +decoded):\n%s", d)
	}
}

func TestMarkdownOutputHasReportAndPlanAndTheExitCodeSaysWhatToWaive(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), onDemo([]string{"--today", "2026-11-30"}), nil, &out, io.Discard)
	if code := cli.ExitCode(err); code != cli.ExitNeedsWaiver || !strings.Contains(err.Error(), "--waive PDB_BLOCKS_DRAIN") {
		t.Errorf("plan-upgrade: exit %d (%v), want %d naming --waive PDB_BLOCKS_DRAIN", code, err, cli.ExitNeedsWaiver)
	}
	for _, want := range []string{"# Compatibility with 1.31.4", "# upgrade Istio 1.30.3 → 1.31.4", "helm install istiod-1-31-4", "kubectl drain"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	out.Reset()
	if err := run(context.Background(), onDemo([]string{"--today", "2026-11-30", "--waive", "PDB_BLOCKS_DRAIN", "-o", "json"}), nil, &out, io.Discard); err != nil {
		t.Errorf("with the waiver the plan is runnable: %v", err)
	}
}

func TestEndOfLifeIsJudgedAtToday(t *testing.T) {
	// 1.30 reaches its end of life on 2026-12-30 (estimated); a target within 30 days of it is waivable.
	args := []string{"--strategy", "in-place", "--target", "1.30.8", "--waive", "PDB_BLOCKS_DRAIN", "-o", "yaml"}
	err := run(context.Background(), onDemo(append(args, "--today", "2027-01-15")), nil, &bytes.Buffer{}, io.Discard)
	if cli.ExitCode(err) != cli.ExitNeedsWaiver || !strings.Contains(err.Error(), "TARGET_END_OF_LIFE") {
		t.Errorf("in 2027 the 1.30 target is past its end of life: %v, want exit %d naming TARGET_END_OF_LIFE", err, cli.ExitNeedsWaiver)
	}
	if err := run(context.Background(), onDemo(append(args, "--today", "2026-10-01")), nil, &bytes.Buffer{}, io.Discard); err != nil {
		t.Errorf("in October 2026 the 1.30 target is supported: %v", err)
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-o", "xml"}, {"--target", "v1.31"}, {"--today", "tomorrow"}, {"--from-dir", "/nonexistent", "--context", "x"},
		{"--ztunnel", "in-place", "--batch-size", "2"}, {"--no-such-flag"}, {"extra-argument"}} {
		if code := cli.ExitCode(run(context.Background(), onDemo(args), nil, &bytes.Buffer{}, io.Discard)); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
	var help bytes.Buffer
	if err := run(context.Background(), onDemo([]string{"--help"}), nil, &help, io.Discard); cli.ExitCode(err) != cli.ExitOK || !strings.Contains(help.String(), "kubectl version -o yaml > version.yaml") {
		t.Errorf("--help: %v, want exit 0 and the dump commands", err)
	}
}

// onDemo plans the embedded demo mesh: the examples read the live cluster unless told otherwise.
func onDemo(args []string) []string { return append([]string{"--demo"}, args...) }
