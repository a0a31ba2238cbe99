package revision_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/revision"
)

// withCanary adds a ready revision 1-31-4 beside 1-30-3.
func withCanary(s *mesh.Snapshot) {
	r := s.Revisions[0]
	r.Name, r.Deployment, r.Version, r.HelmRelease = "1-31-4", "istiod-1-31-4", mesh.MustParseVersion("1.31.4"), "istiod-1-31-4"
	s.Revisions = append(s.Revisions, r)
}

// splitProd points the prod tag's webhook configuration at rev and leaves its Service at 1-30-3, as
// the docs' webhook-only command does.
func splitProd(s *mesh.Snapshot, rev string) {
	for i := range s.Tags {
		if s.Tags[i].Name == "prod" {
			s.Tags[i].Revision, s.Tags[i].WebhookRevision, s.Tags[i].ServiceRevision = rev, rev, "1-30-3"
		}
	}
}

// finding is the part of a finding the tests assert: never its prose.
type finding struct {
	Code     plan.Code
	Severity plan.Severity
	Object   string
	Related  []string
	Details  map[string]string
}

func findingsOf(fs []plan.Finding, codes ...plan.Code) []finding {
	var out []finding
	for _, f := range fs {
		for _, c := range codes {
			if f.Code != c {
				continue
			}
			g := finding{Code: f.Code, Severity: f.Severity, Object: f.Object.String(), Details: f.Details}
			for _, r := range f.Related {
				g.Related = append(g.Related, r.String())
			}
			out = append(out, g)
		}
	}
	return out
}

func TestATagWhoseWebhookAndServiceDisagreeIsBlocking(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*mesh.Snapshot)
		want   []finding
	}{
		{name: "a webhook moved without its Service is blocking and names both objects",
			mutate: func(s *mesh.Snapshot) { withCanary(s); splitProd(s, "1-31-4") },
			want: []finding{{Code: plan.CodeTagWebhookAndServiceDisagree, Severity: plan.Blocking, Object: "MutatingWebhookConfiguration istio-revision-tag-prod",
				Related: []string{"Service istio-system/istiod-revision-tag-prod"},
				Details: map[string]string{"tag": "prod", "webhookRevision": "1-31-4", "serviceRevision": "1-30-3"}}}},
		{name: "a tag whose objects agree is not split", mutate: withCanary},
		{name: "a Service naming a revision without istiod is missing on the Service, not hidden by the webhook",
			mutate: func(s *mesh.Snapshot) {
				splitProd(s, "1-30-3")
				for i := range s.Tags {
					if s.Tags[i].Name == "prod" {
						s.Tags[i].ServiceRevision = "1-29-0"
					}
				}
			},
			want: []finding{
				{Code: plan.CodeTagRevisionMissing, Severity: plan.Blocking, Object: "Service istio-system/istiod-revision-tag-prod",
					Related: prodFollowers, Details: map[string]string{"tag": "prod", "revision": "1-29-0"}},
				{Code: plan.CodeTagWebhookAndServiceDisagree, Severity: plan.Blocking, Object: "MutatingWebhookConfiguration istio-revision-tag-prod",
					Related: []string{"Service istio-system/istiod-revision-tag-prod"},
					Details: map[string]string{"tag": "prod", "webhookRevision": "1-30-3", "serviceRevision": "1-29-0"}},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 2)
			tc.mutate(s)
			s.Normalize()
			got := findingsOf(gate(s), plan.CodeTagWebhookAndServiceDisagree, plan.CodeTagRevisionMissing)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("findings (-want +got):\n%s", d)
			}
		})
	}
}

func TestASplitTagRefersToTheRevisionEachObjectNames(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 2)
	withCanary(s)
	splitProd(s, "1-31-4")
	s.Normalize()
	var old, canary []string
	for _, r := range revision.References(s, "1-30-3") {
		if r.Object.Kind == "Service" || r.Object.Name == "istio-revision-tag-prod" {
			old = append(old, r.Object.String())
		}
	}
	for _, r := range revision.References(s, "1-31-4") {
		canary = append(canary, r.Object.String())
	}
	if d := cmp.Diff([]string{"Service istio-system/istiod-revision-tag-prod"}, old); d != "" {
		t.Errorf("references of 1-30-3 through tag prod (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"MutatingWebhookConfiguration istio-revision-tag-prod"}, canary); d != "" {
		t.Errorf("references of 1-31-4 (-want +got):\n%s", d)
	}
}

// prodFollowers is what follows tag prod in the healthy test mesh.
var prodFollowers = []string{"Namespace legacy", "Deployment istio-ingress/istio-ingress", "Deployment legacy/billing"}

