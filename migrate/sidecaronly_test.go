package migrate_test

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	telemetryv1 "istio.io/api/telemetry/v1"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/migrate"
)

// TestConfigThatActsOnlyThroughSidecarsIsNamedWhereItAppliesToTheNamespace: an EnvoyFilter,
// WasmPlugin, Telemetry or ProxyConfig is named when it applies to the pods of the namespace by
// selector or namespace-wide, or mesh-wide from the root namespace; not when it selects none of
// them, attaches by targetRefs, or lives in another namespace.
func TestConfigThatActsOnlyThroughSidecarsIsNamedWhereItAppliesToTheNamespace(t *testing.T) {
	objects := `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: web-only, namespace: checkout}
spec: {workloadSelector: {labels: {app: web}}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: no-such-app, namespace: checkout}
spec: {workloadSelector: {labels: {app: billing}}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: mesh-wide, namespace: istio-system}
spec: {configPatches: []}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: gateway-only, namespace: istio-system}
spec: {workloadSelector: {labels: {istio: ingressgateway}}}
---
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: on-waypoint, namespace: checkout}
spec: {targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: waypoint}], url: oci://example.invalid/w:1}
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: namespace-logs, namespace: checkout}
spec: {accessLogging: [{providers: [{name: envoy}]}]}
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: elsewhere, namespace: billing}
spec: {accessLogging: [{providers: [{name: envoy}]}]}
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: api-concurrency, namespace: checkout}
spec: {selector: {matchLabels: {app: api}}, concurrency: 2}
`
	s := checkoutWith(t, objects)
	r, err := migrate.Readiness(s, "checkout", migrate.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		if f.Code == migrate.CodeConfigAppliesOnlyToSidecars {
			got = append(got, f.Object.String()+" "+f.Details["waypointForm"])
		}
	}
	sort.Strings(got)
	want := []string{
		"EnvoyFilter istio-system/mesh-wide targetRefs",
		"EnvoyFilter checkout/web-only targetRefs",
		"ProxyConfig checkout/api-concurrency none",
		"Telemetry checkout/namespace-logs targetRefs",
	}
	sort.Strings(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("CONFIG_APPLIES_ONLY_TO_SIDECARS findings (-want +got):\n%s", d)
	}
}

// TestTheTargetRefsCopyOfSidecarOnlyConfigIsProposedForTheWaypoint: with the namespace's waypoint
// named, the EnvoyFilter gets a targetRefs copy in the namespace, attached to the bound Services
// that select its pods
// (a valid Istio object: it decodes strictly into its istio.io/api type); the namespace-wide
// Telemetry, which a waypoint applies itself, and the ProxyConfig, which no waypoint carries, none.
func TestTheTargetRefsCopyOfSidecarOnlyConfigIsProposedForTheWaypoint(t *testing.T) {
	objects := `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: web-only, namespace: checkout}
spec:
  workloadSelector: {labels: {app: web}}
  configPatches: [{applyTo: HTTP_FILTER, match: {context: SIDECAR_INBOUND}, patch: {operation: INSERT_BEFORE, value: {name: envoy.filters.http.lua}}}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: namespace-logs, namespace: checkout}
spec: {accessLogging: [{providers: [{name: envoy}]}]}
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: api-concurrency, namespace: checkout}
spec: {selector: {matchLabels: {app: api}}, concurrency: 2}
`
	s := checkoutWith(t, objects)
	r, err := migrate.Readiness(s, "checkout", migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{Name: "waypoint"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, p := range r.Proposals {
		switch p.For.Kind {
		case "EnvoyFilter", "Telemetry", "ProxyConfig":
			got[p.For.String()] = p.Object
		}
	}
	if len(got) != 1 || got["EnvoyFilter checkout/web-only"] == nil {
		t.Fatalf("proposals for %v, want the EnvoyFilter's only (a waypoint applies namespace-wide Telemetry itself; none carries a ProxyConfig)", keys(got))
	}
	// A selector's copy attaches to the bound Services that select its workloads; a namespace-wide
	// object's to the namespace's waypoint.
	wantTargets := map[string]string{
		"EnvoyFilter checkout/web-only":     `"targetRefs":[{"kind":"Service","name":"web"}]`,
		"Telemetry checkout/namespace-logs": `"targetRefs":[{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"waypoint"}]`,
	}
	decoders := map[string]proto.Message{"EnvoyFilter checkout/web-only": &networkingv1alpha3.EnvoyFilter{}, "Telemetry checkout/namespace-logs": &telemetryv1.Telemetry{}}
	for name, obj := range got {
		spec, _ := json.Marshal(obj["spec"])
		if err := (protojson.UnmarshalOptions{}).Unmarshal(spec, decoders[name]); err != nil {
			t.Errorf("the copy of %s is no valid %s: %v\n%s", name, obj["kind"], err, spec)
		}
		if strings.Contains(string(spec), "elector") || !strings.Contains(string(spec), wantTargets[name]) {
			t.Errorf("the copy of %s is not attached to the waypoint by targetRefs alone: %s", name, spec)
		}
		md, _ := obj["metadata"].(map[string]any)
		if md["namespace"] != "checkout" {
			t.Errorf("the copy of %s is in namespace %v, want checkout", name, md["namespace"])
		}
	}
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestAnEnvoyFilterGetsNoWaypointCopyFromAnIstiodThatAppliesNoneToWaypoints: before 1.27 istiod
// applies no EnvoyFilter to a waypoint, so the finding says to upgrade first and nothing is proposed.
func TestAnEnvoyFilterGetsNoWaypointCopyFromAnIstiodThatAppliesNoneToWaypoints(t *testing.T) {
	filter := "apiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\nmetadata: {name: web-only, namespace: checkout}\nspec: {workloadSelector: {labels: {app: web}}}\n"
	s := checkoutWith(t, filter)
	for i := range s.Revisions {
		s.Revisions[i].Version = mesh.MustParseVersion("1.26.3")
	}
	r, err := migrate.Readiness(s, "checkout", migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{Name: "waypoint"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Proposals {
		if p.For.Kind == "EnvoyFilter" {
			t.Errorf("a copy of %s is proposed for istiod 1.26, which applies no EnvoyFilter to waypoints", p.For)
		}
	}
	found := false
	for _, f := range r.Findings {
		if f.Code == migrate.CodeConfigAppliesOnlyToSidecars && f.Object.Name == "web-only" {
			found = true
			if f.Details["waypointForm"] != "none" || !strings.Contains(f.Remedy, "1.27") {
				t.Errorf("finding %+v: want waypointForm none and a remedy naming 1.27", f)
			}
		}
	}
	if !found {
		t.Error("the EnvoyFilter is not named")
	}
}

// checkoutWith observes testdata/base.yaml and the checkout namespace with objects added.
func checkoutWith(t *testing.T, objects string) *mesh.Snapshot {
	t.Helper()
	var in strings.Builder
	for _, f := range []string{"testdata/base.yaml", "testdata/migrate/checkout.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(b)
		in.WriteString("\n---\n")
	}
	in.WriteString(objects)
	s, err := observe.YAML(context.Background(), "checkout+objects", strings.NewReader(in.String()), observe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
