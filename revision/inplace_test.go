package revision_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/revision"
)

func TestAnInPlaceIstiodUpgradeIsFollowedByAHealthGateAndRemindsOfOldSidecars(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 2)
	p := plan.New(plan.Metadata{Name: "t", Operation: "upgrade", Fingerprint: s.Fingerprint()})
	b := steps.New(p, steps.Options{})
	revision.AddInPlace(b, s, revision.InPlaceOptions{Target: mesh.MustParseVersion("1.31.4")})
	if got, want := stepIDs(p), []string{"istiod/1-30-3/upgrade", "istiod/1-30-3/health"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("steps %v, want %v", got, want)
	}
	gate := p.Steps[1]
	if gate.HealthGate == nil || gate.HealthGate.Scope != "istiod 1-30-3" || len(gate.DependsOn) != 1 || gate.DependsOn[0] != "istiod/1-30-3/upgrade" {
		t.Errorf("health gate %+v (depends on %v)", gate.HealthGate, gate.DependsOn)
	}
	var reminder *plan.Finding
	for i := range p.Findings {
		if p.Findings[i].Code == plan.CodeSidecarsKeepOldProxy {
			reminder = &p.Findings[i]
		}
	}
	if reminder == nil {
		t.Fatalf("no %s: %v", plan.CodeSidecarsKeepOldProxy, plan.Codes(p.Findings))
	}
	billing := mesh.ObjectRef{Kind: "Deployment", Namespace: "legacy", Name: "billing"}
	if reminder.Severity != plan.Info || reminder.Details["pods"] != "2" || len(reminder.Related) != 1 || reminder.Related[0] != billing ||
		!strings.Contains(reminder.Remedy, "kubectl rollout restart deployment/billing -n legacy") {
		t.Errorf("reminder %s, related %v, remedy %q", reminder, reminder.Related, reminder.Remedy)
	}
	if len(gate.Notes) == 0 || !strings.Contains(gate.Notes[0], "billing") {
		t.Errorf("the health gate does not remind of the old sidecars: %v", gate.Notes)
	}
}

func TestSidecarsAlreadyOnTheTargetNeedNoReminder(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 2)
	for i := range s.Workloads {
		if len(s.Workloads[i].SidecarRevisions) > 0 {
			s.Workloads[i].ProxyVersions = []mesh.Version{mesh.MustParseVersion("1.31.4")}
		}
	}
	p := plan.New(plan.Metadata{Name: "t", Operation: "upgrade", Fingerprint: s.Fingerprint()})
	revision.AddInPlace(steps.New(p, steps.Options{}), s, revision.InPlaceOptions{Target: mesh.MustParseVersion("1.31.4")})
	for _, f := range p.Findings {
		if f.Code == plan.CodeSidecarsKeepOldProxy {
			t.Errorf("reminder for sidecars already on the target: %s", f)
		}
	}
}
