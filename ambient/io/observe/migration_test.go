package observe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

const migrationInput = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio-injection: enabled, team: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: plain}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: shop, labels: {istio.io/use-waypoint: wp, app: cart}}
spec:
  selector: {app: cart}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP, appProtocol: http}, {name: grpc, port: 9000}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: plain}
spec: {selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: v1
kind: Service
metadata: {name: opted, namespace: plain, labels: {istio.io/use-waypoint: none}}
spec: {ports: [{port: 1}]}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: cart-l7
  namespace: shop
  generation: 3
  annotations: {istio.io/dry-run: "true", other: x}
spec:
  selector: {matchLabels: {app: cart}}
  rules: [{to: [{operation: {ports: ["8080"], methods: [GET]}}], when: [{key: connection.sni, values: [x]}]}]
status:
  conditions:
  - {type: ZtunnelAccepted, status: "True", reason: UnsupportedValue, message: "ztunnel does not support HTTP attributes", observedGeneration: 3}
  - {type: WaypointAccepted, status: "False", reason: TargetNotFound, observedGeneration: 2}
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: slo, namespace: monitoring}
spec:
  groups:
  - name: g
    rules:
    - alert: CartErrors
      expr: sum(rate(istio_requests_total{reporter="destination",destination_workload_namespace="shop"}[5m])) > 1
    - record: cart:rps
      expr: sum(rate(istio_requests_total[1m]))
    - record: one
      expr: 1
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: envoy, namespace: monitoring}
spec:
  namespaceSelector: {matchNames: [shop, other]}
  selector: {matchExpressions: [{key: security.istio.io/tlsMode, operator: Exists}]}
  podMetricsEndpoints: [{path: /stats/prometheus, targetPort: 15020}]
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: app, namespace: shop}
spec:
  selector: {matchLabels: {app: cart}}
  endpoints: [{port: http-metrics}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: mesh-dash, namespace: monitoring, labels: {grafana_dashboard: "1"}}
