package compat_test

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// skewMesh is a mesh whose istiod runs cp and ztunnel zt, with namespace store in ambient.
func skewMesh(cp, zt string) *mesh.Snapshot {
	s := withAmbientStore(meshtest.Healthy(zt, 3), nil)
	meshtest.SetControlPlane(s, cp)
	return s
}

func serviceEntry(name, resolution string) mesh.IstioConfig {
	return mesh.IstioConfig{Kind: "ServiceEntry", Namespace: "store", Name: name, Spec: map[string]any{"resolution": resolution, "hosts": []any{name + ".internal"}}}
}

func dryRunPolicy(ns string) mesh.Policy {
	return mesh.Policy{Kind: "AuthorizationPolicy", Namespace: ns, Name: "deny-all-dry", Action: "DENY", Annotations: map[string]string{"istio.io/dry-run": "true"}}
}

func withDryRunFlag(s *mesh.Snapshot) *mesh.Snapshot {
	for i := range s.Revisions {
		s.Revisions[i].Settings = map[string]string{mesh.EnvDryRunAuthz: "true"}
	}
	return s
}

func TestSkewRules(t *testing.T) {
	tests := []struct {
		name     string
		mesh     func() *mesh.Snapshot
		target   string
		strategy compat.Strategy
		code     plan.Code
		want     []string
		sev      plan.Severity
	}{
		{
			name: "an in-place upgrade to 1.28 opens the window in which ztunnel 1.27 rejects a resolution NONE ServiceEntry",
			mesh: func() *mesh.Snapshot {
				s := skewMesh("1.27.9", "1.27.9")
				s.IstioConfig = append(s.IstioConfig, serviceEntry("redis-vm", "NONE"), serviceEntry("api", "DNS"))
				return s
			},
			target: "1.28.10", strategy: compat.StrategyInPlace, code: plan.CodeServiceEntryNackedByOldZtunnel,
			want: []string{"ServiceEntry store/redis-vm"}, sev: plan.Waivable,
		},
		{
			name: "a revision upgrade leaves ztunnel on its old istiod until its own upgrade, so no entry is rejected",
			mesh: func() *mesh.Snapshot {
				s := skewMesh("1.27.9", "1.27.9")
				s.IstioConfig = append(s.IstioConfig, serviceEntry("redis-vm", "NONE"))
				return s
			},
			target: "1.28.10", strategy: compat.StrategyRevision, code: plan.CodeServiceEntryNackedByOldZtunnel,
		},
		{
			name: "a ztunnel that is already 1.28 understands the passthrough service",
			mesh: func() *mesh.Snapshot {
				s := skewMesh("1.28.10", "1.28.10")
				s.IstioConfig = append(s.IstioConfig, serviceEntry("redis-vm", "NONE"))
				return s
			},
			target: "1.29.6", strategy: compat.StrategyInPlace, code: plan.CodeServiceEntryNackedByOldZtunnel,
		},
		{
			name: "istiod 1.29 with dry-run policies on and ztunnel 1.28 enforce a dry-run policy now, which the ztunnel upgrade ends",
			mesh: func() *mesh.Snapshot {
				s := withDryRunFlag(skewMesh("1.29.6", "1.28.5"))
				s.Policies = append(s.Policies, dryRunPolicy("store"))
				return s
			},
			code: plan.CodeDryRunPolicyEnforcedByOldZtunnel, want: []string{"AuthorizationPolicy store/deny-all-dry"}, sev: plan.Waivable,
		},
		{
			name: "an in-place upgrade to 1.29 with dry-run policies on, while ztunnel stays 1.28, is blocked",
			mesh: func() *mesh.Snapshot {
				s := withDryRunFlag(skewMesh("1.28.5", "1.28.5"))
				s.Policies = append(s.Policies, dryRunPolicy("store"))
				return s
			},
			target: "1.29.6", strategy: compat.StrategyInPlace, code: plan.CodeDryRunPolicyEnforcedByOldZtunnel,
			want: []string{"AuthorizationPolicy store/deny-all-dry"}, sev: plan.Blocking,
		},
		{
			name: "without AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY istiod sends no dry-run policy to ztunnel",
			mesh: func() *mesh.Snapshot {
				s := skewMesh("1.29.6", "1.28.5")
				s.Policies = append(s.Policies, dryRunPolicy("store"))
				return s
			},
			code: plan.CodeDryRunPolicyEnforcedByOldZtunnel,
		},
		{
			name: "a dry-run policy of a sidecar namespace is not ztunnel's",
			mesh: func() *mesh.Snapshot {
				s := withDryRunFlag(skewMesh("1.29.6", "1.28.5"))
				s.Namespaces = append(s.Namespaces, mesh.Namespace{Name: "legacy", Labels: map[string]string{mesh.LabelInjection: "enabled"}})
				s.Policies = append(s.Policies, dryRunPolicy("legacy"))
				return s
			},
			code: plan.CodeDryRunPolicyEnforcedByOldZtunnel,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := compat.Options{Strategy: tt.strategy}
			if tt.target != "" {
				opts.Target = mesh.MustParseVersion(tt.target)
			}
			r, err := compat.Compute(mesh.MustNormalized(tt.mesh()), opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range r.Findings {
				if f.Code != tt.code {
					continue
				}
				got = append(got, f.Object.String())
				if f.Severity != tt.sev {
					t.Errorf("%s on %s is %s, want %s", f.Code, f.Object, f.Severity, tt.sev)
				}
				if f.Details["advisory"] == "" {
					t.Errorf("%s on %s names no advisory", f.Code, f.Object)
				}
			}
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
				t.Errorf("%s names %v, want %v", tt.code, got, tt.want)
			}
		})
	}
}
