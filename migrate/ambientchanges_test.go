package migrate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
)

// sidecarNamespace is namespace orders on sidecars (istio-injection=enabled) with Deployment api,
// whose pods run an injected proxy; extra is appended to it.
const sidecarNamespace = `apiVersion: v1
kind: Namespace
metadata: {name: orders, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: orders}
spec: {selector: {app: api}, ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: api-5d9f-abcde
  namespace: orders
  labels: {app: api, pod-template-hash: 5d9f}
  annotations: {sidecar.istio.io/status: '{"revision":"default"}'%s}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: api-5d9f, uid: 00000000-0000-0000-0000-0000000000a1, controller: true}]
spec:
  nodeName: node-a
  containers:
  - name: api
    image: registry.k8s.io/pause:3.10
    command: [%s]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}}
  - {name: istio-proxy, image: docker.io/istio/proxyv2:1.30.3}
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
`

func readinessOf(t *testing.T, annotations, command, extra string) *migrate.Report {
	t.Helper()
	doc := fmt.Sprintf(sidecarNamespace, annotations, command) + "---\n" + extra
	f := filepath.Join(t.TempDir(), "orders.yaml")
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := migrate.Readiness(observeFiles(t, f), "orders", migrate.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWhatAmbientChangesForTheNamespace(t *testing.T) {
	tests := []struct {
		name                          string
		annotations, command, objects string
		code                          plan.Code
		object                        string // "" : the code must not be reported
		sev                           plan.Severity
	}{
		{name: "a NetworkPolicy admitting only the application port blocks HBONE and stops the migration",
			objects: `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: api, namespace: orders}
spec:
  podSelector: {matchLabels: {app: api}}
  ingress: [{ports: [{port: 8080}]}]`,
			code: plan.CodeNetworkPolicyBlocksHBONE, object: "NetworkPolicy orders/api", sev: plan.Blocking},
		{name: "a NetworkPolicy of another namespace does not concern it",
			objects: `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: api, namespace: monitoring}
spec:
  podSelector: {}
  ingress: [{ports: [{port: 8080}]}]`,
			code: plan.CodeNetworkPolicyBlocksHBONE},
		{name: "a default-deny policy blocks the probes of a workload with an HTTP probe",
			objects: `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: orders}
spec: {podSelector: {}, policyTypes: [Ingress]}`,
			code: plan.CodeNetworkPolicyBlocksAmbientProbes, object: "Deployment orders/api", sev: plan.Blocking},
		{name: "an egress-only policy isolates nothing for ingress",
			objects: `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress, namespace: orders}
spec: {podSelector: {}, policyTypes: [Egress]}`,
			code: plan.CodeNetworkPolicyBlocksAmbientProbes},
		{name: "sidecar capture annotations are reported as ignored",
			annotations: `, traffic.sidecar.istio.io/excludeOutboundPorts: "5432"`,
			code:        migrate.CodeCaptureExclusionIgnoredInAmbient, object: "Deployment orders/api", sev: plan.Waivable},
		{name: "a call of quitquitquit in the command is reported",
			command: `sh, -c, "work && curl -X POST localhost:15020/quitquitquit"`,
			code:    migrate.CodeWorkloadCallsSidecarAgent, object: "Deployment orders/api", sev: plan.Waivable},
		{name: "a command without agent calls is fine",
			command: `sh, -c, "curl http://localhost:8080/healthz"`,
			code:    migrate.CodeWorkloadCallsSidecarAgent},
		{name: "a Sidecar resource of the namespace has no effect in ambient",
			objects: `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: orders}
spec: {outboundTrafficPolicy: {mode: REGISTRY_ONLY}}`,
			code: migrate.CodeSidecarResourceNoEffect, object: "Sidecar orders/default", sev: plan.Waivable},
		{name: "a resolution NONE ServiceEntry is fine from istiod 1.28",
			objects: `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: vm, namespace: orders}
spec: {hosts: [vm.example], addresses: [10.0.0.5/32], resolution: NONE, ports: [{number: 80, name: http, protocol: HTTP}]}`,
			code: migrate.CodeServiceEntryResolutionNoneUnsupported},
		{name: "an HTTPRoute of an ingress Gateway to a Service without policies needing a waypoint is fine",
			objects: `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: public, namespace: monitoring}
spec: {gatewayClassName: istio, listeners: [{name: http, port: 80, protocol: HTTP}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: monitoring}
spec:
  parentRefs: [{name: public}]
  rules: [{backendRefs: [{name: api, namespace: orders, port: 80}]}]`,
			code: migrate.CodeIngressBypassesWaypoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.command
			if cmd == "" {
				cmd = "/app"
			}
			r := readinessOf(t, tt.annotations, cmd, tt.objects)
			var got []plan.Finding
			for _, f := range r.Findings {
				if f.Code == tt.code {
					got = append(got, f)
				}
			}
			if tt.object == "" {
				if len(got) > 0 {
					t.Fatalf("want no %s, got %v", tt.code, got)
				}
				return
			}
			if len(got) != 1 || got[0].Object.String() != tt.object || got[0].Severity != tt.sev {
				t.Fatalf("want one %s %s on %s, got %v", tt.sev, tt.code, tt.object, got)
			}
		})
	}
}

// TestOnlyAResolutionNoneServiceEntryWithAddressesFailsBeforeIstio128: on the corpus mesh whose
// istiod predates the passthrough fix, the ServiceEntry with addresses (a VIP without endpoints) is
// blocking; the same entry without addresses, an allow-list of hosts, gets no VIP and passes the
// connection through, so it is not reported.
func TestOnlyAResolutionNoneServiceEntryWithAddressesFailsBeforeIstio128(t *testing.T) {
	const dump = "../testdata/broken/m08-serviceentry-none-no-healthy-upstream/dump"
	for _, withAddresses := range []bool{true, false} {
		t.Run(fmt.Sprintf("addresses %t", withAddresses), func(t *testing.T) {
			s, err := observe.Dir(context.Background(), dump, observe.Options{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for i := range s.IstioConfig {
				if c := &s.IstioConfig[i]; c.Kind == "ServiceEntry" && c.Spec["resolution"] == "NONE" {
					found = true
					if !withAddresses {
						delete(c.Spec, "addresses")
					}
				}
			}
			if !found {
				t.Fatal("the corpus dump has no resolution NONE ServiceEntry")
			}
			r, err := migrate.Readiness(s, "shop", migrate.ReadinessOptions{})
			if err != nil {
				t.Fatal(err)
			}
			reported := false
			for _, f := range r.Findings {
				reported = reported || f.Code == migrate.CodeServiceEntryResolutionNoneUnsupported
			}
			if reported != withAddresses {
				t.Errorf("with addresses %t: %s reported %t, want %t", withAddresses, migrate.CodeServiceEntryResolutionNoneUnsupported, reported, withAddresses)
			}
		})
	}
}
