package observe

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// What namespace migration reads beyond the upgrade's needs: the Services of mesh namespaces (for
// waypoints and routes) and the observability configuration that moving to ambient can break
// (PromQL queries and scrape endpoints). Only the extracted strings are kept, never whole objects.

// dashboardLabel is the label Grafana's dashboard sidecar (and kube-prometheus-stack) looks for on
// ConfigMaps by default.
const dashboardLabel = "grafana_dashboard"

// dashboardPageSize caps pages of dashboard ConfigMaps: each can hold a large JSON document.
const dashboardPageSize int64 = 50

// migrationParts collects the objects above. Its zero value is ready to use.
type migrationParts struct {
	services []mesh.Service
	queries  []mesh.TelemetryQuery
	scrapes  []mesh.ScrapeTarget
}

// addServiceEverywhere takes every Service: the tag Services the upgrade reads, and the compact
// Service for migration.
func (b *builder) addServiceEverywhere(s *corev1.Service) {
	b.addService(s)
	svc := mesh.Service{Namespace: s.Namespace, Name: s.Name, Selector: copyMap(s.Spec.Selector)}
	labels := map[string]string{}
	for _, k := range mesh.ServiceLabels {
		if v, ok := s.Labels[k]; ok {
			labels[k] = v
		}
	}
	svc.Labels = copyMap(labels)
	for _, p := range s.Spec.Ports {
		sp := mesh.ServicePort{Name: p.Name, Port: p.Port, Protocol: string(p.Protocol)}
		if p.TargetPort.String() != "0" {
			sp.TargetPort = p.TargetPort.String()
		}
		if p.AppProtocol != nil {
			sp.AppProtocol = *p.AppProtocol
		}
		svc.Ports = append(svc.Ports, sp)
	}
	b.mig.services = append(b.mig.services, svc)
}

