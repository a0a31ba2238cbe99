package runbook

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

// TestTheVerdictTableOfAThousandObjectsHasARowPerKindVerdictAndReason: objects that share kind,
// verdict and reason share a row naming three of them and counting the rest; changes come first,
// then what was not assessed, then what is unaffected; a kind the dump lacks reads "all of them".
func TestTheVerdictTableOfAThousandObjectsHasARowPerKindVerdictAndReason(t *testing.T) {
	p := plantest.SamplePlan()
	p.Verdicts = nil
	for i := range 1000 {
		p.Verdicts = append(p.Verdicts, plan.Verdict{Object: mesh.ConfigObject{Group: mesh.GroupSecurity, Kind: "AuthorizationPolicy", Namespace: "shop", Name: fmt.Sprintf("p%04d", i)},
			Outcome: plan.Unaffected, Reason: "L4 only"})
	}
	p.Verdicts = append(p.Verdicts,
		plan.Verdict{Object: mesh.ConfigObject{Group: mesh.GroupNetworking, Kind: "EnvoyFilter"}, Outcome: plan.NotAssessed, Reason: "unread"},
		plan.Verdict{Object: mesh.ConfigObject{Group: mesh.GroupNetworking, Kind: "Sidecar", Namespace: "shop", Name: "default"}, Outcome: plan.Changes, Reason: "egress lost",
			Codes: []plan.Code{"SIDECAR_RESOURCE_NO_EFFECT"}})
	md := render(t, p, Options{})
	start := strings.Index(md, "## Configuration objects (1002: 1 change, 1 not assessed, 1000 unaffected)")
	if start < 0 {
		t.Fatalf("no verdict table with the counts:\n%.2000s", md)
	}
	var rows []string
	for _, line := range strings.Split(md[start:], "\n")[6:] {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		rows = append(rows, line)
	}
	want := []string{
		"| changes | Sidecar.networking.istio.io | shop/default | egress lost | `SIDECAR_RESOURCE_NO_EFFECT` |",
		"| not-assessed | EnvoyFilter.networking.istio.io | all of them | unread |  |",
		"| unaffected | AuthorizationPolicy.security.istio.io | shop/p0000, shop/p0001, shop/p0002 and 997 more | L4 only |  |",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
