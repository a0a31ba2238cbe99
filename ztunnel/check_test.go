package ztunnel_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// secondZtunnel adds a ztunnel DaemonSet in namespace ns (as a blue-green swap does) that istiod
// does not trust yet.
func secondZtunnel(s *mesh.Snapshot, ns string) {
	z := s.Ztunnels[0]
	z.Namespace = ns
	s.Ztunnels = append(s.Ztunnels, z)
	s.Normalize()
}

func notTrusted(fs []plan.Finding) []plan.Finding {
	var out []plan.Finding
	for _, f := range fs {
		if f.Code == plan.CodeZtunnelNotTrusted {
			out = append(out, f)
		}
	}
	return out
}

func TestTrustRemedyKeepsEveryAccountTheRevisionTrusts(t *testing.T) {
	tests := []struct {
		name    string
		version string
		mutate  func(*mesh.Snapshot)
		// objects of the ZTUNNEL_NOT_TRUSTED findings, and the trust list each one's remedy sets
		objects   []string
		trustList string
		// key is the Helm value the remedy's --set-json sets; "" when the remedy is not a helm upgrade
		key     string
		command string // a prefix the remedy must contain
	}{
		{name: "a second ztunnel is added to the list the revision has, under env", version: "1.30.3",
			mutate:  func(s *mesh.Snapshot) { secondZtunnel(s, "ztunnel-green") },
			objects: []string{"DaemonSet ztunnel-green/ztunnel"}, trustList: "istio-system/ztunnel,ztunnel-green/ztunnel",
			key: "env.CA_TRUSTED_NODE_ACCOUNTS", command: "helm upgrade istiod-1-30-3 istio/istiod -n istio-system --version 1.30.3 --reuse-values --set-json"},
		{name: "two untrusted ztunnels share one list naming both", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				secondZtunnel(s, "ztunnel-green")
				secondZtunnel(s, "ztunnel-blue")
			},
			objects:   []string{"DaemonSet ztunnel-blue/ztunnel", "DaemonSet ztunnel-green/ztunnel"},
			trustList: "istio-system/ztunnel,ztunnel-blue/ztunnel,ztunnel-green/ztunnel", key: "env.CA_TRUSTED_NODE_ACCOUNTS"},
		{name: "a renamed ztunnel keeps a stale entry the revision still trusts", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				s.Ztunnels[0].Name, s.Ztunnels[0].ServiceAccount = "ztunnel-blue", "ztunnel-blue"
			},
			objects: []string{"DaemonSet istio-system/ztunnel-blue"}, trustList: "istio-system/ztunnel,istio-system/ztunnel-blue",
			key: "env.CA_TRUSTED_NODE_ACCOUNTS"},
		{name: "istiod before 1.24 reads the list under pilot.env", version: "1.23.6",
			mutate:  func(s *mesh.Snapshot) { secondZtunnel(s, "ztunnel-green") },
			objects: []string{"DaemonSet ztunnel-green/ztunnel"}, trustList: "istio-system/ztunnel,ztunnel-green/ztunnel",
			key: "pilot.env.CA_TRUSTED_NODE_ACCOUNTS", command: "--version 1.23.6 --reuse-values"},
		{name: "a release that sets pilot.env keeps setting it there, since pilot wins over the top level", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				secondZtunnel(s, "ztunnel-green")
				for i := range s.HelmReleases {
					if s.HelmReleases[i].Chart == "istiod" {
						s.HelmReleases[i].Values["pilot"] = map[string]any{"env": map[string]any{"CA_TRUSTED_NODE_ACCOUNTS": "istio-system/ztunnel"}}
					}
				}
			},
			objects: []string{"DaemonSet ztunnel-green/ztunnel"}, trustList: "istio-system/ztunnel,ztunnel-green/ztunnel",
			key: "pilot.env.CA_TRUSTED_NODE_ACCOUNTS"},
		{name: "a revision without a Helm release gets the whole list with kubectl set env", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				secondZtunnel(s, "ztunnel-green")
				s.Revisions[0].HelmRelease = ""
			},
			objects: []string{"DaemonSet ztunnel-green/ztunnel"}, trustList: "istio-system/ztunnel,ztunnel-green/ztunnel",
			command: "kubectl -n istio-system set env deployment/istiod-1-30-3 CA_TRUSTED_NODE_ACCOUNTS=istio-system/ztunnel,ztunnel-green/ztunnel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy(tc.version, 2)
			tc.mutate(s)
			fs := notTrusted(gate(s))
			var objects []string
			for _, f := range fs {
				objects = append(objects, f.Object.String())
				if got := f.Details["trustList"]; got != tc.trustList {
					t.Errorf("%s: trust list %q, want %q", f.Object, got, tc.trustList)
				}
				if f.Details["revision"] != s.Revisions[0].Name || f.Details["account"] != f.Object.Namespace+"/"+f.Object.Name {
					t.Errorf("%s: details %v name the wrong revision or account", f.Object, f.Details)
				}
				if tc.command != "" && !strings.Contains(f.Remedy, tc.command) {
					t.Errorf("%s: remedy %q lacks %q", f.Object, f.Remedy, tc.command)
				}
				if strings.Contains(f.Remedy, "--set trustedZtunnel") {
					t.Errorf("%s: remedy %q replaces the single trusted account", f.Object, f.Remedy)
				}
				if tc.key != "" {
					if got := helmSetJSON(t, f.Remedy); !cmp.Equal(got, nested(tc.key, tc.trustList)) {
						t.Errorf("%s: helm reads the remedy's --set-json as %v, want %s=%s", f.Object, got, tc.key, tc.trustList)
					}
				}
			}
			if d := cmp.Diff(tc.objects, objects); d != "" {
				t.Errorf("untrusted ztunnels (-want +got):\n%s", d)
			}
		})
	}
}

// helmSetJSON parses the remedy's --set-json argument with Helm's own parser, as a shell passes it.
func helmSetJSON(t *testing.T, remedy string) map[string]any {
	t.Helper()
	_, rest, ok := strings.Cut(remedy, "--set-json '")
	arg, _, closed := strings.Cut(rest, "'")
	if !ok || !closed {
		t.Fatalf("remedy %q has no quoted --set-json argument", remedy)
	}
	got := map[string]any{}
	if err := strvals.ParseJSON(arg, got); err != nil {
		t.Fatalf("helm cannot parse --set-json %s: %v", arg, err)
	}
	return got
}

func nested(dotted, value string) map[string]any {
	parts := strings.Split(dotted, ".")
	var v any = value
	for i := len(parts) - 1; i >= 0; i-- {
		v = map[string]any{parts[i]: v}
	}
	return v.(map[string]any)
}

// gate runs the compatibility gate of the mesh as it runs (the rules these tests pin live in package compat).
func gate(s *mesh.Snapshot) []plan.Finding {
	r, _ := compat.Compute(s, compat.Options{})
	return r.Findings
}
