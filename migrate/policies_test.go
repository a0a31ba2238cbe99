package migrate_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/migrate"
)

// policy builds an observed policy from a YAML spec, as observation stores it (JSON data).
func policy(t *testing.T, kind, name, spec string) mesh.Policy {
	t.Helper()
	p := mesh.Policy{Kind: kind, Namespace: "shop", Name: name}
	if spec != "" {
		if err := yaml.Unmarshal([]byte(spec), &p.Spec); err != nil {
			t.Fatalf("spec of %s: %v", name, err)
		}
	}
	return p
}

func TestClassifyAuthorizationPolicies(t *testing.T) {
	tests := []struct {
		name  string
		spec  string
		class migrate.PolicyClass
		rules []migrate.RuleVerdict
	}{
		{
			name:  "an L4 ALLOW policy with a selector keeps working",
			spec:  `{selector: {matchLabels: {app: cart}}, rules: [{from: [{source: {namespaces: [web]}}], to: [{operation: {ports: ["8080"]}}]}]}`,
			class: migrate.KeepsWorking,
			rules: []migrate.RuleVerdict{{Index: 0, Outcome: migrate.RuleKept, Callers: []string{"from[0].source.namespaces"}}},
		},
		{
			name:  "an ALLOW policy without rules keeps denying everything",
			spec:  `{selector: {matchLabels: {app: cart}}}`,
			class: migrate.KeepsWorking,
		},
		{
			name:  "a policy with targetRefs is for a waypoint and ignored by ztunnel",
			spec:  `{targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: wp}], rules: [{to: [{operation: {methods: [GET]}}]}]}`,
			class: migrate.NeedsWaypoint,
		},
		{
			name:  "a policy with the older single targetRef is for a waypoint too",
			spec:  `{targetRef: {kind: Service, group: "", name: cart}}`,
			class: migrate.NeedsWaypoint,
		},
		{
			name:  "an L4 CUSTOM policy is not enforced without a waypoint",
			spec:  `{action: CUSTOM, provider: {name: opa}, selector: {matchLabels: {app: cart}}, rules: [{to: [{operation: {ports: ["80"]}}]}]}`,
			class: migrate.NotEnforced,
		},
		{
			name:  "an AUDIT policy is not enforced without a waypoint",
			spec:  `{action: AUDIT, rules: [{}]}`,
			class: migrate.NotEnforced,
		},
		{
			name:  "an ALLOW policy whose every rule is L7 becomes deny-all",
			spec:  `{selector: {matchLabels: {app: cart}}, rules: [{to: [{operation: {methods: [GET]}}]}, {from: [{source: {requestPrincipals: ["*"]}}]}]}`,
			class: migrate.DenyAllUnderZtunnel,
			rules: []migrate.RuleVerdict{
				{Index: 0, Outcome: migrate.RuleDropped, L7: []string{"to[0].operation.methods"}},
				{Index: 1, Outcome: migrate.RuleDropped, L7: []string{"from[0].source.requestPrincipals"}},
			},
		},
		{
			name:  "a mixed ALLOW policy silently loses its L7 rules, field-level L7 drops the whole rule",
			spec:  `{rules: [{to: [{operation: {ports: ["80"]}}]}, {to: [{operation: {ports: ["81"], paths: [/admin]}}]}, {when: [{key: "request.headers[x-user]", values: [a]}]}]}`,
			class: migrate.LosesL7Rules,
			rules: []migrate.RuleVerdict{
				{Index: 0, Outcome: migrate.RuleKept},
				{Index: 1, Outcome: migrate.RuleDropped, L7: []string{"to[0].operation.paths"}},
				{Index: 2, Outcome: migrate.RuleDropped, L7: []string{"when[0]:request.headers[x-user]"}},
			},
		},
		{
			name:  "remoteIpBlocks and a non-L4 when key count as L7 in an ALLOW rule",
			spec:  `{rules: [{from: [{source: {remoteIpBlocks: [1.2.3.4]}}], when: [{key: connection.sni, values: [a]}, {key: source.ip, values: [10.0.0.1]}]}]}`,
			class: migrate.DenyAllUnderZtunnel,
			rules: []migrate.RuleVerdict{{Index: 0, Outcome: migrate.RuleDropped,
				L7: []string{"from[0].source.remoteIpBlocks", "when[0]:connection.sni"}, Callers: []string{"when[1]:source.ip"}}},
		},
		{
			name:  "an ALLOW rule with trustDomains allows more, because istiod leaves the field out for ztunnel",
			spec:  `{rules: [{from: [{source: {principals: [cluster.local/ns/web/sa/web], trustDomains: [cluster.local]}}]}]}`,
			class: migrate.BroaderAllow,
			rules: []migrate.RuleVerdict{{Index: 0, Outcome: migrate.RuleBroadened,
				Ignored: []string{"from[0].source.trustDomains"}, Callers: []string{"from[0].source.principals"}}},
		},
		{
			name:  "an L7-only DENY policy has no effect",
			spec:  `{action: DENY, rules: [{to: [{operation: {methods: [DELETE]}}]}, {from: [{source: {notRequestPrincipals: ["*"]}}]}]}`,
			class: migrate.NoEffect,
			rules: []migrate.RuleVerdict{
				{Index: 0, Outcome: migrate.RuleNoEffect, L7: []string{"to[0].operation.methods"}},
				{Index: 1, Outcome: migrate.RuleNoEffect, L7: []string{"from[0].source.notRequestPrincipals"}},
			},
		},
		{
			name:  "a DENY rule whose L7 sits beside L4 fields becomes a broader deny",
			spec:  `{action: DENY, rules: [{to: [{operation: {ports: ["8080"], methods: [POST]}}]}]}`,
			class: migrate.BroaderDeny,
			rules: []migrate.RuleVerdict{{Index: 0, Outcome: migrate.RuleBroadened, L7: []string{"to[0].operation.methods"}}},
		},
		{
			name:  "a DENY rule with an L7 when condition never matches, while its L4 sibling keeps denying",
			spec:  `{action: DENY, rules: [{from: [{source: {namespaces: [evil]}}]}, {from: [{source: {namespaces: [web]}}], when: [{key: "request.auth.claims[group]", values: [guest]}]}]}`,
			class: migrate.LosesL7Rules,
			rules: []migrate.RuleVerdict{
				{Index: 0, Outcome: migrate.RuleKept, Callers: []string{"from[0].source.namespaces"}},
				{Index: 1, Outcome: migrate.RuleNoEffect, L7: []string{"when[0]:request.auth.claims[group]"}, Callers: []string{"from[0].source.namespaces"}},
			},
		},
		{
			name:  "a DENY rule loses an L7-only alternative and denies less",
			spec:  `{action: DENY, rules: [{to: [{operation: {paths: [/admin]}}, {operation: {ports: ["9000"], hosts: [x]}}]}]}`,
			class: migrate.LosesL7Rules,
			rules: []migrate.RuleVerdict{{Index: 0, Outcome: migrate.RuleNarrowed, AlsoBroadened: true,
				L7: []string{"to[0].operation.paths", "to[1].operation.hosts"}}},
		},
		{
			name:  "an empty DENY rule still denies everything",
			spec:  `{action: DENY, rules: [{}]}`,
			class: migrate.KeepsWorking,
			rules: []migrate.RuleVerdict{{Index: 0, Outcome: migrate.RuleKept}},
		},
		{
			name:  "a misspelt field makes the policy unknown instead of dropping the rule",
			spec:  `{rules: [{to: [{operation: {method: [GET]}}]}]}`,
			class: migrate.Unknown,
		},
		{
			name:  "an unknown action makes the policy unknown",
			spec:  `{action: BLOCK}`,
			class: migrate.Unknown,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := policy(t, "AuthorizationPolicy", "p", tc.spec)
			got := migrate.ClassifyPolicies(&mesh.Snapshot{Policies: []mesh.Policy{p}})
			if len(got) != 1 {
				t.Fatalf("got %d verdicts", len(got))
			}
			v := got[0]
			if v.Class != tc.class || v.Reason == "" {
				t.Fatalf("class %s (%s, error %q), want %s", v.Class, v.Reason, v.Error, tc.class)
			}
			if d := cmp.Diff(tc.rules, v.Rules, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("rules (-want +got):\n%s", d)
			}
			if (tc.class == migrate.Unknown) != (v.Error != "") {
				t.Errorf("error %q for class %s", v.Error, v.Class)
			}
		})
	}
}

