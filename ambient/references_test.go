package ambient_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestEveryDanglingReferenceIsAFindingNamingBothEnds bends the healthy mesh so that one reference
// names nothing (or the wrong thing), and wants one finding that names the referring object, the
// object it names, and what is broken now.
func TestEveryDanglingReferenceIsAFindingNamingBothEnds(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(s *mesh.Snapshot)
		want     plan.Code
		severity plan.Severity
		object   string   // the referring end (or, for a NodePool, the missing end)
		related  []string // the other end(s)
		says     []string // the message names these
	}{
		{name: "pods labelled with a revision that is neither a revision nor a tag get no sidecar",
			mutate: func(s *mesh.Snapshot) { workload(s, "billing").PodRevisionLabel = "canary" },
			want:   plan.CodeWorkloadRevisionMissing, severity: plan.Waivable, object: "Deployment legacy/billing",
			says: []string{"istio.io/rev=canary", "1-30-3", "default, prod", "without a sidecar"}},
		{name: "a policy labelled with a tag is read by no istiod, since config follows only revision names",
			mutate: func(s *mesh.Snapshot) {
				s.Policies = append(s.Policies, mesh.Policy{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "deny-all", RevisionLabel: "prod"})
			},
			want: plan.CodePolicyRevisionMissing, severity: plan.Waivable, object: "AuthorizationPolicy shop/deny-all",
			says: []string{"istio.io/rev=prod", "a tag (of revision 1-30-3)", "no istiod enforces it"}},
		{name: "a policy labelled with a revision that is gone is enforced by nobody",
			mutate: func(s *mesh.Snapshot) {
				s.Policies = append(s.Policies, mesh.Policy{Kind: "PeerAuthentication", Namespace: "shop", Name: "strict", RevisionLabel: "1-29-6"})
			},
			want: plan.CodePolicyRevisionMissing, severity: plan.Waivable, object: "PeerAuthentication shop/strict",
			says: []string{"istio.io/rev=1-29-6", "no revision"}},
		{name: "a ztunnel pinned to a revision with no istiod is blocking and names the Service it asks",
			mutate: func(s *mesh.Snapshot) { s.Ztunnels[0].Revision = "1-29-6" },
			want:   plan.CodeZtunnelRevisionMissing, severity: plan.Blocking, object: "DaemonSet istio-system/ztunnel",
			related: []string{"Service istio-system/istiod-1-29-6"}, says: []string{"revision 1-29-6", "revisions: 1-30-3"}},
		{name: "a revision's injector left without its istiod refuses every pod it selects",
			mutate: func(s *mesh.Snapshot) {
				s.Injectors = append(s.Injectors, mesh.Injector{Name: "istio-sidecar-injector-1-29-6", Revision: "1-29-6",
					TargetService: "istio-system/istiod-1-29-6", Selects: []string{"legacy"}})
			},
			want: plan.CodeInjectorRevisionMissing, severity: plan.Blocking, object: "MutatingWebhookConfiguration istio-sidecar-injector-1-29-6",
			says: []string{"revision 1-29-6", "istio-system/istiod-1-29-6", "refused", "legacy"}},
		{name: "a namespace naming a waypoint that does not exist bypasses it",
			mutate: func(s *mesh.Snapshot) { namespace(s, "shop").Labels[mesh.LabelUseWaypoint] = "shop-wp" },
			want:   plan.CodeWaypointReferenceDangling, severity: plan.Waivable, object: "Namespace shop",
			related: []string{"Gateway shop/shop-wp"}, says: []string{"istio.io/use-waypoint=shop-wp", "does not exist", "bypasses"}},
		{name: "a service naming a waypoint in another namespace that does not exist says both labels",
			mutate: func(s *mesh.Snapshot) {
				s.Services = append(s.Services, mesh.Service{Namespace: "shop", Name: "cart",
					Labels: map[string]string{mesh.LabelUseWaypoint: "shared", mesh.LabelUseWaypointNamespace: "infra"}})
			},
			want: plan.CodeWaypointReferenceDangling, severity: plan.Waivable, object: "Service shop/cart",
			related: []string{"Gateway infra/shared"}, says: []string{"istio.io/use-waypoint-namespace=infra", "infra/shared"}},
		{name: "a workload naming a waypoint that takes only service traffic bypasses it",
			mutate: func(s *mesh.Snapshot) { workload(s, "cart").Labels[mesh.LabelUseWaypoint] = "shop-waypoint" },
			want:   plan.CodeWaypointReferenceDangling, severity: plan.Waivable, object: "Deployment shop/cart",
			related: []string{"Gateway shop/shop-waypoint"}, says: []string{"only service traffic", "not a workload's"}},
		{name: "a service naming a waypoint for workloads only bypasses it",
			mutate: func(s *mesh.Snapshot) {
				for i := range s.Gateways {
					if s.Gateways[i].Name == "shop-waypoint" {
						s.Gateways[i].WaypointFor = "workload"
					}
				}
				namespace(s, "shop").Labels[mesh.LabelUseWaypoint] = "none"
				s.Services = append(s.Services, mesh.Service{Namespace: "shop", Name: "db", Labels: map[string]string{mesh.LabelUseWaypoint: "shop-waypoint"}})
			},
			want: plan.CodeWaypointReferenceDangling, severity: plan.Waivable, object: "Service shop/db",
			related: []string{"Gateway shop/shop-waypoint"}, says: []string{"only workload traffic", "not a Service's"}},
		{name: "a namespace naming a Gateway that is no waypoint sends its traffic where HBONE is not terminated",
			mutate: func(s *mesh.Snapshot) {
				s.Gateways = append(s.Gateways, mesh.Gateway{Kind: mesh.GatewayKindAPI, Namespace: "shop", Name: "public", Class: "istio"})
				namespace(s, "shop").Labels[mesh.LabelUseWaypoint] = "public"
			},
			want: plan.CodeWaypointReferenceDangling, severity: plan.Waivable, object: "Namespace shop",
			related: []string{"Gateway shop/public"}, says: []string{"not a waypoint (class istio)", "connections fail"}},
		{name: "a policy targeting a waypoint that does not exist applies to nothing",
			mutate: func(s *mesh.Snapshot) {
				s.Policies = append(s.Policies, mesh.Policy{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "l7", HasTargetRefs: true,
					Spec: map[string]any{"targetRefs": []any{map[string]any{"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": "shop-wp"}}}})
			},
			want: plan.CodePolicyTargetMissing, severity: plan.Waivable, object: "AuthorizationPolicy shop/l7",
			related: []string{"Gateway shop/shop-wp"}, says: []string{"Gateway shop/shop-wp", "applies to nothing"}},
		{name: "a policy whose legacy targetRef names a missing Service of two does not apply there",
			mutate: func(s *mesh.Snapshot) {
				s.Services = append(s.Services, mesh.Service{Namespace: "shop", Name: "cart"})
				s.Policies = append(s.Policies, mesh.Policy{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "svc", HasTargetRefs: true,
					Spec: map[string]any{
						"targetRef":  map[string]any{"kind": "Service", "name": "cart"},
						"targetRefs": []any{map[string]any{"kind": "Service", "name": "carts"}},
					}})
			},
			want: plan.CodePolicyTargetMissing, severity: plan.Waivable, object: "AuthorizationPolicy shop/svc",
			related: []string{"Service shop/carts"}, says: []string{"does not apply there"}},
		{name: "a trust entry with a space does not trust the ztunnel it was meant for",
			mutate: func(s *mesh.Snapshot) {
				s.Revisions[0].TrustedZtunnelAccounts = []string{"istio-system/ztunnel-old", " istio-system/ztunnel"}
			},
			want: plan.CodeTrustEntryHasSpaces, severity: plan.Blocking, object: "Deployment istio-system/istiod-1-30-3",
			related: []string{"DaemonSet istio-system/ztunnel"}, says: []string{`" istio-system/ztunnel"`, "refuses its certificate requests"}},
		{name: "nodes labelled with a NodePool that does not exist are named under it",
			mutate: func(s *mesh.Snapshot) {
				s.NodePools = []mesh.NodePool{{Name: "general"}, {Name: "batch"}}
				for _, n := range s.Nodes {
					if n.Pool == "batch" {
						n.Labels["karpenter.sh/nodepool"] = "batch-old"
					}
				}
			},
			want: plan.CodeNodePoolMissing, severity: plan.Info, object: "NodePool batch-old",
			related: []string{"Node batch-1", "Node batch-3"}, says: []string{"2 node(s)", "NodePools: batch, general"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 4)
			tc.mutate(s)
			s.Normalize()
			got, err := ambient.CompatibilityReport(s, ambient.CompatibilityOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var match []plan.Finding
			for _, f := range got.Findings {
				if f.Code == tc.want {
					match = append(match, f)
				}
			}
			if len(match) != 1 {
				t.Fatalf("want one %s finding, got %d: %v", tc.want, len(match), plan.Codes(got.Findings))
			}
			f := match[0]
			if f.Severity != tc.severity || f.Object.String() != tc.object {
				t.Errorf("got %s on %q, want %s on %q", f.Severity, f.Object, tc.severity, tc.object)
			}
			var related []string
			for _, r := range f.Related {
				related = append(related, r.String())
			}
			if strings.Join(related, "|") != strings.Join(tc.related, "|") {
				t.Errorf("related = %q, want %q", related, tc.related)
			}
			for _, w := range tc.says {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message should say %q: %s", w, f.Message)
				}
			}
			if f.Severity != plan.Info && f.Remedy == "" {
				t.Errorf("a finding that is not Info needs a remedy: %+v", f)
			}
		})
	}
}

