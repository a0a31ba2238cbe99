package mesh_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// twoRevisions is a mesh with revisions old (1.30.3) and new (1.31.4), a namespace "pinned"
// labelled istio.io/rev=old, and a namespace "plain" without labels.
func twoRevisions() *mesh.Snapshot {
	rev := func(name, v string) mesh.Revision {
		return mesh.Revision{Name: name, Namespace: "istio-system", Deployment: "istiod-" + name, Version: mesh.MustParseVersion(v)}
	}
	return &mesh.Snapshot{
		Revisions: []mesh.Revision{rev("old", "1.30.3"), rev("new", "1.31.4")},
		Namespaces: []mesh.Namespace{
			{Name: "pinned", Labels: map[string]string{mesh.LabelRev: "old"}},
			{Name: "plain"},
		},
	}
}

func tag(name, webhookRev, serviceRev string) mesh.Tag {
	t := mesh.Tag{Name: name, Revision: webhookRev, WebhookRevision: webhookRev, ServiceRevision: serviceRev}
	if webhookRev != "" {
		t.Webhook = "istio-revision-tag-" + name
	} else {
		t.Revision = serviceRev
	}
	if serviceRev != "" {
		t.Service, t.ServiceNamespace = "istiod-revision-tag-"+name, "istio-system"
	}
	return t
}

func TestClaimsFollowIstiodsIsMine(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*mesh.Snapshot)
		namespace string
		label     string
		set       bool
		want      []string
	}{
		{name: "an absent label falls back to the namespace's", namespace: "pinned", want: []string{"old"}},
		{name: "an empty label counts as set: the namespace's is not read, the default tag decides", namespace: "pinned", set: true,
			mutate: func(s *mesh.Snapshot) { s.Tags = []mesh.Tag{tag("default", "new", "new")} }, want: []string{"new"}},
		{name: "a label naming a tag selects the tag's revision", namespace: "pinned", label: "prod", set: true,
			mutate: func(s *mesh.Snapshot) { s.Tags = []mesh.Tag{tag("prod", "new", "new")} }, want: []string{"new"}},
		{name: "a revision named default beside a default tag: both claim unlabelled objects", namespace: "plain",
			mutate: func(s *mesh.Snapshot) {
				s.Revisions = append(s.Revisions, mesh.Revision{Name: "default", Namespace: "istio-system", Deployment: "istiod", Version: mesh.MustParseVersion("1.30.3")})
				s.Tags = []mesh.Tag{tag("default", "new", "new")}
			}, want: []string{"default", "new"}},
		{name: "from 1.28 the default revision claims unlabelled objects when there is no default tag", namespace: "plain",
			mutate: func(s *mesh.Snapshot) { s.DefaultRevision = "old" }, want: []string{"old"}},
		{name: "a default tag's webhook configuration keeps the default revision out", namespace: "plain",
			mutate: func(s *mesh.Snapshot) { s.DefaultRevision = "old"; s.Tags = []mesh.Tag{tag("default", "new", "new")} }, want: []string{"new"}},
		{name: "a default tag that exists only as a Service does not: both claim unlabelled objects", namespace: "plain",
			mutate: func(s *mesh.Snapshot) { s.DefaultRevision = "old"; s.Tags = []mesh.Tag{tag("default", "", "new")} }, want: []string{"new", "old"}},
		{name: "before 1.28 the default revision claims nothing unlabelled", namespace: "plain",
			mutate: func(s *mesh.Snapshot) {
				s.DefaultRevision = "old"
				s.Revisions[0].Version = mesh.MustParseVersion("1.27.9")
			}, want: nil},
		{name: "before 1.28 a tag Service counts for nobody", namespace: "plain", label: "prod", set: true,
			mutate: func(s *mesh.Snapshot) {
				s.Revisions[0].Version = mesh.MustParseVersion("1.27.9")
				s.Tags = []mesh.Tag{tag("prod", "", "old")}
			}, want: nil},
		{name: "a split tag is claimed by the revision of each object", namespace: "plain", label: "prod", set: true,
			mutate: func(s *mesh.Snapshot) { s.Tags = []mesh.Tag{tag("prod", "new", "old")} }, want: []string{"new", "old"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := twoRevisions()
			if tc.mutate != nil {
				tc.mutate(s)
			}
			s.Normalize()
			if d := cmp.Diff(tc.want, s.Claims(tc.namespace, tc.label, tc.set), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("claims (-want +got):\n%s", d)
			}
		})
	}
}