func TestClassifyOtherPolicies(t *testing.T) {
	tests := []struct {
		name, kind, spec string
		class            migrate.PolicyClass
	}{
		{"mTLS disabled blocks the migration", "PeerAuthentication", `{mtls: {mode: DISABLE}}`, migrate.BlocksMigration},
		{"mTLS disabled on one port blocks the migration", "PeerAuthentication", `{selector: {matchLabels: {app: a}}, mtls: {mode: STRICT}, portLevelMtls: {"8080": {mode: DISABLE}}}`, migrate.BlocksMigration},
		{"strict mTLS is unaffected", "PeerAuthentication", `{mtls: {mode: STRICT}}`, migrate.Unaffected},
		{"port-level STRICT and PERMISSIVE modes of a workload policy are unaffected (istiod converts them for ztunnel)", "PeerAuthentication",
			`{selector: {matchLabels: {app: a}}, mtls: {mode: STRICT}, portLevelMtls: {"8080": {mode: PERMISSIVE}, "9090": {mode: STRICT}}}`, migrate.Unaffected},
		{"a PeerAuthentication with an unknown mode is unknown", "PeerAuthentication", `{mtls: {mode: OFF}}`, migrate.Unknown},
		{"a RequestAuthentication with a selector is not enforced without a waypoint", "RequestAuthentication", `{selector: {matchLabels: {app: a}}, jwtRules: [{issuer: x}]}`, migrate.NotEnforced},
		{"a RequestAuthentication with targetRefs needs a waypoint", "RequestAuthentication", `{targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: wp}], jwtRules: [{issuer: x}]}`, migrate.NeedsWaypoint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := migrate.ClassifyPolicies(&mesh.Snapshot{Policies: []mesh.Policy{policy(t, tc.kind, "p", tc.spec)}})
			if len(got) != 1 || got[0].Class != tc.class || got[0].Reason == "" {
				t.Fatalf("got %+v, want class %s with a reason", got, tc.class)
			}
		})
	}
}

