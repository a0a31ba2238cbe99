package ztunnel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// notHelm makes the mesh's istiod one installed by istioctl or an operator: no Helm release.
func notHelm(s *mesh.Snapshot) {
	s.Revisions[0].HelmRelease = ""
	var keep []mesh.HelmRelease
	for _, h := range s.HelmReleases {
		if h.Chart != "istiod" {
			keep = append(keep, h)
		}
	}
	s.HelmReleases = keep
}

func TestGreenTrustThePlanCannotWriteIsABlockingFindingNamingTheDeploymentAndTheChange(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*mesh.Snapshot)
		code   plan.Code
		remedy []string // what the remedy must say
	}{
		{name: "an istiod installed by istioctl or an operator gets no silent plan", mutate: notHelm, code: plan.CodeIstiodTrustNotPlannable,
			remedy: []string{"spec.values.pilot.env.CA_TRUSTED_NODE_ACCOUNTS",
				"kubectl -n istio-system set env deployment/istiod-1-30-3 CA_TRUSTED_NODE_ACCOUNTS=istio-system/ztunnel,ztunnel-green/ztunnel-green"}},
		{name: "a trust list from the release's envVarFrom overrides the plan's env value", code: plan.CodeIstiodTrustListFromValueFrom,
			mutate: func(s *mesh.Snapshot) {
				s.Revisions[0].TrustedZtunnelAccounts, s.Revisions[0].TrustedAccountsUnknown = nil, true
				setReleaseValue(s, "istiod-1-30-3", "envVarFrom", []any{map[string]any{"name": "CA_TRUSTED_NODE_ACCOUNTS",
					"valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "ztunnel-trust", "key": "accounts"}}}})
			},
			remedy: []string{`kubectl -n istio-system patch configmap ztunnel-trust --type merge -p '{"data":{"accounts":"istio-system/ztunnel,ztunnel-green/ztunnel-green"}}'`,
				"remove CA_TRUSTED_NODE_ACCOUNTS from envVarFrom of Helm release istio-system/istiod-1-30-3", "rollout restart deployment/istiod-1-30-3"}},
		{name: "a trust list from valueFrom of an istiod without Helm says how to find its source", code: plan.CodeIstiodTrustListFromValueFrom,
			mutate: func(s *mesh.Snapshot) {
				notHelm(s)
				s.Revisions[0].TrustedZtunnelAccounts, s.Revisions[0].TrustedAccountsUnknown = nil, true
			},
			remedy: []string{"kubectl -n istio-system get deployment istiod-1-30-3 -o jsonpath=", "CA_TRUSTED_NODE_ACCOUNTS=istio-system/ztunnel,ztunnel-green/ztunnel-green"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := karpenterMesh()
			tc.mutate(s)
			s.Normalize()
			p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3"),
				Waive: []plan.Code{plan.CodeTrustedAccountsUnreadable, plan.CodeIstiodDiscoveryUnknown}})
			if !errors.Is(err, plan.ErrBlocked) {
				t.Fatalf("err = %v, want ErrBlocked (steps %v)", err, ids(p))
			}
			var f *plan.Finding
			for i := range p.Findings {
				if p.Findings[i].Code == tc.code {
					f = &p.Findings[i]
				}
			}
			if f == nil {
				t.Fatalf("no %s: %v", tc.code, plan.Codes(p.Findings))
			}
			if f.Severity != plan.Blocking || f.Object != (mesh.ObjectRef{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-1-30-3"}) ||
				f.Details["account"] != "ztunnel-green/ztunnel-green" || f.Details["value"] != "istio-system/ztunnel,ztunnel-green/ztunnel-green" {
				t.Errorf("finding %s, details %v", f, f.Details)
			}
			for _, want := range tc.remedy {
				if !strings.Contains(f.Remedy, want) {
					t.Errorf("remedy %q does not say %q", f.Remedy, want)
				}
			}
		})
	}
}

func TestAnIstiodWithoutHelmThatTrustsGreenAlreadyOnlyAsksAboutDiscovery(t *testing.T) {
	s := karpenterMesh()
	notHelm(s)
	s.Revisions[0].TrustedZtunnelAccounts = []string{"istio-system/ztunnel", "ztunnel-green/ztunnel-green"}
	s.Normalize()
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Waive: []plan.Code{plan.CodeIstiodDiscoveryUnknown}})
	if err != nil {
		t.Fatalf("BlueGreenZtunnel: %v", err)
	}
	got := map[plan.Code]bool{}
	for _, f := range p.Findings {
		got[f.Code] = true
	}
	if got[plan.CodeIstiodTrustNotPlannable] || !got[plan.CodeIstiodDiscoveryUnknown] {
		t.Errorf("findings %v: want %s and no %s", plan.Codes(p.Findings), plan.CodeIstiodDiscoveryUnknown, plan.CodeIstiodTrustNotPlannable)
	}
	if !p.Runnable() {
		t.Errorf("with discovery waived the plan should run: %v", plan.Stopping(p.Findings))
	}
}
