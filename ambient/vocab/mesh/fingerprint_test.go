package mesh_test

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

func TestFingerprintCoversWhatAMigrationDependsOn(t *testing.T) {
	base := func() *mesh.Snapshot {
		return &mesh.Snapshot{
			Namespaces: []mesh.Namespace{{Name: "shop", Labels: map[string]string{mesh.LabelInjection: "enabled"}}},
			Gateways:   []mesh.Gateway{{Kind: mesh.GatewayKindAPI, Namespace: "shop", Name: "waypoint", Waypoint: true}},
			Policies: []mesh.Policy{{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "p", Spec: map[string]any{"action": "DENY"},
				Conditions: []mesh.PolicyCondition{{Type: mesh.ConditionWaypointAccepted, Status: "False"}}}},
			Services: []mesh.Service{{Namespace: "shop", Name: "web", Selector: map[string]string{"app": "web"}}},
		}
	}
	was := base().Fingerprint()
	tests := []struct {
		name    string
		change  func(*mesh.Snapshot)
		differs bool
	}{
		{"a policy's spec", func(s *mesh.Snapshot) { s.Policies[0].Spec["action"] = "ALLOW" }, true},
		{"a policy's dry-run annotation", func(s *mesh.Snapshot) { s.Policies[0].Annotations = map[string]string{"istio.io/dry-run": "true"} }, true},
		{"a Service's waypoint label", func(s *mesh.Snapshot) { s.Services[0].Labels = map[string]string{mesh.LabelUseWaypoint: "waypoint"} }, true},
		{"a Service's selector", func(s *mesh.Snapshot) { s.Services[0].Selector["app"] = "api" }, true},
		{"a waypoint's traffic type", func(s *mesh.Snapshot) { s.Gateways[0].WaypointFor = "all" }, true},
		{"the status istiod writes", func(s *mesh.Snapshot) { s.Policies[0].Conditions[0].Status = "True" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.change(s)
			if got := s.Fingerprint() != was; got != tc.differs {
				t.Errorf("fingerprint changed = %v, want %v", got, tc.differs)
			}
		})
	}
	// Without policies and Services (and a waypoint without waypoint-for) the fingerprint is the one
	// computed before they were covered (normalize.go at 22259d3).
	s := base()
	s.Policies, s.Services = nil, nil
	if got, want := s.Fingerprint(), "sha256:1ab83b67db3e6fb6578ad550a15e67697383f6dbb912263447f8d92e161f2f2f"; got != want {
		t.Errorf("fingerprint %s, want the earlier %s", got, want)
	}
}
