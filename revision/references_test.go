package revision_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/revision"
)

func TestReferences(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *mesh.Snapshot)
		want   []string // substrings of the references, in order; nil means none
	}{
		{"a revision with tags, the default role, pinned ztunnel, gateways, sidecars and a namespace on its waypoint has them all as references", nil,
			[]string{"DaemonSet istio-system/ztunnel: ztunnel connects to it", "Deployment istio-ingress/istio-ingress: gateway owned by it",
				"Deployment legacy/billing: 2 pod(s) run sidecars", "Gateway shop/shop-waypoint: waypoint owned by it",
				"MutatingWebhookConfiguration istio-revision-tag-default", "MutatingWebhookConfiguration istio-revision-tag-prod",
				"Namespace shop: uses waypoint shop/shop-waypoint", "ValidatingWebhookConfiguration istiod-default-validator"}},
		{"istiod's own pods labelled with the revision are not a reference", func(s *mesh.Snapshot) {
			s.Tags, s.DefaultRevision, s.Gateways, s.Ztunnels[0].Revision = nil, "", nil, ""
			s.Revisions = append(s.Revisions, mesh.Revision{Name: "other", Namespace: "istio-system", Deployment: "istiod-other"})
			s.Workloads = []mesh.Workload{{Namespace: "istio-system", Kind: "Deployment", Name: "istiod-1-30-3", PodRevisionLabel: "1-30-3", Pods: 2}}
		}, nil},
		{"a namespace and a policy labelled with the revision are references", func(s *mesh.Snapshot) {
			s.Tags, s.DefaultRevision, s.Gateways, s.Workloads, s.Ztunnels = nil, "", nil, nil, nil
			s.Namespaces = []mesh.Namespace{{Name: "pinned", Labels: map[string]string{mesh.LabelRev: "1-30-3"}}}
			s.Policies = []mesh.Policy{{Kind: "AuthorizationPolicy", Namespace: "pinned", Name: "p", RevisionLabel: "1-30-3"}}
		}, []string{"AuthorizationPolicy pinned/p: labelled", "Namespace pinned: labelled istio.io/rev=1-30-3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 2)
			if tc.mutate != nil {
				tc.mutate(s)
				s.Normalize()
			}
			got := revision.References(s, "1-30-3")
			if len(got) != len(tc.want) {
				t.Fatalf("got %d references %v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].String(), w) {
					t.Errorf("reference %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
