package plan_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

func TestTheRunbookOpensWithWhereTheMeshWasRead(t *testing.T) {
	tests := []struct {
		name, source, want string
	}{
		{"the demo mesh is said to be no cluster", plan.SourceDemo, "- source: **the embedded demo mesh (no cluster"},
		{"a dump names its folder", plan.OfflineSource("/tmp/dump"), "- source: **the dump in folder /tmp/dump (files saved with kubectl, not a live cluster)**"},
		{"a live cluster names its context and server", plan.LiveSource("admin@prod", "https://10.0.0.1:6443"),
			"- source: **the live cluster of kubeconfig context admin@prod (API server https://10.0.0.1:6443)**"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plantest.SamplePlan()
			p.Metadata.Source = tc.source
			md := render(t, p, runbook.Options{})
			if !strings.Contains(md, tc.want) {
				t.Errorf("runbook lacks %q:\n%.400s", tc.want, md)
			}
			back, err := plan.Decode(mustYAML(t, p))
			if err != nil || back.Metadata.Source != tc.source {
				t.Errorf("the plan document does not keep its source: %v, %q", err, back.Metadata.Source)
			}
		})
	}
	if _, ctx, server, _ := plan.ParseSource(plan.LiveSource("admin@prod", "https://10.0.0.1:6443")); ctx != "admin@prod" || server != "https://10.0.0.1:6443" {
		t.Errorf("ParseSource splits a context holding @ wrongly: %q %q", ctx, server)
	}
}

func mustYAML(t *testing.T, p *plan.Plan) []byte {
	t.Helper()
	b, err := plan.EncodeYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTheHeaderSaysWhyAPlanIsNotRunnable: the status line names the codes and blocked steps that
// stop the plan, so it never reads "not runnable" above findings that seem fine.
func TestTheHeaderSaysWhyAPlanIsNotRunnable(t *testing.T) {
	p := plantest.SamplePlan()
	p.Findings = []plan.Finding{{Code: plan.CodePDBBlocksDrain, Severity: plan.Waivable, Object: mesh.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "shop", Name: "db"}, Message: "0 disruptions"}}
	p.Steps[2].Blocked = "nothing runs 1-31-4 yet"
	md := render(t, p, runbook.Options{})
	want := "- status: **not runnable**: waivable findings of code `PDB_BLOCKS_DRAIN` stop it until waived or fixed; 1 step is blocked: `" + p.Steps[2].ID + "`"
	if !strings.Contains(md, want) {
		t.Errorf("runbook lacks %q:\n%.600s", want, md)
	}
}

// TestAHealthGateNamesWhatItsProbeLooksAt: with the probe described, the gate says what it looks at
// and prints the commands that show it by hand; without, it says that the plan does not know.
func TestAHealthGateNamesWhatItsProbeLooksAt(t *testing.T) {
	p := plantest.SamplePlan()
	p.Steps = append(p.Steps, plan.Step{ID: "cni/health", Description: "health gate", Risk: plan.RiskNone, HealthGate: &plan.HealthGate{Probe: "mesh-health", Scope: "istio-cni", SettleSeconds: 60}})
	described := render(t, p, runbook.Options{Probes: map[string]runbook.ProbeDoc{"mesh-health": {What: "istiod ready replicas, threshold: all", Commands: []string{"kubectl get deployments -A -l app=istiod"}}}})
	plantest.ContainsAll(t, described, `asks probe "mesh-health" whether the mesh is healthy after istio-cni: istiod ready replicas, threshold: all`, "kubectl get deployments -A -l app=istiod")
	bare := render(t, p, runbook.Options{})
	plantest.ContainsAll(t, bare, "the probe is the caller's, and the plan does not say what it looks at")
	if strings.Contains(bare, "check error rate") || strings.Contains(described, "check error rate") {
		t.Error("a health gate still says only \"check error rate\"")
	}
}