func TestDryRunPoliciesAreIgnoredByZtunnel(t *testing.T) {
	p := policy(t, "AuthorizationPolicy", "p", `{rules: [{}]}`)
	p.Annotations = map[string]string{"istio.io/dry-run": "true"}
	got := migrate.ClassifyPolicies(&mesh.Snapshot{Policies: []mesh.Policy{p}})
	if got[0].Class != migrate.DryRunIgnored {
		t.Fatalf("class %s", got[0].Class)
	}
}

func TestWaypointAcceptedStatusIsReadNotGuessed(t *testing.T) {
	spec := `{targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: wp}]}`
	tests := []struct {
		name       string
		generation int64
		conditions []mesh.PolicyCondition
		want       migrate.WaypointStatus
	}{
		{"no condition yet is not accepted", 1, nil, migrate.WaypointStatus{}},
		{"an accepted policy is accepted", 2, []mesh.PolicyCondition{{Type: "WaypointAccepted", Status: "True", Reason: "Accepted", ObservedGeneration: 2}},
			migrate.WaypointStatus{Accepted: true, Reason: "Accepted"}},
		{"a missing target is named", 1, []mesh.PolicyCondition{{Type: "WaypointAccepted", Status: "False", Reason: "TargetNotFound", Message: "not bound"}},
			migrate.WaypointStatus{Reason: "TargetNotFound", Message: "not bound"}},
		{"a condition for an older generation is stale", 3, []mesh.PolicyCondition{{Type: "WaypointAccepted", Status: "True", Reason: "Accepted", ObservedGeneration: 2}},
			migrate.WaypointStatus{Reason: "Stale", Message: "the condition describes generation 2; the policy is at 3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := policy(t, "AuthorizationPolicy", "p", spec)
			p.Generation, p.Conditions = tc.generation, tc.conditions
			got := migrate.ClassifyPolicies(&mesh.Snapshot{Policies: []mesh.Policy{p}})
			if got[0].Status == nil {
				t.Fatal("no status")
			}
			if d := cmp.Diff(tc.want, *got[0].Status); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
		})
	}
}