// finish keeps the Services of namespaces that are in the mesh (a mesh label, or pods with a
// sidecar or in ambient) and Services that name a waypoint, and sorts every list.
func (m *migrationParts) finish(s *mesh.Snapshot) {
	inMesh := map[string]bool{}
	for _, n := range s.Namespaces {
		if len(n.Labels) > 0 || len(n.Pods.Sidecar) > 0 || n.Pods.AmbientEnabled+n.Pods.AmbientPending+n.Pods.AmbientMissing > 0 {
			inMesh[n.Name] = true
		}
	}
	for _, svc := range m.services {
		if _, named := svc.Labels[mesh.LabelUseWaypoint]; inMesh[svc.Namespace] || named {
			s.Services = append(s.Services, svc)
		}
	}
	sort.Slice(s.Services, func(i, j int) bool { return s.Services[i].Ref().Less(s.Services[j].Ref()) })
	s.TelemetryQueries = append(s.TelemetryQueries, m.queries...)
	sort.SliceStable(s.TelemetryQueries, func(i, j int) bool {
		a, b := s.TelemetryQueries[i], s.TelemetryQueries[j]
		if a.Object != b.Object {
			return a.Object.Less(b.Object)
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Expr < b.Expr
	})
	s.ScrapeTargets = append(s.ScrapeTargets, m.scrapes...)
	sort.SliceStable(s.ScrapeTargets, func(i, j int) bool {
		a, b := s.ScrapeTargets[i], s.ScrapeTargets[j]
		if a.Object != b.Object {
			return a.Object.Less(b.Object)
		}
		return a.Port+" "+a.Path < b.Port+" "+b.Path
	})
}

func refOf(kind string, u *unstructured.Unstructured) mesh.ObjectRef {
	return mesh.ObjectRef{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// exprOf reads a PromQL expression that may be written as a string or (prometheus-operator's
// IntOrString) a number.
func exprOf(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return ""
}

func (b *builder) addQuery(q mesh.TelemetryQuery) {
	if q.Expr != "" {
		b.mig.queries = append(b.mig.queries, q)
	}
}

// addPrometheusRule reads spec.groups[].rules[] (monitoring.coreos.com/v1).
func (b *builder) addPrometheusRule(u *unstructured.Unstructured) {
	ref := refOf("PrometheusRule", u)
	for _, g := range listOf(mapOf(u.Object["spec"])["groups"]) {
		for _, r := range listOf(mapOf(g)["rules"]) {
			rule := mapOf(r)
			q := mesh.TelemetryQuery{Object: ref, Expr: exprOf(rule["expr"])}
			if a := strOf(rule["alert"]); a != "" {
				q.Use, q.Name = mesh.TelemetryAlert, a
			} else {
				q.Use, q.Name = mesh.TelemetryRecord, strOf(rule["record"])
			}
			b.addQuery(q)
		}
	}
}

// addMonitor reads the endpoints of a PodMonitor (podMetricsEndpoints) or ServiceMonitor
// (endpoints).
func (b *builder) addMonitor(kind string, u *unstructured.Unstructured) {
	spec := mapOf(u.Object["spec"])
	base := mesh.ScrapeTarget{Object: refOf(kind, u), Selector: selectorOf(mapOf(spec["selector"]))}
	ns := mapOf(spec["namespaceSelector"])
	base.AnyNamespace, _ = ns["any"].(bool)
	base.Namespaces = stringsOf(ns["matchNames"])
	field := "endpoints"
	if kind == "PodMonitor" {
		field = "podMetricsEndpoints"
	}
	for _, e := range listOf(spec[field]) {
		ep := mapOf(e)
		t := base
		t.Namespaces = append([]string(nil), base.Namespaces...)
		sort.Strings(t.Namespaces)
		t.Path = strOf(ep["path"])
		for _, k := range []string{"port", "targetPort", "portNumber"} {
			if p := exprOf(ep[k]); p != "" {
				t.Port = p
				break
			}
		}
		b.mig.scrapes = append(b.mig.scrapes, t)
	}
}

func selectorOf(m map[string]any) *mesh.LabelSelector {
	if m == nil {
		return nil
	}
	sel := &mesh.LabelSelector{}
	for k, v := range mapOf(m["matchLabels"]) {
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
		sel.MatchLabels[k] = strOf(v)
	}
	for _, e := range listOf(m["matchExpressions"]) {
		em := mapOf(e)
		sel.MatchExpressions = append(sel.MatchExpressions, mesh.SelectorTerm{Key: strOf(em["key"]), Operator: strOf(em["operator"]), Values: stringsOf(em["values"])})
	}
	return sel
}

// addDashboardConfigMap reads every JSON document of a ConfigMap labelled grafana_dashboard.
func (b *builder) addDashboardConfigMap(cm *corev1.ConfigMap) {
	if _, ok := cm.Labels[dashboardLabel]; !ok {
		return
	}
	ref := mesh.ObjectRef{Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name}
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.addDashboardJSON(ref, k, cm.Data[k])
	}
}

// addGrafanaDashboard reads spec.json of a grafana-operator GrafanaDashboard. Dashboards given as
// gzipJson, url, configMapRef or grafanaCom are not read.
func (b *builder) addGrafanaDashboard(u *unstructured.Unstructured) {
	b.addDashboardJSON(refOf("GrafanaDashboard", u), "", strOf(mapOf(u.Object["spec"])["json"]))
}

// addDashboardJSON collects every "expr" (panel targets) and prometheus template variable query of
// a dashboard. A document that is not JSON is left alone: a ConfigMap may hold other files.
func (b *builder) addDashboardJSON(ref mesh.ObjectRef, key, doc string) {
	var v any
	if strings.TrimSpace(doc) == "" || json.Unmarshal([]byte(doc), &v) != nil {
		return
	}
	prefix := key
	if t := strOf(mapOf(v)["title"]); t != "" {
		prefix = t
	}
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch x := v.(type) {
		case map[string]any:
			if t := strOf(x["title"]); t != "" && where != "" {
				where = prefix + " / " + t
			} else if where == "" {
				where = prefix
			}
			if e := exprOf(x["expr"]); e != "" {
				name := where
				if id := strOf(x["refId"]); id != "" {
					name += " [" + id + "]"
				}
				b.addQuery(mesh.TelemetryQuery{Object: ref, Use: mesh.TelemetryPanel, Name: name, Expr: e})
			}
			if strOf(x["type"]) == "query" && x["name"] != nil {
				q := x["query"]
				if m, ok := q.(map[string]any); ok {
					q = m["query"]
				}
				b.addQuery(mesh.TelemetryQuery{Object: ref, Use: mesh.TelemetryPanel, Name: prefix + " / variable " + strOf(x["name"]), Expr: exprOf(q)})
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k != "expr" {
					walk(x[k], where)
				}
			}
		case []any:
			for _, e := range x {
				walk(e, where)
			}
		}
	}
	walk(v, "")
}

// addAnalysisTemplate reads spec.metrics[].provider.prometheus.query of an Argo Rollouts
// AnalysisTemplate or ClusterAnalysisTemplate.
func (b *builder) addAnalysisTemplate(kind string, u *unstructured.Unstructured) {
	for _, m := range listOf(mapOf(u.Object["spec"])["metrics"]) {
		mm := mapOf(m)
		prom := mapOf(mapOf(mm["provider"])["prometheus"])
		b.addQuery(mesh.TelemetryQuery{Object: refOf(kind, u), Use: mesh.TelemetryAnalysis, Name: strOf(mm["name"]), Expr: exprOf(prom["query"])})
	}
}

// addScaledObject reads the prometheus triggers of a KEDA ScaledObject.
func (b *builder) addScaledObject(u *unstructured.Unstructured) {
	for i, t := range listOf(mapOf(u.Object["spec"])["triggers"]) {
		tm := mapOf(t)
		if strOf(tm["type"]) != "prometheus" {
			continue
		}
		name := strOf(tm["name"])
		if name == "" {
			name = fmt.Sprintf("triggers[%d]", i)
		}
		b.addQuery(mesh.TelemetryQuery{Object: refOf("ScaledObject", u), Use: mesh.TelemetryScaler, Name: name, Expr: exprOf(mapOf(tm["metadata"])["query"])})
	}
}

// addMetricTemplate reads a Flagger MetricTemplate whose provider is Prometheus (the default).
func (b *builder) addMetricTemplate(u *unstructured.Unstructured) {
	spec := mapOf(u.Object["spec"])
	if t := strOf(mapOf(spec["provider"])["type"]); t != "" && t != "prometheus" {
		return
	}
	b.addQuery(mesh.TelemetryQuery{Object: refOf("MetricTemplate", u), Use: mesh.TelemetryMetricTemplate, Name: u.GetName(), Expr: exprOf(spec["query"])})
}
