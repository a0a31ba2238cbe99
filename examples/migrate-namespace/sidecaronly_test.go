package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sidecarOnlyObjects are objects of namespace shop (the corpus state m06, whose web pods are
// labelled app=web) of each kind that acts only through a sidecar, of kinds a migration judges
// otherwise, and of an Istio kind the code has never heard of, each in the dump file kubectl would
// write for it.
var sidecarOnlyObjects = map[string]string{
	"envoyfilters.networking.istio.io.yaml": `apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: web-lua, namespace: shop}
spec:
  workloadSelector: {labels: {app: web}}
  configPatches: [{applyTo: HTTP_FILTER, patch: {operation: INSERT_BEFORE}}]
`,
	"wasmplugins.extensions.istio.io.yaml": `apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: web-auth, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  url: oci://example.invalid/auth:1
`,
	"telemetries.telemetry.istio.io.yaml": `apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: web-logs, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  accessLogging: [{providers: [{name: envoy}]}]
`,
	"proxyconfigs.networking.istio.io.yaml": `apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: web-concurrency, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  concurrency: 4
`,
	"trafficextensions.extensions.istio.io.yaml": `apiVersion: extensions.istio.io/v1alpha1
kind: TrafficExtension
metadata: {name: web-headers, namespace: shop}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: shop-waypoint}]
`,
	"workloadgroups.networking.istio.io.yaml": `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: vms, namespace: shop}
spec:
  template: {serviceAccount: vm}
`,
	"serviceentries.networking.istio.io.yaml": `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: stripe, namespace: shop}
spec: {hosts: [api.stripe.com], ports: [{number: 443, name: https, protocol: TLS}], resolution: DNS}
`,
	"destinationrules.networking.istio.io.yaml": `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: stripe-tls, namespace: shop}
spec: {host: api.stripe.com, trafficPolicy: {tls: {mode: SIMPLE}}}
`,
	"peerauthentications.security.istio.io.yaml": `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: web-ports, namespace: shop}
spec: {selector: {matchLabels: {app: web}}, mtls: {mode: STRICT}, portLevelMtls: {"8080": {mode: PERMISSIVE}}}
`,
	"requestauthentications.security.istio.io.yaml": `apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: web-jwt, namespace: shop}
spec: {selector: {matchLabels: {app: web}}, jwtRules: [{issuer: "https://issuer.example"}]}
`,
	"meshfirewalls.security.istio.io.yaml": `apiVersion: security.istio.io/v1alpha1
kind: MeshFirewall
metadata: {name: shop-edge, namespace: shop}
spec: {rules: []}
`,
}

// TestAMigrationNamesEveryObjectThatActsOnlyThroughSidecarsAndEveryKindItDoesNotKnow runs the
// example on a dump as a user would: the Sidecar (m06's), EnvoyFilter, WasmPlugin, Telemetry,
// ProxyConfig, the RequestAuthentication and the DestinationRule that originates TLS to a
// ServiceEntry host each get the finding that they stop applying; the TrafficExtension attached by
// targetRefs, the port-level PeerAuthentication (istiod converts it for ztunnel) and the
// ServiceEntry are unaffected; the WorkloadGroup (a kind the migration does not model) and the
// MeshFirewall (a kind nobody here has heard of) are named as not assessed.
func TestAMigrationNamesEveryObjectThatActsOnlyThroughSidecarsAndEveryKindItDoesNotKnow(t *testing.T) {
	dir := t.TempDir()
	src := "../../testdata/broken/m06-sidecar-egress-controls-lost/dump"
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range sidecarOnlyObjects {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(t.TempDir())
	var out bytes.Buffer
	_ = run(context.Background(), []string{"--from-dir", dir, "--namespace", "shop"}, strings.NewReader(""), &out, io.Discard)
	table := section(out.String(), "## Configuration objects")
	if table == "" {
		t.Fatalf("the runbook has no table of configuration objects:\n%s", out.String())
	}
	for _, want := range []struct{ verdict, kind, name, code string }{
		{"changes", "Sidecar.networking.istio.io", "shop/default", "SIDECAR_RESOURCE_NO_EFFECT"},
		{"changes", "EnvoyFilter.networking.istio.io", "shop/web-lua", "CONFIG_APPLIES_ONLY_TO_SIDECARS"},
		{"changes", "WasmPlugin.extensions.istio.io", "shop/web-auth", "CONFIG_APPLIES_ONLY_TO_SIDECARS"},
		{"changes", "Telemetry.telemetry.istio.io", "shop/web-logs", "CONFIG_APPLIES_ONLY_TO_SIDECARS"},
		{"changes", "ProxyConfig.networking.istio.io", "shop/web-concurrency", "CONFIG_APPLIES_ONLY_TO_SIDECARS"},
		{"unaffected", "TrafficExtension.extensions.istio.io", "shop/web-headers", ""},
		{"changes", "DestinationRule.networking.istio.io", "shop/stripe-tls", "ROUTE_NEEDS_EGRESS_WAYPOINT"},
		{"changes", "RequestAuthentication.security.istio.io", "shop/web-jwt", "POLICY_NOT_ENFORCED_WITHOUT_WAYPOINT"},
		{"unaffected", "PeerAuthentication.security.istio.io", "shop/web-ports", ""},
		{"unaffected", "ServiceEntry.networking.istio.io", "shop/stripe", ""},
		{"not-assessed", "WorkloadGroup.networking.istio.io", "shop/vms", ""},
		{"not-assessed", "MeshFirewall.security.istio.io", "shop/shop-edge", ""},
	} {
		row := rowOf(table, want.kind, want.name)
		switch {
		case row == "":
			t.Errorf("no row names %s %s:\n%s", want.kind, want.name, table)
		case !strings.HasPrefix(row, "| "+want.verdict+" |"):
			t.Errorf("%s %s: %s, want verdict %s", want.kind, want.name, row, want.verdict)
		case want.code != "" && !strings.Contains(row, want.code):
			t.Errorf("%s %s: %s, want finding %s", want.kind, want.name, row, want.code)
		}
	}
	if row := rowOf(table, "MeshFirewall.security.istio.io", "shop/shop-edge"); !strings.Contains(row, "does not know") {
		t.Errorf("the unknown kind's row does not say the kind is unknown: %s", row)
	}
}

// section returns the Markdown section that starts with heading, up to the next heading.
func section(md, heading string) string {
	i := strings.Index(md, heading)
	if i < 0 {
		return ""
	}
	rest := md[i:]
	if j := strings.Index(rest[1:], "\n## "); j >= 0 {
		return rest[:j+1]
	}
	return rest
}

// rowOf returns the table row of kind that names the object.
func rowOf(table, kind, name string) string {
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, "| "+kind+" |") && strings.Contains(line, name) {
			return line
		}
	}
	return ""
}