// TestReferencesThatResolveAreSilent guards the other side: the healthy mesh, and the same kinds of
// references pointed at objects that exist, give none of the dangling-reference findings.
func TestReferencesThatResolveAreSilent(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 4)
	workload(s, "billing").PodRevisionLabel = "prod"
	s.Policies = append(s.Policies,
		mesh.Policy{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "rev", RevisionLabel: "1-30-3"},
		mesh.Policy{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "l7", HasTargetRefs: true,
			Spec: map[string]any{"targetRefs": []any{map[string]any{"kind": "Gateway", "name": "shop-waypoint"}}}})
	s.Services = append(s.Services,
		mesh.Service{Namespace: "shop", Name: "cart", Labels: map[string]string{mesh.LabelUseWaypoint: "shop-waypoint"}},
		mesh.Service{Namespace: "shop", Name: "db", Labels: map[string]string{mesh.LabelUseWaypoint: "none"}})
	s.Injectors = append(s.Injectors, mesh.Injector{Name: "istio-sidecar-injector-1-30-3", Revision: "1-30-3"})
	s.NodePools = []mesh.NodePool{{Name: "general"}, {Name: "batch"}}
	s.Revisions[0].TrustedZtunnelAccounts = []string{"istio-system/ztunnel", "istio-system/ztunnel-green"}
	s.Normalize()
	got, err := ambient.CompatibilityReport(s, ambient.CompatibilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got.Findings {
		switch f.Code {
		case plan.CodeWorkloadRevisionMissing, plan.CodePolicyRevisionMissing, plan.CodeZtunnelRevisionMissing,
			plan.CodeInjectorRevisionMissing, plan.CodeWaypointReferenceDangling, plan.CodePolicyTargetMissing,
			plan.CodeTrustEntryHasSpaces, plan.CodeNodePoolMissing:
			t.Errorf("a reference that resolves gave %s", f)
		}
	}
}

func workload(s *mesh.Snapshot, name string) *mesh.Workload {
	for i := range s.Workloads {
		if s.Workloads[i].Name == name {
			return &s.Workloads[i]
		}
	}
	panic("no workload " + name)
}

func namespace(s *mesh.Snapshot, name string) *mesh.Namespace {
	for i := range s.Namespaces {
		if s.Namespaces[i].Name == name {
			return &s.Namespaces[i]
		}
	}
	panic("no namespace " + name)
}
