package migrate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// observeFiles observes testdata/base.yaml plus the given fixture files as one stream.
func observeFiles(t *testing.T, files ...string) *mesh.Snapshot {
	t.Helper()
	var buf bytes.Buffer
	for _, f := range append([]string{"testdata/base.yaml"}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
		buf.WriteString("\n")
	}
	s, err := observe.YAML(context.Background(), strings.Join(files, "+"), &buf, observe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test ./migrate/ -update", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs; review and run with -update (-want +got):\n%s", path, d)
	}
}

func TestReadinessGolden(t *testing.T) {
	tests := []struct {
		name, namespace string
		opts            migrate.ReadinessOptions
		wantCodes       []plan.Code
		wantNeeded      bool
	}{
		{
			name: "shop", namespace: "shop",
			opts: migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{Name: "shop-waypoint"}},
			wantCodes: []plan.Code{
				migrate.CodePolicySpecInvalid, migrate.CodeAuthzPolicyBecomesDenyAll, migrate.CodeAuthzCallerRulesSeeWaypoint, migrate.CodeAuthzPolicyDeniesMore,
				migrate.CodeAuthzPolicyLosesL7Rules, migrate.CodeAuthzPolicyHasNoEffect, migrate.CodePolicyNotAcceptedByWaypoint, migrate.CodePolicyNotEnforcedWithoutWaypoint,
				migrate.CodeRouteHasNoGatewayAPIEquivalent, migrate.CodeTelemetryReporterChanges, migrate.CodeVirtualServiceNeedsHTTPRoute,
			},
			wantNeeded: true,
		},
		{
			name: "ledger", namespace: "ledger",
			wantCodes:  []plan.Code{migrate.CodeTelemetryHTTPMetricsLost},
			wantNeeded: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := observeFiles(t, filepath.Join("testdata", "readiness", tc.name+".yaml"))
			r, err := migrate.Readiness(s, tc.namespace, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(sortCodes(tc.wantCodes), uniqueCodes(r.Findings)); d != "" {
				t.Errorf("codes (-want +got):\n%s", d)
			}
			if r.Waypoint.Needed != tc.wantNeeded {
				t.Errorf("waypoint needed = %v, want %v", r.Waypoint.Needed, tc.wantNeeded)
			}
			out, err := yaml.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "readiness", tc.name+".golden.yaml"), out)
			again, _ := migrate.Readiness(s, tc.namespace, tc.opts)
			if b, _ := yaml.Marshal(again); !bytes.Equal(b, out) {
				t.Error("two runs over the same snapshot differ")
			}
		})
	}
}

func uniqueCodes(fs []plan.Finding) []plan.Code {
	seen := map[plan.Code]bool{}
	var out []plan.Code
	for _, f := range fs {
		if !seen[f.Code] {
			seen[f.Code] = true
			out = append(out, f.Code)
		}
	}
	// Findings are sorted by severity first; compare as a sorted set.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestReadinessShopDetails(t *testing.T) {
	s := observeFiles(t, "testdata/readiness/shop.yaml")
	r, err := migrate.Readiness(s, "shop", migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{Name: "shop-waypoint"}})
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]migrate.PolicyClass{}
	for _, v := range r.Policies {
		classes[v.Policy.String()] = v.Class
	}
	want := map[string]migrate.PolicyClass{
		"PeerAuthentication istio-system/default":   migrate.Unaffected,
		"AuthorizationPolicy shop/cart-admin":       migrate.BroaderDeny,
		"AuthorizationPolicy shop/cart-readers":     migrate.DenyAllUnderZtunnel,
		"AuthorizationPolicy shop/cart-waypoint-l7": migrate.NeedsWaypoint,
		"AuthorizationPolicy shop/cart-writers":     migrate.LosesL7Rules,
		"AuthorizationPolicy shop/no-delete":        migrate.NoEffect,
		"AuthorizationPolicy shop/typo":             migrate.Unknown,
		"AuthorizationPolicy shop/web-ext-authz":    migrate.NotEnforced,
		"AuthorizationPolicy shop/web-from-ingress": migrate.PrincipalsMoveToWaypoint,
		"RequestAuthentication shop/cart-jwt":       migrate.NotEnforced,
	}
	if d := cmp.Diff(want, classes); d != "" {
		t.Errorf("classes (-want +got):\n%s", d)
	}
	if r.Ready {
		t.Error("a namespace with an undecodable policy is ready")
	}
	// No proposal for the policy that does not decode: nothing is guessed about it.
	for _, p := range r.Proposals {
		if p.For.Name == "typo" {
			t.Errorf("proposal for an undecodable policy: %+v", p)
		}
	}
}

