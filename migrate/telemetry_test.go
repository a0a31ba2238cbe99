package migrate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"
)

type hit struct {
	Code   plan.Code
	Object string
}

func hits(fs []plan.Finding) []hit {
	var out []hit
	for _, f := range fs {
		out = append(out, hit{f.Code, f.Object.String()})
	}
	return out
}

func TestTelemetryLintFindsEveryPlantedProblem(t *testing.T) {
	s := observeFiles(t, "testdata/telemetry/cluster.yaml", "testdata/telemetry/planted.yaml")
	tests := []struct {
		name      string
		namespace string
		want      []hit
	}{
		{
			name:      "a namespace without a waypoint loses its HTTP metrics",
			namespace: "shop",
			want: []hit{
				{migrate.CodeTelemetryHTTPMetricsLost, "AnalysisTemplate shop/cart-success"},
				{migrate.CodeTelemetryHTTPMetricsLost, "PrometheusRule monitoring/shop-errors"},
				{migrate.CodeTelemetryHTTPMetricsLost, "ScaledObject shop/cart"},
				{migrate.CodeTelemetryScrapesMergedMetrics, "PodMonitor monitoring/envoy-stats"},
				{migrate.CodeTelemetryScrapesMergedMetrics, "ServiceMonitor shop/cart-merged"},
				{migrate.CodeTelemetryCountsSpans, "GrafanaDashboard monitoring/traces"},
				{migrate.CodeTelemetryMayDependOnNamespace, "ConfigMap monitoring/mesh-overview"},
				{migrate.CodeTelemetryMayDependOnNamespace, "MetricTemplate shop/error-rate"},
			},
		},
		{
			name:      "a namespace behind a waypoint changes reporter",
			namespace: "pay",
			want: []hit{
				{migrate.CodeTelemetryReporterChanges, "PrometheusRule monitoring/pay-latency"},
				{migrate.CodeTelemetryScrapesMergedMetrics, "PodMonitor monitoring/envoy-stats"},
				{migrate.CodeTelemetryMayDependOnNamespace, "ConfigMap monitoring/mesh-overview"},
				{migrate.CodeTelemetryMayDependOnNamespace, "MetricTemplate shop/error-rate"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := migrate.LintTelemetry(s, tc.namespace, migrate.TelemetryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, hits(r.Findings)); d != "" {
				t.Errorf("findings (-want +got):\n%s", d)
			}
			if len(r.Unchecked) == 0 {
				t.Error("the lint does not say what it cannot see")
			}
		})
	}
}

func TestTelemetryLintFindsNothingOnACleanCluster(t *testing.T) {
	s := observeFiles(t, "testdata/telemetry/cluster.yaml", "testdata/telemetry/clean.yaml")
	if len(s.TelemetryQueries) == 0 || len(s.ScrapeTargets) == 0 {
		t.Fatal("the clean fixture holds no queries or monitors; the test would prove nothing")
	}
	for _, ns := range []string{"shop", "pay"} {
		r, err := migrate.LintTelemetry(s, ns, migrate.TelemetryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Findings) > 0 {
			t.Errorf("%s: %v", ns, r.Findings)
		}
	}
}

func TestAPlannedWaypointKeepsHTTPMetrics(t *testing.T) {
	s := observeFiles(t, "testdata/telemetry/cluster.yaml", "testdata/telemetry/planted.yaml")
	r, err := migrate.LintTelemetry(s, "shop", migrate.TelemetryOptions{Waypoint: &migrate.WaypointRef{Name: "shop-waypoint"}})
	if err != nil {
		t.Fatal(err)
	}
	got := hits(r.Findings)
	for _, h := range got {
		if h.Code == migrate.CodeTelemetryHTTPMetricsLost {
			t.Errorf("HTTP metrics reported lost although a waypoint will serve shop: %v", h)
		}
	}
	want := hit{migrate.CodeTelemetryReporterChanges, "PrometheusRule monitoring/shop-errors"}
	if !cmp.Equal(true, containsHit(got, want)) {
		t.Errorf("%v not in %v", want, got)
	}
}

func containsHit(hs []hit, h hit) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

func TestQueryScoping(t *testing.T) {
	base := func(expr string) *mesh.Snapshot {
		return &mesh.Snapshot{
			Namespaces: []mesh.Namespace{{Name: "shop"}},
			Services:   []mesh.Service{{Namespace: "shop", Name: "cart", Selector: map[string]string{"app": "cart"}}},
			TelemetryQueries: []mesh.TelemetryQuery{{Object: mesh.ObjectRef{Kind: "PrometheusRule", Namespace: "m", Name: "r"},
				Use: mesh.TelemetryAlert, Name: "a", Expr: expr}},
		}
	}
	tests := []struct {
		name string
		expr string
		want []plan.Code
	}{
		{"an exact namespace matcher scopes the query", `istio_requests_total{destination_workload_namespace="shop"}`, []plan.Code{migrate.CodeTelemetryHTTPMetricsLost}},
		{"a regexp that matches the namespace scopes it", `istio_requests_total{namespace=~"sh.p|other"}`, []plan.Code{migrate.CodeTelemetryHTTPMetricsLost}},
		{"a regexp is anchored", `istio_requests_total{namespace=~"sho"}`, nil},
		{"a negative matcher excludes the namespace", `istio_requests_total{destination_workload_namespace!="shop"}`, nil},
		{"another namespace is not this one's concern", `istio_requests_total{destination_workload_namespace="billing"}`, nil},
		{"no namespace may depend on it", `sum(istio_requests_total)`, []plan.Code{migrate.CodeTelemetryMayDependOnNamespace}},
		{"__name__ selectors are read", `{__name__="istio_requests_total", destination_workload_namespace="shop"}`, []plan.Code{migrate.CodeTelemetryHTTPMetricsLost}},
		{"metric names inside strings are not selectors", `label_replace(up, "x", "istio_requests_total", "", "")`, nil},
		{"TCP metrics survive", `istio_tcp_received_bytes_total{reporter="destination",destination_workload_namespace="shop"}`, nil},
		{"functions are not metrics", `istio_requests_total_rate()`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := migrate.LintTelemetry(base(tc.expr), "shop", migrate.TelemetryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, plan.Codes(r.Findings), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("codes (-want +got):\n%s", d)
			}
		})
	}
}
