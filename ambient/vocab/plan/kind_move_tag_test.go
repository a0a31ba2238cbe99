package plan_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestTheTagCommandRendersFromTheCallersChartSource: the runbook renders a tag from the chart
// source the plan was made with (a folder, a mirror, an OCI registry), never from a repository
// alias the reader may not have (istio/istiod); with no chart source it applies the plan's objects.
func TestTheTagCommandRendersFromTheCallersChartSource(t *testing.T) {
	tests := []struct {
		name  string
		chart plan.ChartRef
		want  string
	}{
		{"a charts folder", plan.ChartRef{Name: "istiod", Path: "/srv/charts/istiod", Version: "1.31.4"}, "helm template istiod /srv/charts/istiod -s templates/revision-tags-mwc.yaml"},
		{"a mirror", plan.ChartRef{Name: "istiod", Repository: "https://mirror.example.com/istio", Version: "1.31.4"},
			"helm template istiod istiod --repo https://mirror.example.com/istio --version 1.31.4 -s"},
		{"an OCI registry", plan.ChartRef{Name: "istiod", OCI: "oci://registry.example.com/istio/istiod", Version: "1.31.4"},
			"helm template istiod oci://registry.example.com/istio/istiod --version 1.31.4 -s"},
		{"no chart source", plan.ChartRef{}, "kubectl apply --server-side --field-manager=ambientkit --force-conflicts -f - <<'EOF'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := plan.Step{ID: "tags/prod/move", Risk: plan.RiskHigh, MoveTag: &plan.TagMove{Tag: "prod", From: "1-30-3", To: "1-31-4", Namespace: "istio-system",
				Objects: []map[string]any{{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": map[string]any{"name": "istio-revision-tag-prod"}}},
				Chart:   tc.chart}}
			cmds := strings.Join(plan.Commands(&s), "\n")
			if !strings.Contains(cmds, tc.want) {
				t.Errorf("commands lack %q:\n%s", tc.want, cmds)
			}
			if strings.Contains(cmds, " istio/istiod ") {
				t.Errorf("commands name the repository alias istio/istiod:\n%s", cmds)
			}
		})
	}
}
