package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/demo"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

func TestYAMLOutputDecodesBackToTheSamePlan(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-o", "yaml", "--today", "2026-11-30"}, &out); err != nil {
		t.Fatalf("plan-upgrade -o yaml: %v", err)
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
	if d := cmp.Diff(direct, p); d != "" {
		t.Fatalf("decoded plan differs from the planned one (-planned +decoded):\n%s", d)
	}
}

func TestMarkdownOutputHasReportAndPlan(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), nil, &out); err != nil {
		t.Fatalf("plan-upgrade: %v", err)
	}
	for _, want := range []string{"# Compatibility with 1.31.4", "# upgrade Istio 1.30.3 → 1.31.4", "helm install istiod-1-31-4", "kubectl drain"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{{"-o", "xml"}, {"--target", "v1.31"}, {"--today", "tomorrow"}, {"--from-dir", "/nonexistent", "--context", "x"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v should fail", args)
		}
	}
}
