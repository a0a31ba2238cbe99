package tags_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/tags"
)

// canary returns the healthy test mesh with a second, ready revision 1-31-4.
func canary() *mesh.Snapshot {
	s := meshtest.Healthy("1.30.3", 4)
	r := s.Revisions[0]
	r.Name, r.Deployment, r.Version = "1-31-4", "istiod-1-31-4", mesh.MustParseVersion("1.31.4")
	s.Revisions = append(s.Revisions, r)
	s.Normalize()
	return s
}

func TestBlastRadiusCountsWhatATagReaches(t *testing.T) {
	s := canary()
	prod, ok := tags.BlastRadius(s, "prod")
	if !ok {
		t.Fatal("tag prod exists")
	}
	want := tags.Radius{Tag: "prod", Revision: "1-30-3", Namespaces: []string{"legacy"},
		Workloads:   []mesh.ObjectRef{{Kind: "Deployment", Namespace: "legacy", Name: "billing"}},
		SidecarPods: 2, Gateways: []mesh.ObjectRef{{Kind: "Deployment", Namespace: "istio-ingress", Name: "istio-ingress"}}}
	if d := cmp.Diff(want, prod); d != "" {
		t.Errorf("prod radius (-want +got):\n%s", d)
	}
	def, _ := tags.BlastRadius(s, "default")
	if len(def.Waypoints) != 1 || len(def.AmbientNamespaces) != 1 || def.AmbientNamespaces[0] != "shop" {
		t.Errorf("default owns the unlabelled waypoint and the ambient namespace behind it, got %+v", def)
	}
	if _, ok := tags.BlastRadius(s, "nope"); ok {
		t.Error("an unknown tag has no radius")
	}
}

func TestOrderPutsLowRiskFirstAndDefaultLast(t *testing.T) {
	s := canary()
	s.Tags = append(s.Tags, mesh.Tag{Name: "empty", Revision: "1-30-3"})
	s.Normalize()
	var got []string
	for _, r := range tags.Order(s, "1-30-3") {
		got = append(got, r.Radius.Tag)
		if r.Reason == "" {
			t.Errorf("tag %s has no reason", r.Radius.Tag)
		}
	}
	if d := cmp.Diff([]string{"empty", "prod", "default"}, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

func TestWhatAMoveCannotDoIsAFindingWithItsCode(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*mesh.Snapshot)
		tag     string
		rev     string
		want    plan.Code
		blocked bool
	}{
		{"an unknown tag is blocking", nil, "nope", "1-31-4", plan.CodeTagUnknown, true},
		{"a revision that does not exist is blocking", nil, "prod", "1-99-0", plan.CodeTagTargetRevisionNotReady, true},
		{"a revision that is not ready is blocking", func(s *mesh.Snapshot) { s.Revisions[1].ReadyReplicas = 0 }, "prod", "1-31-4", plan.CodeTagTargetRevisionNotReady, true},
		{"a tag named like a revision is blocking", func(s *mesh.Snapshot) {
			s.Tags = append(s.Tags, mesh.Tag{Name: "1-30-3", Revision: "1-30-3"})
		}, "1-30-3", "1-31-4", plan.CodeTagNamedLikeRevision, true},
		{"a move to where the tag points is an info finding and a plan with nothing to move", nil, "prod", "1-30-3", plan.CodeTagAlreadyPointsThere, false},
		{"a default move while another injector selects istio-injection=enabled is blocking", func(s *mesh.Snapshot) {
			s.Injectors = append(s.Injectors, mesh.Injector{Name: "istio-sidecar-injector", Revision: "default", Selects: []string{"istio-injection=enabled"}})
		}, "default", "1-31-4", plan.CodeTagInjectorOverlap, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := canary()
			if tc.mutate != nil {
				tc.mutate(s)
				s.Normalize()
			}
			p, err := tags.MoveTag(s, tc.tag, tc.rev, tags.MoveOptions{})
			if p == nil {
				t.Fatalf("no plan (err %v); a move the mesh forbids is a plan with findings", err)
			}
			if got := errors.Is(err, plan.ErrBlocked); got != tc.blocked {
				t.Fatalf("err = %v; blocked = %v, want %v", err, got, tc.blocked)
			}
			var codes []plan.Code
			for _, f := range p.Findings {
				if f.Code == tc.want && f.Details["tag"] == tc.tag {
					codes = append(codes, f.Code)
				}
			}
			if len(codes) != 1 {
				t.Fatalf("findings %v, want one %s naming tag %s", p.Findings, tc.want, tc.tag)
			}
			for _, st := range p.Steps {
				if st.MoveTag != nil {
					t.Errorf("step %s moves a tag; want no move", st.ID)
				}
			}
		})
	}
}

