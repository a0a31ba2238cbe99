package ambient_test

import (
	"context"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// unrevisionedDump is a corpus state whose mesh is the most common Helm install: one unrevisioned
// istiod (revision default), istio-cni and ztunnel, workloads injected through istio-injection.
const unrevisionedDump = "../testdata/broken/m01-ingress-bypasses-waypoint/dump"

func TestTheDefaultStrategyFitsTheControlPlane(t *testing.T) {
	s, err := observe.Dir(context.Background(), unrevisionedDump, observe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Revisions) != 1 || s.Revisions[0].Name != "default" {
		t.Fatalf("the dump's control plane is %+v, want one unrevisioned istiod", s.Revisions)
	}
	target := mesh.MustParseVersion("1.31.4")
	tests := []struct {
		name     string
		strategy ambient.Strategy
		want     ambient.Strategy
		runnable bool
		chosen   bool
	}{
		{name: "an unrevisioned control plane with no strategy given is upgraded in place, runnable, and the plan says why", want: ambient.StrategyInPlace, runnable: true, chosen: true},
		{name: "asking for a revision upgrade of it still plans one, whose removal waits for the references", strategy: ambient.StrategyRevision, want: ambient.StrategyRevision},
		{name: "asking for in place says nothing of a choice", strategy: ambient.StrategyInPlace, want: ambient.StrategyInPlace, runnable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: target, Strategy: tt.strategy, Today: today,
				Waive: []plan.Code{plan.CodeKubernetesUnsupportedByTarget}})
			if p == nil {
				t.Fatal(err)
			}
			if got := p.Metadata.Options["strategy"]; got != string(tt.want) {
				t.Errorf("strategy %q, want %q", got, tt.want)
			}
			if got := p.Runnable(); got != tt.runnable {
				t.Errorf("runnable %v, want %v; findings %v", got, tt.runnable, plan.Stopping(p.Findings))
			}
			f, chosen := findCode(p, plan.CodeStrategyInPlaceForUnrevisioned)
			if chosen != tt.chosen {
				t.Fatalf("finding %s present %v, want %v", plan.CodeStrategyInPlaceForUnrevisioned, chosen, tt.chosen)
			}
			if chosen && (f.Severity != plan.Info || len(f.RemedyOptions) != 1 || f.RemedyOptions[0].Value != string(ambient.StrategyRevision)) {
				t.Errorf("the choice is not an info finding naming the option that asks for a revision: %+v", f)
			}
		})
	}
	if got := ambient.DefaultStrategy(&mesh.Snapshot{Revisions: []mesh.Revision{{Name: "default"}, {Name: "1-30-3"}}}); got != ambient.StrategyRevision {
		t.Errorf("a mesh running a revision beside default defaults to %q, want a revision upgrade", got)
	}
}

func findCode(p *plan.Plan, c plan.Code) (plan.Finding, bool) {
	for _, f := range p.Findings {
		if f.Code == c {
			return f, true
		}
	}
	return plan.Finding{}, false
}