func TestProposalsKeepActionAndRulesAndTargetWhatExists(t *testing.T) {
	s := observeFiles(t, "testdata/readiness/shop.yaml")
	r, err := migrate.Readiness(s, "shop", migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{Name: "shop-waypoint"}})
	if err != nil {
		t.Fatal(err)
	}
	byFor := map[string]migrate.Proposal{}
	for _, p := range r.Proposals {
		byFor[p.For.String()] = p
	}
	tests := []struct {
		name, for_, kind, action string
		targets                  []any
	}{
		{"a namespace-wide DENY stays DENY and targets the waypoint the caller will create", "AuthorizationPolicy shop/no-delete", "AuthorizationPolicy", "DENY",
			[]any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "shop-waypoint"}}},
		{"a CUSTOM policy keeps its provider and targets the Service of its workloads", "AuthorizationPolicy shop/web-ext-authz", "AuthorizationPolicy", "CUSTOM",
			[]any{map[string]any{"kind": "Service", "name": "web"}}},
		{"an ALLOW policy keeps every rule", "AuthorizationPolicy shop/cart-writers", "AuthorizationPolicy", "",
			[]any{map[string]any{"kind": "Service", "name": "cart"}}},
		{"a RequestAuthentication moves to the Service", "RequestAuthentication shop/cart-jwt", "RequestAuthentication", "",
			[]any{map[string]any{"kind": "Service", "name": "cart"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := byFor[tc.for_]
			if !ok {
				t.Fatalf("no proposal for %s; notes: %v", tc.for_, r.Notes)
			}
			spec, _ := p.Object["spec"].(map[string]any)
			if p.Object["kind"] != tc.kind || p.Object["apiVersion"] != "security.istio.io/v1" {
				t.Errorf("object %v/%v", p.Object["apiVersion"], p.Object["kind"])
			}
			if got, _ := spec["action"].(string); got != tc.action {
				t.Errorf("action %q, want %q", got, tc.action)
			}
			if spec["selector"] != nil {
				t.Error("the copy keeps the selector")
			}
			if d := cmp.Diff(tc.targets, spec["targetRefs"]); d != "" {
				t.Errorf("targetRefs (-want +got):\n%s", d)
			}
			orig := policySpec(s, tc.for_)
			if d := cmp.Diff(orig["rules"], spec["rules"]); d != "" {
				t.Errorf("rules changed (-original +copy):\n%s", d)
			}
		})
	}
	if p := byFor["AuthorizationPolicy shop/web-ext-authz"]; p.Object != nil {
		spec := p.Object["spec"].(map[string]any)
		if d := cmp.Diff(map[string]any{"name": "opa"}, spec["provider"]); d != "" {
			t.Errorf("provider (-want +got):\n%s", d)
		}
	}
}

func policySpec(s *mesh.Snapshot, ref string) map[string]any {
	for _, p := range s.Policies {
		if p.Ref().String() == ref {
			return p.Spec
		}
	}
	return nil
}