data:
  mesh.json: |
    {"title": "Mesh", "panels": [{"title": "RPS", "targets": [{"refId": "A", "expr": "sum(rate(istio_requests_total[1m]))"}]},
     {"title": "row", "panels": [{"title": "TCP", "targets": [{"expr": "istio_tcp_connections_opened_total"}]}]}],
     "templating": {"list": [{"name": "ns", "type": "query", "query": {"query": "label_values(istio_requests_total, namespace)"}}]}}
  readme.txt: not json
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-dashboard, namespace: monitoring}
data: {x.json: '{"panels": [{"targets": [{"expr": "up"}]}]}'}
---
apiVersion: grafana.integreatly.org/v1beta1
kind: GrafanaDashboard
metadata: {name: op, namespace: monitoring}
spec: {json: '{"title": "Op", "panels": [{"title": "P", "targets": [{"expr": "istio_request_duration_milliseconds_bucket"}]}]}'}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: success, namespace: shop}
spec: {metrics: [{name: rate, provider: {prometheus: {query: 'istio_requests_total{reporter="source"}'}}}, {name: web, provider: {web: {url: x}}}]}
---
apiVersion: argoproj.io/v1alpha1
kind: ClusterAnalysisTemplate
metadata: {name: global}
spec: {metrics: [{name: p99, provider: {prometheus: {query: istio_request_duration_milliseconds_bucket}}}]}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: cart, namespace: shop}
spec: {triggers: [{type: cpu, metadata: {value: "50"}}, {type: prometheus, metadata: {query: 'sum(rate(istio_requests_total{destination_workload="cart"}[1m]))'}}]}
---
apiVersion: flagger.app/v1beta1
kind: MetricTemplate
metadata: {name: errors, namespace: shop}
spec: {provider: {type: prometheus, address: http://prom}, query: 'istio_requests_total{destination_workload_namespace="{{ namespace }}"}'}
---
apiVersion: flagger.app/v1beta1
kind: MetricTemplate
metadata: {name: dd, namespace: shop}
spec: {provider: {type: datadog}, query: x}
`

func TestPoliciesCarryTheirSpecAndStatus(t *testing.T) {
	s := mustObserve(t, migrationInput)
	if len(s.Policies) != 1 {
		t.Fatalf("policies: %+v", s.Policies)
	}
	p := s.Policies[0]
	want := mesh.Policy{
		Kind: "AuthorizationPolicy", Namespace: "shop", Name: "cart-l7", Action: "ALLOW", HasSelector: true,
		L7:          []string{"connection.sni", "methods"},
		APIVersion:  "security.istio.io/v1",
		Generation:  3,
		Annotations: map[string]string{"istio.io/dry-run": "true"},
		Spec: map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "cart"}},
			"rules": []any{map[string]any{
				"to":   []any{map[string]any{"operation": map[string]any{"ports": []any{"8080"}, "methods": []any{"GET"}}}},
				"when": []any{map[string]any{"key": "connection.sni", "values": []any{"x"}}},
			}},
		},
		Conditions: []mesh.PolicyCondition{
			{Type: "WaypointAccepted", Status: "False", Reason: "TargetNotFound", ObservedGeneration: 2},
			{Type: "ZtunnelAccepted", Status: "True", Reason: "UnsupportedValue", Message: "ztunnel does not support HTTP attributes", ObservedGeneration: 3},
		},
	}
	if d := cmp.Diff(want, p); d != "" {
		t.Errorf("policy (-want +got):\n%s", d)
	}
	if c := p.Condition(mesh.ConditionWaypointAccepted); c == nil || c.Reason != "TargetNotFound" {
		t.Errorf("Condition(WaypointAccepted) = %+v", c)
	}
}

func TestServicesOfMeshNamespacesAreKeptCompact(t *testing.T) {
	s := mustObserve(t, migrationInput)
	want := []mesh.Service{
		{Namespace: "plain", Name: "opted", Labels: map[string]string{"istio.io/use-waypoint": "none"}, Ports: []mesh.ServicePort{{Port: 1}}},
		{Namespace: "shop", Name: "cart", Labels: map[string]string{"istio.io/use-waypoint": "wp"}, Selector: map[string]string{"app": "cart"},
			Ports: []mesh.ServicePort{{Name: "http", Port: 80, TargetPort: "8080", Protocol: "TCP", AppProtocol: "http"}, {Name: "grpc", Port: 9000}}},
	}
	if d := cmp.Diff(want, s.Services); d != "" {
		t.Errorf("services: those of mesh namespaces and those naming a waypoint (-want +got):\n%s", d)
	}
}

func TestTelemetryQueriesAndScrapeTargetsAreExtracted(t *testing.T) {
	s := mustObserve(t, migrationInput)
	q := func(kind, ns, name, use, where, expr string) mesh.TelemetryQuery {
		return mesh.TelemetryQuery{Object: mesh.ObjectRef{Kind: kind, Namespace: ns, Name: name}, Use: use, Name: where, Expr: expr}
	}
	wantQueries := []mesh.TelemetryQuery{
		q("ClusterAnalysisTemplate", "", "global", mesh.TelemetryAnalysis, "p99", "istio_request_duration_milliseconds_bucket"),
		q("ConfigMap", "monitoring", "mesh-dash", mesh.TelemetryPanel, "Mesh / RPS [A]", "sum(rate(istio_requests_total[1m]))"),
		q("ConfigMap", "monitoring", "mesh-dash", mesh.TelemetryPanel, "Mesh / TCP", "istio_tcp_connections_opened_total"),
		q("ConfigMap", "monitoring", "mesh-dash", mesh.TelemetryPanel, "Mesh / variable ns", "label_values(istio_requests_total, namespace)"),
		q("GrafanaDashboard", "monitoring", "op", mesh.TelemetryPanel, "Op / P", "istio_request_duration_milliseconds_bucket"),
		q("PrometheusRule", "monitoring", "slo", mesh.TelemetryAlert, "CartErrors", `sum(rate(istio_requests_total{reporter="destination",destination_workload_namespace="shop"}[5m])) > 1`),
		q("PrometheusRule", "monitoring", "slo", mesh.TelemetryRecord, "cart:rps", "sum(rate(istio_requests_total[1m]))"),
		q("PrometheusRule", "monitoring", "slo", mesh.TelemetryRecord, "one", "1"),
		q("AnalysisTemplate", "shop", "success", mesh.TelemetryAnalysis, "rate", `istio_requests_total{reporter="source"}`),
		q("MetricTemplate", "shop", "errors", mesh.TelemetryMetricTemplate, "errors", `istio_requests_total{destination_workload_namespace="{{ namespace }}"}`),
		q("ScaledObject", "shop", "cart", mesh.TelemetryScaler, "triggers[1]", `sum(rate(istio_requests_total{destination_workload="cart"}[1m]))`),
	}
	if d := cmp.Diff(wantQueries, s.TelemetryQueries); d != "" {
		t.Errorf("queries (-want +got):\n%s", d)
	}
	wantScrapes := []mesh.ScrapeTarget{
		{Object: mesh.ObjectRef{Kind: "PodMonitor", Namespace: "monitoring", Name: "envoy"}, Namespaces: []string{"other", "shop"},
			Selector: &mesh.LabelSelector{MatchExpressions: []mesh.SelectorTerm{{Key: "security.istio.io/tlsMode", Operator: "Exists"}}},
			Port:     "15020", Path: "/stats/prometheus"},
		{Object: mesh.ObjectRef{Kind: "ServiceMonitor", Namespace: "shop", Name: "app"}, Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}, Port: "http-metrics"},
	}
	if d := cmp.Diff(wantScrapes, s.ScrapeTargets); d != "" {
		t.Errorf("scrape targets (-want +got):\n%s", d)
	}
}

func TestMigrationInputGivesTheSameSnapshotLiveAndOffline(t *testing.T) {
	ctx := context.Background()
	offline := mustObserve(t, migrationInput)
	objs, err := observe.Decode("migration.yaml", strings.NewReader(migrationInput))
	if err != nil {
		t.Fatal(err)
	}
	live, err := observe.Live(ctx, newFakeCluster(t, objs, nil), observe.Options{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(offline, live, ignoreObservation); d != "" {
		t.Errorf("live differs from offline (-offline +live):\n%s", d)
	}
	enc, err := mesh.EncodeSnapshot(live)
	if err != nil {
		t.Fatal(err)
	}
	back, err := mesh.DecodeSnapshot(enc)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(live, back, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("snapshot does not survive encoding (-live +decoded):\n%s", d)
	}
}

func TestTelemetryKindsThatAreNotServedAreSkipped(t *testing.T) {
	optional := map[string]bool{"monitoring.coreos.com": true, "grafana.integreatly.org": true, "argoproj.io": true, "keda.sh": true, "flagger.app": true}
	fail := func(gvk schema.GroupVersionKind) error {
		if optional[gvk.Group] {
			return noMatch(gvk.Group)
		}
		return nil
	}
	s, err := observe.Live(context.Background(), newFakeCluster(t, demoObjects(t), fail), observe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"argoproj.io/AnalysisTemplate", "argoproj.io/ClusterAnalysisTemplate", "flagger.app/MetricTemplate",
		"grafana.integreatly.org/GrafanaDashboard", "keda.sh/ScaledObject", "monitoring.coreos.com/PodMonitor",
		"monitoring.coreos.com/PrometheusRule", "monitoring.coreos.com/ServiceMonitor"}
	if d := cmp.Diff(want, s.Observation.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
}