func TestATagWithoutIstiodNamesEverythingThatFollowsIt(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*mesh.Snapshot)
		want   []finding
	}{
		{name: "tag prod names its namespace, its sidecar workload and the gateway it injects",
			mutate: func(s *mesh.Snapshot) { s.Tags[1].Revision = "1-29-0" },
			want: []finding{{Code: plan.CodeTagRevisionMissing, Severity: plan.Blocking, Object: "MutatingWebhookConfiguration istio-revision-tag-prod",
				Related: prodFollowers, Details: map[string]string{"tag": "prod", "revision": "1-29-0"}}}},
		{name: "tag default names the unlabelled waypoint it owns and the ambient namespace behind it",
			mutate: func(s *mesh.Snapshot) { s.Tags[0].Revision = "1-29-0" },
			want: []finding{{Code: plan.CodeTagRevisionMissing, Severity: plan.Blocking, Object: "MutatingWebhookConfiguration istio-revision-tag-default",
				Related: []string{"Namespace shop", "Gateway shop/shop-waypoint"}, Details: map[string]string{"tag": "default", "revision": "1-29-0"}}}},
		{name: "a tag nothing follows names nothing",
			mutate: func(s *mesh.Snapshot) {
				s.Tags = append(s.Tags, mesh.Tag{Name: "spare", Revision: "1-29-0", Webhook: "istio-revision-tag-spare"})
			},
			want: []finding{{Code: plan.CodeTagRevisionMissing, Severity: plan.Blocking, Object: "MutatingWebhookConfiguration istio-revision-tag-spare",
				Details: map[string]string{"tag": "spare", "revision": "1-29-0"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 2)
			tc.mutate(s)
			s.Normalize()
			got := findingsOf(gate(s), plan.CodeTagRevisionMissing)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("findings (-want +got):\n%s", d)
			}
		})
	}
}

func TestAGatewayTwoRevisionsClaimIsBlocking(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*mesh.Snapshot)
		want   []finding
	}{
		{name: "a revision named default beside a default tag both claim the unlabelled waypoint",
			mutate: func(s *mesh.Snapshot) {
				withCanary(s)
				r := s.Revisions[0]
				r.Name, r.Deployment = "default", "istiod"
				s.Revisions = append(s.Revisions, r)
			},
			want: []finding{{Code: plan.CodeGatewayClaimedBySeveralRevisions, Severity: plan.Blocking, Object: "Gateway shop/shop-waypoint",
				Details: map[string]string{"owners": "1-30-3,default"}}}},
		{name: "a default tag that exists only as a Service and the default revision both claim it",
			mutate: func(s *mesh.Snapshot) {
				withCanary(s)
				s.DefaultRevision = "1-31-4"
				s.Tags[0].Webhook, s.Tags[0].WebhookRevision = "", ""
			},
			want: []finding{{Code: plan.CodeGatewayClaimedBySeveralRevisions, Severity: plan.Blocking, Object: "Gateway shop/shop-waypoint",
				Details: map[string]string{"owners": "1-30-3,1-31-4"}}}},
		{name: "a default tag with its webhook configuration keeps the default revision out",
			mutate: func(s *mesh.Snapshot) { withCanary(s); s.DefaultRevision = "1-31-4" }},
		{name: "a chart gateway with pods of two revisions is a rollout, not a claim",
			mutate: func(s *mesh.Snapshot) {
				withCanary(s)
				s.Workloads = append(s.Workloads, mesh.Workload{Namespace: "istio-ingress", Kind: "Deployment", Name: "istio-ingress", Pods: 2,
					SidecarRevisions: map[string]int{"1-30-3": 1, "1-31-4": 1}})
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 2)
			tc.mutate(s)
			s.Normalize()
			s.ResolveGatewayOwners()
			got := findingsOf(gate(s), plan.CodeGatewayClaimedBySeveralRevisions)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("findings (-want +got):\n%s", d)
			}
		})
	}
}

func TestWhatUsesTheRevisionsWaypointRefersToIt(t *testing.T) {
	wp := mesh.ObjectRef{Kind: "Gateway", Namespace: "shop", Name: "shop-waypoint"}
	tests := []struct {
		name   string
		mutate func(*mesh.Snapshot)
		want   []string // references to the revision by objects using its waypoint
	}{
		{name: "a namespace labelled with the waypoint refers to its owner", want: []string{"Namespace shop"}},
		{name: "a Service in another namespace that names the waypoint by its own label refers to its owner",
			mutate: func(s *mesh.Snapshot) {
				s.Services = []mesh.Service{{Namespace: "legacy", Name: "ledger", Labels: map[string]string{
					mesh.LabelUseWaypoint: wp.Name, mesh.LabelUseWaypointNamespace: wp.Namespace}}}
			},
			want: []string{"Namespace shop", "Service legacy/ledger"}},
		{name: "a Service that inherits the namespace's waypoint is covered by the namespace",
			mutate: func(s *mesh.Snapshot) { s.Services = []mesh.Service{{Namespace: "shop", Name: "cart"}} },
			want:   []string{"Namespace shop"}},
		{name: "a workload whose pods name a workload waypoint refers to its owner",
			mutate: func(s *mesh.Snapshot) {
				s.Gateways[1].WaypointFor = "all"
				for i := range s.Workloads {
					if s.Workloads[i].Name == "billing" {
						s.Workloads[i].Labels[mesh.LabelUseWaypoint] = wp.Name
						s.Workloads[i].Labels[mesh.LabelUseWaypointNamespace] = wp.Namespace
					}
				}
			},
			want: []string{"Deployment legacy/billing", "Namespace shop"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 2)
			if tc.mutate != nil {
				tc.mutate(s)
			}
			s.Normalize()
			var got []string
			for _, r := range revision.References(s, "1-30-3") {
				if strings.Contains(r.Detail, "uses waypoint shop/shop-waypoint") {
					got = append(got, r.Object.String())
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("references through the waypoint (-want +got):\n%s", d)
			}
		})
	}
}

// gate runs the compatibility gate of the mesh as it runs (the rules these tests pin live in package compat).
func gate(s *mesh.Snapshot) []plan.Finding {
	r, _ := compat.Compute(s, compat.Options{})
	return r.Findings
}