func TestProposalsNeverNameAWaypointThatIsNotThere(t *testing.T) {
	s := observeFiles(t, "testdata/readiness/shop.yaml")
	r, err := migrate.Readiness(s, "shop", migrate.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Proposals {
		if p.Object["kind"] != "HTTPRoute" {
			t.Errorf("without a waypoint in the snapshot or the options, %s got a policy proposal: %v", p.For, p.Object["spec"])
		}
	}
	if !hasCode(r.Findings, migrate.CodeWaypointNeededButMissing) {
		t.Errorf("no %s finding: %v", migrate.CodeWaypointNeededButMissing, plan.Codes(r.Findings))
	}
}

func TestProposedHTTPRoutesDecodeIntoGatewayAPITypes(t *testing.T) {
	s := observeFiles(t, "testdata/readiness/shop.yaml")
	r, err := migrate.Readiness(s, "shop", migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{Name: "shop-waypoint"}})
	if err != nil {
		t.Fatal(err)
	}
	routes := 0
	for _, p := range r.Proposals {
		if p.Object["kind"] != "HTTPRoute" {
			continue
		}
		routes++
		b, _ := json.Marshal(p.Object)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var hr gatewayv1.HTTPRoute
		if err := dec.Decode(&hr); err != nil {
			t.Fatalf("%s: %v", p.For, err)
		}
		if len(hr.Spec.ParentRefs) == 0 || *hr.Spec.ParentRefs[0].Kind != "Service" {
			t.Errorf("%s: parentRefs %+v", p.For, hr.Spec.ParentRefs)
		}
		if p.For.Name == "cart" {
			rule := hr.Spec.Rules[0]
			if *rule.Matches[0].Path.Type != gatewayv1.PathMatchPathPrefix || *rule.Matches[0].Path.Value != "/v2/" {
				t.Errorf("path match %+v", rule.Matches[0].Path)
			}
			if rule.Timeouts == nil || *rule.Timeouts.Request != "5s" {
				t.Errorf("timeouts %+v", rule.Timeouts)
			}
			if len(p.Notes) == 0 {
				t.Error("retries and fault were dropped without a note")
			}
		}
	}
	if routes != 1 {
		t.Errorf("%d HTTPRoutes proposed, want 1 (web-canary routes to subsets and gets none)", routes)
	}
}

func hasCode(fs []plan.Finding, c plan.Code) bool {
	for _, f := range fs {
		if f.Code == c {
			return true
		}
	}
	return false
}

func TestReadinessChecksTheInstallationAndTheNamespace(t *testing.T) {
	ambientNS := mesh.Namespace{Name: "done", Labels: map[string]string{"istio.io/dataplane-mode": "ambient"}}
	plain := mesh.Namespace{Name: "plain"}
	s := &mesh.Snapshot{Namespaces: []mesh.Namespace{ambientNS, plain}, Revisions: []mesh.Revision{{Name: "default", Namespace: "istio-system", Deployment: "istiod"}},
		CNI: &mesh.CNI{Namespace: "istio-system", Name: "istio-cni-node"}}
	tests := []struct {
		name, namespace string
		want            []plan.Code
	}{
		{"a missing namespace is named", "nope", []plan.Code{migrate.CodeMigrationNamespaceNotFound}},
		{"an ambient namespace has nothing to migrate", "done", []plan.Code{migrate.CodeMigrationNamespaceAlreadyAmbient}},
		{"a namespace outside the mesh has nothing to migrate", "plain", []plan.Code{migrate.CodeMigrationNamespaceNotInMesh}},
	}
	install := []plan.Code{plan.CodeCNIAmbientDisabled, plan.CodeGatewayAPICRDsMissing, migrate.CodeIstiodAmbientDisabled, plan.CodeZtunnelMissing}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := migrate.Readiness(s, tc.namespace, migrate.ReadinessOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]plan.Code(nil), tc.want...), install...)
			if d := cmp.Diff(sortCodes(want), uniqueCodes(r.Findings)); d != "" {
				t.Errorf("codes (-want +got):\n%s", d)
			}
			if r.Ready {
				t.Error("ready")
			}
		})
	}
}

func sortCodes(c []plan.Code) []plan.Code {
	fs := make([]plan.Finding, 0, len(c))
	for _, x := range c {
		fs = append(fs, plan.Finding{Code: x})
	}
	return uniqueCodes(fs)
}

func TestReadinessRejectsBadInput(t *testing.T) {
	for name, call := range map[string]func() error{
		"no snapshot": func() error { _, err := migrate.Readiness(nil, "shop", migrate.ReadinessOptions{}); return err },
		"no namespace": func() error {
			_, err := migrate.Readiness(&mesh.Snapshot{}, "", migrate.ReadinessOptions{})
			return err
		},
		"a nameless waypoint": func() error {
			_, err := migrate.Readiness(&mesh.Snapshot{}, "a", migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{}})
			return err
		},
		"telemetry, no target": func() error {
			_, err := migrate.LintTelemetry(&mesh.Snapshot{}, "", migrate.TelemetryOptions{})
			return err
		},
	} {
		if err := call(); !errors.Is(err, migrate.ErrInvalidInput) {
			t.Errorf("%s: error %v does not wrap ErrInvalidInput", name, err)
		}
	}
}

