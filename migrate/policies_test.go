package migrate_test

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/migrate"
)

func TestClassifyPolicies(t *testing.T) {
	tests := []struct {
		name   string
		policy mesh.Policy
		want   migrate.PolicyClass
	}{
		{"an L4 policy with a selector keeps working", mesh.Policy{Kind: "AuthorizationPolicy", HasSelector: true}, migrate.KeepsWorking},
		{"an L7 policy with a selector becomes deny-all", mesh.Policy{Kind: "AuthorizationPolicy", HasSelector: true, L7: []string{"methods"}}, migrate.DenyAllUnderZtunnel},
		{"a namespace-wide L7 policy becomes deny-all", mesh.Policy{Kind: "AuthorizationPolicy", L7: []string{"paths"}}, migrate.DenyAllUnderZtunnel},
		{"an L7 policy with targetRefs needs a waypoint", mesh.Policy{Kind: "AuthorizationPolicy", HasTargetRefs: true, L7: []string{"paths"}}, migrate.NeedsWaypoint},
		{"mTLS disabled blocks the migration", mesh.Policy{Kind: "PeerAuthentication", Mode: "DISABLE"}, migrate.BlocksMigration},
		{"mTLS disabled on one port blocks the migration", mesh.Policy{Kind: "PeerAuthentication", Mode: "STRICT", PortModes: []string{"8080=DISABLE"}}, migrate.BlocksMigration},
		{"strict mTLS is unaffected", mesh.Policy{Kind: "PeerAuthentication", Mode: "STRICT"}, migrate.Unaffected},
		{"a VirtualService is unaffected", mesh.Policy{Kind: "VirtualService"}, migrate.Unaffected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.policy.Namespace, tc.policy.Name = "shop", "p"
			got := migrate.ClassifyPolicies(&mesh.Snapshot{Policies: []mesh.Policy{tc.policy}})
			if len(got) != 1 || got[0].Class != tc.want || got[0].Reason == "" {
				t.Fatalf("got %+v, want class %s with a reason", got, tc.want)
			}
		})
	}
}

func TestClassifyPoliciesFiltersNamespacesButKeepsMeshWideOnes(t *testing.T) {
	s := &mesh.Snapshot{
		Revisions: []mesh.Revision{{Name: "r", Namespace: "istio-system"}},
		Policies: []mesh.Policy{
			{Kind: "PeerAuthentication", Namespace: "istio-system", Name: "mesh", Mode: "STRICT"},
			{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "a"},
			{Kind: "AuthorizationPolicy", Namespace: "other", Name: "b"},
		},
	}
	got := migrate.ClassifyPolicies(s, "shop")
	if len(got) != 2 || got[0].Policy.Namespace != "istio-system" || got[1].Policy.Namespace != "shop" {
		t.Fatalf("got %+v", got)
	}
}
