package migrate_test

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
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
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns, err := os.ReadFile("testdata/migrate/checkout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := string(base) + "\n---\n" + string(ns) + "\n---\n" + objects
	s, err := observe.YAML(context.Background(), "sidecar-only", strings.NewReader(in), observe.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