func TestWaivingAWaivableCodeMakesTheNamespaceReady(t *testing.T) {
	s := observeFiles(t, "testdata/readiness/ledger.yaml")
	r, err := migrate.Readiness(s, "ledger", migrate.ReadinessOptions{Waive: []plan.Code{migrate.CodeTelemetryHTTPMetricsLost}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ready {
		t.Errorf("not ready: %v", plan.Stopping(r.Findings))
	}
}

func TestWaypointPrecedence(t *testing.T) {
	wp := func(ns, name, forTraffic string) mesh.Gateway {
		return mesh.Gateway{Kind: mesh.GatewayKindAPI, Namespace: ns, Name: name, Class: "istio-waypoint", Waypoint: true, WaypointFor: forTraffic, Pods: 1, ReadyPods: 1}
	}
	svc := func(name string, labels map[string]string) mesh.Service {
		return mesh.Service{Namespace: "shop", Name: name, Labels: labels, Selector: map[string]string{"app": name}}
	}
	s := &mesh.Snapshot{
		Namespaces: []mesh.Namespace{{Name: "shop", Labels: map[string]string{"istio-injection": "enabled", "istio.io/use-waypoint": "ns-wp"}, Pods: mesh.PodSummary{Sidecar: map[string]int{"default": 1}}}},
		Gateways:   []mesh.Gateway{wp("shop", "ns-wp", ""), wp("shop", "svc-wp", "service"), wp("shop", "wl-only", "workload"), wp("shared", "central", "all")},
		Services: []mesh.Service{
			svc("a", nil),
			svc("b", map[string]string{"istio.io/use-waypoint": "svc-wp"}),
			svc("c", map[string]string{"istio.io/use-waypoint": "none"}),
			svc("d", map[string]string{"istio.io/use-waypoint": "wl-only"}),
			svc("e", map[string]string{"istio.io/use-waypoint": "central", "istio.io/use-waypoint-namespace": "shared"}),
			svc("f", map[string]string{"istio.io/use-waypoint": "missing"}),
		},
	}
	r, err := migrate.Readiness(s, "shop", migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{Name: "ignored-because-the-namespace-has-a-label"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, sw := range r.Waypoint.Services {
		got[sw.Service.Name] = [2]string{sw.Waypoint, sw.From}
	}
	want := map[string][2]string{
		"a": {"shop/ns-wp", migrate.FromNamespace},
		"b": {"shop/svc-wp", migrate.FromService},
		"c": {"", migrate.FromOptOut},
		"d": {"", migrate.FromService}, // a workload-only waypoint takes no Service traffic
		"e": {"shared/central", migrate.FromService},
		"f": {"shop/missing", migrate.FromService},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("waypoints (-want +got):\n%s", d)
	}
	if !hasCode(r.Findings, migrate.CodeWaypointNotReady) {
		t.Errorf("a Service naming a waypoint that does not exist gives no %s: %v", migrate.CodeWaypointNotReady, plan.Codes(r.Findings))
	}
}

func TestADestinationRuleOnAServiceWithoutWaypointStopsApplying(t *testing.T) {
	s := observeFiles(t, "testdata/readiness/ledger.yaml")
	s.Policies = append(s.Policies, mesh.Policy{Kind: "DestinationRule", Namespace: "ledger", Name: "ledger-api",
		Spec: map[string]any{"host": "ledger-api", "trafficPolicy": map[string]any{"outlierDetection": map[string]any{"consecutive5xxErrors": float64(5)}}}})
	r, err := migrate.Readiness(s, "ledger", migrate.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []plan.Code{migrate.CodeDestinationRuleNeedsWaypoint, migrate.CodeWaypointNeededButMissing} {
		if !hasCode(r.Findings, c) {
			t.Errorf("no %s: %v", c, plan.Codes(r.Findings))
		}
	}
	if !r.Waypoint.Needed {
		t.Error("a traffic policy needs a waypoint")
	}
}
