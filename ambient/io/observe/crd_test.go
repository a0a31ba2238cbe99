package observe_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

const (
	authzPolicy = "---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: deny, namespace: a}\nspec: {action: DENY}\n"
	apiGateway  = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: public, namespace: edge}\nspec: {gatewayClassName: istio}\n"
	nodePool    = "---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: general}\n"
)

func TestCRDsAreInstalledWhenObjectsOfTheirKindAreInTheInput(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		wantCRDs []mesh.CRD
		wantGW   mesh.GatewayAPI
	}{
		{name: "Istio policies without their CRD give an inferred CRD",
			input:    authzPolicy,
			wantCRDs: []mesh.CRD{{Name: "authorizationpolicies.security.istio.io", Group: "security.istio.io", Inferred: true}}},
		{name: "Gateways without the Gateway API CRDs mean the Gateway API is installed, bundle version unknown",
			input:    apiGateway,
			wantCRDs: []mesh.CRD{{Name: "gateways.gateway.networking.k8s.io", Group: "gateway.networking.k8s.io", Inferred: true}},
			wantGW:   mesh.GatewayAPI{Installed: true}},
		{name: "a CRD in the input is not inferred again",
			input: authzPolicy + crdObj("authorizationpolicies.security.istio.io", released("istio-base", "base-1.30.3")),
			wantCRDs: []mesh.CRD{{Name: "authorizationpolicies.security.istio.io", Group: "security.istio.io",
				Labels: map[string]string{"app.kubernetes.io/instance": "istio-base", "app.kubernetes.io/managed-by": "Helm",
					"app.kubernetes.io/version": "1.30.3", "helm.sh/chart": "base-1.30.3"},
				Annotations: map[string]string{"meta.helm.sh/release-name": "istio-base", "meta.helm.sh/release-namespace": "istio-system"}}}},
		{name: "objects of kinds outside Istio and the Gateway API give no CRD",
			input: nodePool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, tt.input)
			if d := cmp.Diff(tt.wantCRDs, s.CRDs); d != "" {
				t.Errorf("CRDs (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantGW, s.GatewayAPI); d != "" {
				t.Errorf("GatewayAPI (-want +got):\n%s", d)
			}
		})
	}
}

func TestInferredCRDsAreNotReportedAsLackingHelmOwnership(t *testing.T) {
	base := released("istio-base", "base-1.30.3")
	tests := []struct {
		name  string
		input string
		want  bool // CRD_OWNERSHIP_NEEDS_ADOPTION expected
	}{
		{"a CRD known only from its objects says nothing about its ownership",
			authzPolicy + validatorObj(base), false},
		{"a CRD in the input without Helm metadata still needs adopting",
			authzPolicy + validatorObj(base) + crdObj("authorizationpolicies.security.istio.io", helmMeta{}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, istiodObj("istio-system", released("istiod-1-30-3", "istiod-1.30.3"))+tt.input)
			c, err := ambient.CompatibilityReport(s, ambient.CompatibilityOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := false
			for _, f := range c.Findings {
				if f.Code == plan.CodeCRDOwnershipNeedsAdoption {
					got = true
				}
			}
			if got != tt.want {
				t.Errorf("%s reported = %v, want %v (findings %v)", plan.CodeCRDOwnershipNeedsAdoption, got, tt.want, c.Findings)
			}
		})
	}
}