func TestCallerRulesMoveToTheWaypointThatWillServeTheWorkload(t *testing.T) {
	s := &mesh.Snapshot{
		Namespaces: []mesh.Namespace{{Name: "shop", Labels: map[string]string{"istio.io/use-waypoint": "wp"}}},
		Gateways:   []mesh.Gateway{{Kind: mesh.GatewayKindAPI, Namespace: "shop", Name: "wp", Class: "istio-waypoint", Waypoint: true}},
		Services:   []mesh.Service{{Namespace: "shop", Name: "cart", Selector: map[string]string{"app": "cart"}}},
		Workloads:  []mesh.Workload{{Namespace: "shop", Kind: "Deployment", Name: "cart", Labels: map[string]string{"app": "cart"}}},
		Policies: []mesh.Policy{policy(t, "AuthorizationPolicy", "p",
			`{selector: {matchLabels: {app: cart}}, rules: [{from: [{source: {principals: [cluster.local/ns/web/sa/web]}}]}]}`)},
	}
	got := migrate.ClassifyPolicies(s)
	if got[0].Class != migrate.PrincipalsMoveToWaypoint || !cmp.Equal(got[0].Waypoints, []string{"shop/wp"}) {
		t.Fatalf("got %+v", got[0])
	}
	s.Services[0].Labels = map[string]string{"istio.io/use-waypoint": "none"}
	if got := migrate.ClassifyPolicies(s); got[0].Class != migrate.KeepsWorking {
		t.Errorf("a Service that opts out of the waypoint keeps its caller rules on ztunnel: got %s", got[0].Class)
	}
}

func TestClassifyPoliciesFiltersNamespacesButKeepsMeshWideOnes(t *testing.T) {
	s := &mesh.Snapshot{
		Revisions: []mesh.Revision{{Name: "r", Namespace: "istio-system"}},
		Policies: []mesh.Policy{
			{Kind: "PeerAuthentication", Namespace: "istio-system", Name: "mesh", Spec: map[string]any{"mtls": map[string]any{"mode": "STRICT"}}},
			{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "a"},
			{Kind: "AuthorizationPolicy", Namespace: "other", Name: "b"},
		},
	}
	got := migrate.ClassifyPolicies(s, "shop")
	if len(got) != 2 || got[0].Policy.Namespace != "istio-system" || got[1].Policy.Namespace != "shop" {
		t.Fatalf("got %+v", got)
	}
}

func TestDecodePolicyIsStrict(t *testing.T) {
	_, err := migrate.DecodePolicy(policy(t, "AuthorizationPolicy", "p", `{rules: [{to: [{operation: {methods: [GET]}}]}], acton: DENY}`))
	if !errors.Is(err, migrate.ErrPolicyInvalid) {
		t.Fatalf("error %v does not wrap ErrPolicyInvalid", err)
	}
	if _, err := migrate.DecodePolicy(mesh.Policy{Kind: "Sidecar"}); !errors.Is(err, migrate.ErrKindUnknown) {
		t.Fatalf("error %v does not wrap ErrKindUnknown", err)
	}
}
