package ztunnel_test

import (
	"slices"
	"testing"

	"github.com/ambientkit/ambientkit/ztunnel"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// The RBAC of a blue-green run (issue 18): every verb but create and list on roles, bindings and
// Secrets is granted by name, so the account cannot rewrite its own ClusterRole, nor any role or
// Helm record the plan does not touch.
func TestBlueGreenRBACGrantsRolesAndRecordsByName(t *testing.T) {
	p := blueGreen(t, demoSnapshot(t), ztunnel.BlueGreen{BatchSize: 3, Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}})
	rules := rbac.RequiredPermissions(p, rbac.Options{}).Rules()
	guarded := []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings", "secrets"}
	for _, r := range rules {
		for _, res := range r.Resources {
			if !slices.Contains(guarded, res) || len(r.ResourceNames) > 0 {
				continue
			}
			for _, v := range r.Verbs {
				if v != "create" && v != "list" {
					t.Errorf("rule %s grants %s on every %s", r, v, res)
				}
			}
		}
	}
	rbacGroup := "rbac.authorization.k8s.io"
	for _, p := range []rbac.Permission{
		{Verb: "patch", Group: rbacGroup, Resource: "clusterroles", Name: "ambientkit-plan-0123456789ab"}, // its own ClusterRole (cli names it so)
		{Verb: "escalate", Group: rbacGroup, Resource: "clusterroles", Name: "ambientkit-plan-0123456789ab"},
		{Verb: "patch", Group: rbacGroup, Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "bind", Group: rbacGroup, Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "escalate", Group: rbacGroup, Resource: "clusterroles"},
		{Verb: "patch", Group: rbacGroup, Resource: "clusterrolebindings", Name: "cluster-admin"},
		{Verb: "delete", Group: rbacGroup, Resource: "clusterrolebindings", Name: "istio-cni"},
		{Verb: "get", Resource: "secrets", Namespace: "istio-system", Name: "cacerts"},
		{Verb: "delete", Resource: "secrets", Namespace: "istio-system", Name: "sh.helm.release.v1.istio-cni.v1"},
	} {
		if rbac.Allowed(rules, p) {
			t.Errorf("the rules allow %s", p)
		}
	}
	// What the plan does is still granted: istiod's trust upgrades patch its own roles, the blue
	// uninstall purges blue's records.
	for _, p := range []rbac.Permission{
		{Verb: "patch", Group: rbacGroup, Resource: "clusterroles", Name: "istiod-clusterrole-1-30-3-istio-system"},
		{Verb: "escalate", Group: rbacGroup, Resource: "clusterroles", Name: "istiod-clusterrole-1-30-3-istio-system"},
		{Verb: "bind", Group: rbacGroup, Resource: "clusterroles", Name: "istiod-clusterrole-1-30-3-istio-system"},
		{Verb: "patch", Group: rbacGroup, Resource: "roles", Namespace: "istio-system", Name: "istiod-1-30-3"},
		{Verb: "delete", Resource: "secrets", Namespace: "istio-system", Name: "sh.helm.release.v1.ztunnel.v2"},
		{Verb: "update", Resource: "secrets", Namespace: "ztunnel-green", Name: "sh.helm.release.v1.ztunnel-green.v1"},
		{Verb: "update", Resource: "secrets", Namespace: "istio-system", Name: "sh.helm.release.v1.istiod-1-30-3.v4"},
	} {
		if !rbac.Allowed(rules, p) {
			t.Errorf("the rules do not allow %s, which the plan does", p)
		}
	}
}
