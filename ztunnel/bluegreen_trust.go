package ztunnel

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// istiodReleases are the istiod releases as the plan leaves them so far (a revision installed
// earlier in the plan included).
func (x *bg) istiodReleases() []mesh.HelmRelease {
	return x.b.Releases(x.s, "istiod")
}

// trustOf returns the ztunnel accounts an istiod release trusts: its values' CA_TRUSTED_NODE_ACCOUNTS
// when set (the chart renders a user value instead of its own, istio/istio@1.30.3:
// manifests/charts/istio-control/istio-discovery/templates/deployment.yaml), else what the running
// revision trusts, else the chart's default <trustedZtunnelNamespace or release namespace>/<trustedZtunnelName or ztunnel>.
func (x *bg) trustOf(h mesh.HelmRelease) []string {
	env := h.Values
	for _, k := range strings.Split(compat.TrustEnvKey(h, mesh.Version{}), ".") {
		env, _ = env[k].(map[string]any)
	}
	if t, ok := env["CA_TRUSTED_NODE_ACCOUNTS"].(string); ok {
		return splitTrust(t)
	}
	for _, r := range x.s.Revisions {
		if r.HelmRelease == h.Name && r.Namespace == h.Namespace && !r.TrustedAccountsUnknown {
			return append([]string(nil), r.TrustedZtunnelAccounts...)
		}
	}
	ns, _ := h.Values["trustedZtunnelNamespace"].(string)
	name, _ := h.Values["trustedZtunnelName"].(string)
	return []string{steps.OrDefault(ns, h.Namespace) + "/" + steps.OrDefault(name, "ztunnel")}
}

// splitTrust splits a trust list as istiod does: on commas, entries without "/" dropped, nothing
// trimmed (istio/istio@1.30.3: pilot/pkg/features/security.go).
func splitTrust(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if strings.Contains(a, "/") {
			out = append(out, a)
		}
	}
	return out
}

// trust has every istiod trust both ztunnels (both=true, before green starts) or, at the end, green
// instead of blue: one comma list in env.CA_TRUSTED_NODE_ACCOUNTS, since trustedZtunnelName holds one
// account only.
func (x *bg) trust(both bool) {
	for _, h := range x.istiodReleases() {
		cur := x.trustOf(h)
		var want []string
		for _, a := range cur {
			if both || a != x.blue.Account() {
				want = append(want, a)
			}
		}
		if both && !steps.Contains(want, x.blue.Account()) {
			want = append(want, x.blue.Account())
		}
		if !steps.Contains(want, x.greenAccount) {
			want = append(want, x.greenAccount)
		}
		sort.Strings(want)
		if equalSets(cur, want) {
			continue
		}
		rev := revisionOf(x.s, h)
		id, desc, reason := x.base+"trust/"+h.Name, fmt.Sprintf("make istiod %s trust both ztunnels: %s", h.Name, strings.Join(want, ",")),
			"green's certificate requests for its pods are refused unless istiod trusts its service account; blue must stay trusted while it runs"
		if !both {
			id, desc, reason = x.base+"trust-green-only/"+h.Name, fmt.Sprintf("make istiod %s trust green instead of blue: %s", h.Name, strings.Join(want, ",")),
				"blue is gone; istiod trusts no more accounts than run"
		}
		v := x.chartVersion(h, mesh.Version{})
		checks := []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.TrustedAccountsArgs{Accounts: want, Revision: rev, Only: true},
			fmt.Sprintf("istiod %s trusts exactly %s", rev, strings.Join(want, ",")))}
		if r, ok := x.s.Revision(rev); ok {
			checks = append(checks, steps.DeploymentReady(r.Namespace, r.Deployment))
		}
		set := compat.EnvValues(compat.TrustEnvKey(h, v), "CA_TRUSTED_NODE_ACCOUNTS", strings.Join(want, ","))
		x.b.Add(x.b.Upgrade(id, desc, reason, h, v, set, plan.RiskMedium, checks...))
	}
}

func revisionOf(s *mesh.Snapshot, h mesh.HelmRelease) string {
	for _, r := range s.Revisions {
		if r.HelmRelease == h.Name && r.Namespace == h.Namespace {
			return r.Name
		}
	}
	if rev, _ := h.Values["revision"].(string); rev != "" {
		return rev
	}
	return "default"
}

func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !steps.Contains(b, x) {
			return false
		}
	}
	return true
}