func TestMoveTagPlansMoveRestartGateAndRollback(t *testing.T) {
	p, err := tags.MoveTag(canary(), "prod", "1-31-4", tags.MoveOptions{BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range p.Steps {
		ids = append(ids, s.ID)
	}
	if d := cmp.Diff([]string{"prechecks", "tags/prod/move", "tags/prod/restart", "tags/prod/health"}, ids); d != "" {
		t.Fatalf("steps (-want +got):\n%s", d)
	}
	move := p.Steps[1]
	if move.MoveTag.From != "1-30-3" || move.Rollback == nil || move.Rollback.MoveTag.To != "1-30-3" {
		t.Errorf("the move must roll back to the old revision: %+v", move)
	}
	if len(move.MoveTag.Objects) != 2 {
		t.Errorf("from 1.28 a tag is a webhook configuration and a Service, got %d objects", len(move.MoveTag.Objects))
	}
	if p.Steps[2].Restart.BatchSize != 2 || len(p.Steps[2].Restart.Workloads) != 1 {
		t.Errorf("restart = %+v", p.Steps[2].Restart)
	}
	skip, _ := tags.MoveTag(canary(), "prod", "1-31-4", tags.MoveOptions{SkipRestart: true})
	for _, s := range skip.Steps {
		if s.Kind() == plan.KindRestart {
			t.Error("SkipRestart must plan no restart")
		}
	}
}

func TestRenderMatchesTheChartsShape(t *testing.T) {
	objs := tags.Render("default", "1-31-4", "istio-system", mesh.MustParseVersion("1.31.4"))
	mwc := objs[0]
	meta := mwc["metadata"].(map[string]any)
	if meta["name"] != "istio-revision-tag-default" {
		t.Errorf("name = %v", meta["name"])
	}
	labels := meta["labels"].(map[string]any)
	if labels["istio.io/tag"] != "default" || labels["istio.io/rev"] != "1-31-4" {
		t.Errorf("labels = %v", labels)
	}
	var names []string
	for _, w := range mwc["webhooks"].([]any) {
		names = append(names, w.(map[string]any)["name"].(string))
	}
	if !strings.Contains(strings.Join(names, ","), "namespace.sidecar-injector.istio.io,object.sidecar-injector.istio.io") || len(names) != 4 {
		t.Errorf("the default tag carries the rev.* and the legacy webhooks, got %v", names)
	}
	if old := tags.Render("prod", "1-27-1", "istio-system", mesh.MustParseVersion("1.27.1")); len(old) != 1 {
		t.Errorf("before 1.28 a tag has no Service, got %d objects", len(old))
	}
	if n := tags.WebhookName("prod", "istio-control"); n != "istio-revision-tag-prod-istio-control" {
		t.Errorf("outside istio-system the namespace is a suffix: %s", n)
	}
}

func TestASplitTagMovesEvenWhenItsWebhookPointsAtTheRevision(t *testing.T) {
	s := canary()
	for i := range s.Tags {
		if s.Tags[i].Name == "prod" { // the docs' webhook-only command moved the webhook, not the Service
			s.Tags[i].Revision, s.Tags[i].WebhookRevision, s.Tags[i].ServiceRevision = "1-31-4", "1-31-4", "1-30-3"
		}
	}
	p, err := tags.MoveTag(s, "prod", "1-31-4", tags.MoveOptions{SkipRestart: true})
	if err != nil {
		t.Fatalf("MoveTag: %v", err)
	}
	move, ok := p.Step("tags/prod/move")
	if !ok {
		t.Fatalf("no move step in %v", p.Steps)
	}
	var kinds []string
	for _, o := range move.MoveTag.Objects {
		kinds = append(kinds, o["kind"].(string))
	}
	if d := cmp.Diff([]string{"MutatingWebhookConfiguration", "Service"}, kinds); d != "" {
		t.Errorf("the move re-renders both objects (-want +got):\n%s", d)
	}
}

func TestBlastRadiusCountsWhatUsesTheTagsWaypoints(t *testing.T) {
	wp := "shop-waypoint"
	tests := []struct {
		name      string
		mutate    func(*mesh.Snapshot)
		ambient   []string
		services  []mesh.ObjectRef
		workloads []mesh.ObjectRef
	}{
		{name: "a Service inherits its namespace's waypoint", ambient: []string{"shop"},
			mutate:   func(s *mesh.Snapshot) { s.Services = []mesh.Service{{Namespace: "shop", Name: "cart"}} },
			services: []mesh.ObjectRef{{Kind: "Service", Namespace: "shop", Name: "cart"}}},
		{name: "a Service labelled none opts out of its namespace's waypoint", ambient: []string{"shop"},
			mutate: func(s *mesh.Snapshot) {
				s.Services = []mesh.Service{{Namespace: "shop", Name: "cart", Labels: map[string]string{mesh.LabelUseWaypoint: "none"}}}
			}},
		{name: "a Service in another namespace that names the waypoint brings its namespace along", ambient: []string{"legacy", "shop"},
			mutate: func(s *mesh.Snapshot) {
				s.Services = []mesh.Service{{Namespace: "legacy", Name: "ledger", Labels: map[string]string{mesh.LabelUseWaypoint: wp, mesh.LabelUseWaypointNamespace: "shop"}}}
			},
			services: []mesh.ObjectRef{{Kind: "Service", Namespace: "legacy", Name: "ledger"}}},
		{name: "a Service naming another waypoint leaves the tag's", ambient: []string{"shop"},
			mutate: func(s *mesh.Snapshot) {
				s.Services = []mesh.Service{{Namespace: "shop", Name: "cart", Labels: map[string]string{mesh.LabelUseWaypoint: "other"}}}
			}},
		{name: "workloads inherit their namespace's waypoint when it takes workload traffic", ambient: []string{"shop"},
			mutate: func(s *mesh.Snapshot) {
				for i := range s.Gateways {
					if s.Gateways[i].Name == wp {
						s.Gateways[i].WaypointFor = "all"
					}
				}
			},
			workloads: []mesh.ObjectRef{{Kind: "Deployment", Namespace: "shop", Name: "cart"}, {Kind: "StatefulSet", Namespace: "shop", Name: "db"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := canary()
			if tc.mutate != nil {
				tc.mutate(s)
			}
			s.Normalize()
			r, _ := tags.BlastRadius(s, "default")
			got := []any{r.AmbientNamespaces, r.Services, r.WaypointWorkloads}
			want := []any{tc.ambient, tc.services, tc.workloads}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("ambient namespaces, Services, workloads (-want +got):\n%s", d)
			}
		})
	}
}

func TestAnEmptyRevisionLabelTiesAWaypointToTheDefaultTag(t *testing.T) {
	s := canary()
	for i := range s.Namespaces {
		if s.Namespaces[i].Name == "shop" {
			s.Namespaces[i].Labels[mesh.LabelRev] = "prod"
		}
	}
	for i := range s.Gateways {
		if s.Gateways[i].Name == "shop-waypoint" {
			s.Gateways[i].RevisionLabelEmpty = true
		}
	}
	s.Normalize()
	def, _ := tags.BlastRadius(s, "default")
	prod, _ := tags.BlastRadius(s, "prod")
	want := []mesh.ObjectRef{{Kind: "Gateway", Namespace: "shop", Name: "shop-waypoint"}}
	if !cmp.Equal(def.Waypoints, want) || len(prod.Waypoints) != 0 {
		t.Errorf("default reaches %v, prod %v; the empty label ignores the namespace's prod", def.Waypoints, prod.Waypoints)
	}
}

func TestAMoveOffAnAffectedRevisionNamesTheGatewaysThatLoseTheirConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		want    []string
	}{
		{"a revision at 1.30.1 drops the config of the waypoint that follows the tag", "1.30.1", []string{"Gateway shop/shop-waypoint"}},
		{"a revision at 1.30.2 has the fix", "1.30.2", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := canary()
			s.Revisions[0].Version = mesh.MustParseVersion(tc.version)
			s.Normalize()
			p, _ := tags.MoveTag(s, "default", "1-31-4", tags.MoveOptions{Waive: []plan.Code{plan.CodeGatewayRevisionChangeDropsConfig}})
			if p == nil {
				t.Fatal("no plan")
			}
			var got []string
			for _, f := range p.Findings {
				if f.Code == plan.CodeGatewayRevisionChangeDropsConfig {
					got = append(got, f.Object.String())
					if f.Details["fixedIn"] != "1.30.2" {
						t.Errorf("%s: fixedIn %q, want 1.30.2", f.Object, f.Details["fixedIn"])
					}
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("gateways named (-want +got):\n%s", d)
			}
		})
	}
}