func TestGatewayOwners(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*mesh.Snapshot)
		gateway mesh.Gateway
		owner   string
		owners  []string
	}{
		{name: "a waypoint with an empty label in a pinned namespace belongs to the default tag's revision",
			mutate:  func(s *mesh.Snapshot) { s.Tags = []mesh.Tag{tag("default", "new", "new")} },
			gateway: mesh.Gateway{Kind: mesh.GatewayKindAPI, Namespace: "pinned", Name: "wp", RevisionLabelEmpty: true},
			owner:   "new", owners: []string{"new"}},
		{name: "two claimants are both owners; Revision names the default tag's",
			mutate: func(s *mesh.Snapshot) {
				s.Revisions = append(s.Revisions, mesh.Revision{Name: "default", Namespace: "istio-system", Deployment: "istiod", Version: mesh.MustParseVersion("1.30.3")})
				s.Tags = []mesh.Tag{tag("default", "new", "new")}
			},
			gateway: mesh.Gateway{Kind: mesh.GatewayKindAPI, Namespace: "plain", Name: "gw"},
			owner:   "new", owners: []string{"default", "new"}},
		{name: "a chart gateway belongs to the revision that injected its pods, not to its label's tag",
			mutate: func(s *mesh.Snapshot) {
				s.Tags = []mesh.Tag{tag("prod", "new", "new")}
				s.Workloads = []mesh.Workload{{Namespace: "plain", Kind: "Deployment", Name: "ingress", Pods: 2, SidecarRevisions: map[string]int{"old": 2}}}
			},
			gateway: mesh.Gateway{Kind: mesh.GatewayKindDeployment, Namespace: "plain", Name: "ingress", RevisionLabel: "prod"},
			owner:   "old", owners: []string{"old"}},
		{name: "a chart gateway with pods of two revisions has both as owners, the one injection picks now first",
			mutate: func(s *mesh.Snapshot) {
				s.Tags = []mesh.Tag{tag("prod", "new", "new")}
				s.Workloads = []mesh.Workload{{Namespace: "plain", Kind: "Deployment", Name: "ingress", Pods: 2, SidecarRevisions: map[string]int{"old": 1, "new": 1}}}
			},
			gateway: mesh.Gateway{Kind: mesh.GatewayKindDeployment, Namespace: "plain", Name: "ingress", RevisionLabel: "prod"},
			owner:   "new", owners: []string{"new", "old"}},
		{name: "without pods injection decides, and the namespace's label wins over the pod's",
			mutate:  func(s *mesh.Snapshot) { s.Tags = []mesh.Tag{tag("prod", "new", "new")} },
			gateway: mesh.Gateway{Kind: mesh.GatewayKindDeployment, Namespace: "pinned", Name: "ingress", RevisionLabel: "prod"},
			owner:   "old", owners: []string{"old"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := twoRevisions()
			if tc.mutate != nil {
				tc.mutate(s)
			}
			s.Normalize()
			owner, owners := s.GatewayOwners(tc.gateway)
			if owner != tc.owner || !cmp.Equal(owners, tc.owners) {
				t.Errorf("GatewayOwners = %q, %v; want %q, %v", owner, owners, tc.owner, tc.owners)
			}
		})
	}
}

func TestWaypointOfTakesTheObjectsLabelOverItsNamespaces(t *testing.T) {
	s := &mesh.Snapshot{Namespaces: []mesh.Namespace{
		{Name: "shop", Labels: map[string]string{mesh.LabelUseWaypoint: "shop-wp"}},
		{Name: "plain"},
	}}
	wp := func(ns, name string) mesh.ObjectRef {
		return mesh.ObjectRef{Kind: "Gateway", Namespace: ns, Name: name}
	}
	tests := []struct {
		name      string
		namespace string
		labels    map[string]string
		want      mesh.ObjectRef
		own, ok   bool
	}{
		{"an unlabelled object uses its namespace's waypoint", "shop", nil, wp("shop", "shop-wp"), false, true},
		{"an object's own label wins over its namespace's", "shop", map[string]string{mesh.LabelUseWaypoint: "cart-wp"}, wp("shop", "cart-wp"), true, true},
		{"none opts out even when the namespace names a waypoint", "shop", map[string]string{mesh.LabelUseWaypoint: "none"}, mesh.ObjectRef{}, true, false},
		{"use-waypoint-namespace names the waypoint's namespace", "plain",
			map[string]string{mesh.LabelUseWaypoint: "shared", mesh.LabelUseWaypointNamespace: "infra"}, wp("infra", "shared"), true, true},
		{"an empty label uses no waypoint and does not fall back", "shop", map[string]string{mesh.LabelUseWaypoint: ""}, wp("shop", ""), true, false},
		{"nothing labelled uses nothing", "plain", nil, mesh.ObjectRef{}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, own, ok := s.WaypointOf(tc.namespace, tc.labels)
			if got != tc.want || own != tc.own || ok != tc.ok {
				t.Errorf("WaypointOf = %v, own %v, ok %v; want %v, %v, %v", got, own, ok, tc.want, tc.own, tc.ok)
			}
		})
	}
}
