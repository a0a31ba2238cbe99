package migrate

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// What a move to ambient changes in Istio's telemetry:
//
//   - ztunnel emits TCP metrics only (istio_tcp_connections_opened/closed, istio_tcp_sent/received_bytes,
//     ...), from both ends: reporter="source" on the client's node and reporter="destination" on the
//     server's (istio/ztunnel src/proxy/metrics.rs and src/proxy/inbound.rs at 62d8265).
//   - HTTP metrics (istio_requests_total, istio_request_duration_milliseconds, istio_request_bytes,
//     istio_response_bytes, the gRPC message counters) come only from a waypoint, which reports them
//     once, as a gateway (stats.Reporter_SERVER_GATEWAY in istio/istio
//     pilot/pkg/model/telemetry.go@release-1.31): reporter="waypoint".
//   - Merged metrics (the sidecar agent serving application and Envoy metrics on :15020
//     /stats/prometheus) end with the sidecar.
//   - A sidecar hop gives two spans (client and server); a waypoint gives one.

// TelemetryOptions tune LintTelemetry. The zero value is ready to use.
type TelemetryOptions struct {
	// Waypoint is the waypoint the caller will create for the namespace, as in ReadinessOptions.
	Waypoint *WaypointRef
}

// TelemetryReport is what LintTelemetry found.
type TelemetryReport struct {
	Namespace string `json:"namespace"`
	// Findings name each query or monitor that the migration breaks, sorted.
	Findings []plan.Finding `json:"findings,omitempty"`
	// Unchecked says what the snapshot cannot show, so was not checked.
	Unchecked []string `json:"unchecked,omitempty"`
}

// LintTelemetry finds the observability configuration held in the cluster that moving namespace to
// ambient breaks: queries over Istio HTTP metrics of workloads that will have no waypoint, queries
// that filter HTTP metrics by a sidecar reporter where a waypoint will report instead, monitors that
// scrape merged metrics, and queries that count spans. A query that names no namespace is reported
// as one that may depend on it. It reads only the snapshot.
func LintTelemetry(s *mesh.Snapshot, namespace string, opts TelemetryOptions) (*TelemetryReport, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: the snapshot is nil; observe the cluster first", ErrInvalidInput)
	}
	if namespace == "" {
		return nil, fmt.Errorf("%w: no namespace given; name the namespace to migrate", ErrInvalidInput)
	}
	wv := newWaypointView(s, namespace)
	if opts.Waypoint != nil {
		w := *opts.Waypoint
		if w.Namespace == "" {
			w.Namespace = namespace
		}
		wv.planned = &w
	}
	r := lintTelemetry(s, namespace, wv)
	return &r, nil
}

func lintTelemetry(s *mesh.Snapshot, ns string, wv *waypointView) TelemetryReport {
	r := TelemetryReport{Namespace: ns}
	seen := map[string]bool{}
	add := func(f plan.Finding) {
		k := string(f.Code) + "|" + f.Object.String() + "|" + f.Message
		if !seen[k] {
			seen[k] = true
			r.Findings = append(r.Findings, f)
		}
	}
	for _, q := range s.TelemetryQueries {
		lintQuery(s, ns, wv, q, add)
	}
	for _, t := range s.ScrapeTargets {
		if !t.SelectsNamespace(ns) || !mergedMetricsEndpoint(t) {
			continue
		}
		add(plan.Finding{Code: CodeTelemetryScrapesMergedMetrics, Severity: plan.Waivable, Object: t.Object,
			Message: fmt.Sprintf("%s scrapes %s in namespace %s, the sidecar's merged metrics endpoint; ambient pods have no sidecar to serve it",
				t.Object, endpoint(t), ns),
			Remedy: "scrape the application's own metrics port, and ztunnel and waypoint pods for Istio metrics, as separate targets"})
	}
	r.Unchecked = []string{
		"pods scraped through prometheus.io annotations that sidecar injection rewrote to :15020 (merged metrics) are not in the snapshot; after the move those annotations reach the application's own port and Istio's metrics come from ztunnel and waypoints",
		"trace-based SLOs kept outside the cluster (tracing back ends, SLO services) cannot be seen; sidecars emit two spans per hop, a waypoint one",
		"queries in Grafana dashboards provisioned from files, URLs or grafana.com, and GrafanaDashboards given as gzipJson, are not read",
	}
	plan.SortFindings(r.Findings)
	return r
}

func endpoint(t mesh.ScrapeTarget) string {
	switch {
	case t.Port != "" && t.Path != "":
		return "port " + t.Port + " " + t.Path
	case t.Port != "":
		return "port " + t.Port
	}
	return t.Path
}

// mergedMetricsEndpoint: the istio-agent's merged endpoint (:15020/stats/prometheus) or Envoy's
// own (:15090, port name http-envoy-prom), both served only by the sidecar in an application pod.
func mergedMetricsEndpoint(t mesh.ScrapeTarget) bool {
	switch t.Port {
	case "15020", "15090", "http-envoy-prom":
		return true
	}
	return t.Path == "/stats/prometheus"
}

// Metric families.
func httpMetric(name string) bool {
	return name == "istio_requests_total" || strings.HasPrefix(name, "istio_request_") || strings.HasPrefix(name, "istio_response_")
}

func spanMetric(name string) bool {
	for _, p := range []string{"traces_spanmetrics_", "traces_span_metrics_", "traces_service_graph_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "calls_total"
}

// namespaceLabels are the labels that name a namespace in Istio, kube-state and span metrics.
var namespaceLabels = map[string]bool{
	"destination_workload_namespace": true, "source_workload_namespace": true, "destination_service_namespace": true,
	"namespace": true, "kubernetes_namespace": true, "exported_namespace": true, "k8s_namespace_name": true, "service_namespace": true,
}

// scope is what a selector says about the namespace.
type scope int

const (
	unscoped scope = iota // names no namespace (or a templated one)
	names                 // selects the namespace
	excludes              // cannot select the namespace
)

func lintQuery(s *mesh.Snapshot, ns string, wv *waypointView, q mesh.TelemetryQuery, add func(plan.Finding)) {
	where := fmt.Sprintf("%s %s %q", q.Object, q.Use, q.Name)
	for _, sel := range parseSelectors(q.Expr) {
		sc := selectorScope(sel, ns)
		if sc == excludes {
			continue
		}
		switch {
		case spanMetric(sel.metric):
			add(plan.Finding{Code: CodeTelemetryCountsSpans, Severity: plan.Info, Object: q.Object,
				Message: fmt.Sprintf("%s counts spans (%s); once namespace %s is in ambient a hop gives one span per waypoint instead of two from sidecars", where, sel.metric, ns),
				Remedy:  "halve expectations per hop, or count at the waypoint; check the SLO after the move"})
		case httpMetric(sel.metric):
			lintHTTPSelector(s, ns, wv, q, where, sel, sc, add)
		}
	}
}

func lintHTTPSelector(s *mesh.Snapshot, ns string, wv *waypointView, q mesh.TelemetryQuery, where string, sel selector, sc scope, add func(plan.Finding)) {
	without, with := servicesByWaypoint(s, ns, wv, sel)
	reporter := sidecarReporter(sel)
	if sc == unscoped {
		if len(without) > 0 || reporter != "" {
			add(plan.Finding{Code: CodeTelemetryMayDependOnNamespace, Severity: plan.Info, Object: q.Object,
				Message: fmt.Sprintf("%s reads %s without naming a namespace; it may depend on namespace %s, whose HTTP metrics %s after the move", where, sel.metric, ns, mayChange(without, reporter)),
				Remedy:  "scope the query with destination_workload_namespace, or check it against namespace " + ns})
		}
		return
	}
	if len(without) > 0 {
		add(plan.Finding{Code: CodeTelemetryHTTPMetricsLost, Severity: plan.Waivable, Object: q.Object,
			Message: fmt.Sprintf("%s reads %s for namespace %s, but %s will have no waypoint; ztunnel reports TCP metrics only (istio_tcp_*)", where, sel.metric, ns, strings.Join(without, ", ")),
			Remedy:  "add a waypoint for these Services, or rewrite the query over istio_tcp_* metrics"})
	}
	if reporter != "" && len(with) > 0 {
		add(plan.Finding{Code: CodeTelemetryReporterChanges, Severity: plan.Waivable, Object: q.Object,
			Message: fmt.Sprintf("%s filters %s with %s; for %s the waypoint reports these metrics as reporter=\"waypoint\"", where, sel.metric, reporter, strings.Join(with, ", ")),
			Remedy:  "match reporter=~\"destination|waypoint\" (or drop the reporter filter) before the move"})
	}
}

func mayChange(without []string, reporter string) string {
	switch {
	case len(without) > 0 && reporter != "":
		return "stop for " + strings.Join(without, ", ") + " and change reporter elsewhere"
	case len(without) > 0:
		return "stop for " + strings.Join(without, ", ")
	}
	return "change reporter to \"waypoint\""
}

// servicesByWaypoint splits the Services (or workloads) of ns the selector is about into those
// that will have no waypoint and those that will.
func servicesByWaypoint(s *mesh.Snapshot, ns string, wv *waypointView, sel selector) (without, with []string) {
	svcName := ""
	for _, m := range sel.matchers {
		if m.op != "=" {
			continue
		}
		switch m.name {
		case "destination_service_name", "destination_canonical_service", "destination_app":
			svcName = m.value
		case "destination_service":
			if h := resolveHost(s, m.value, ns); h != nil {
				svcName = h.Name
			}
		case "destination_workload":
			for _, w := range s.Workloads {
				if w.Namespace == ns && w.Name == m.value {
					if len(wv.servesWorkload(w)) > 0 {
						return nil, []string{"workload " + w.Name}
					}
					return []string{"workload " + w.Name}, nil
				}
			}
		}
	}
	for _, svc := range s.Services {
		if svc.Namespace != ns || (svcName != "" && svc.Name != svcName) {
			continue
		}
		if _, ok := wv.forService(svc); ok {
			with = append(with, "Service "+svc.Name)
		} else {
			without = append(without, "Service "+svc.Name)
		}
	}
	if len(without)+len(with) == 0 {
		// No Service known: the namespace label (or the option) decides.
		if _, ok := wv.forTarget(ns, nil); ok {
			return nil, []string{"namespace " + ns}
		}
		return []string{"namespace " + ns}, nil
	}
	return without, with
}

// sidecarReporter returns the reporter matcher when it cannot match "waypoint", e.g.
// reporter="destination"; "" when there is none or it does.
func sidecarReporter(sel selector) string {
	for _, m := range sel.matchers {
		if m.name != "reporter" {
			continue
		}
		if !m.accepts("waypoint") {
			return m.String()
		}
	}
	return ""
}

func selectorScope(sel selector, ns string) scope {
	sc := unscoped
	for _, m := range sel.matchers {
		if !namespaceLabels[m.name] && m.name != "destination_service" {
			continue
		}
		if templated(m.value) {
			continue
		}
		value := ns
		if m.name == "destination_service" {
			if m.op != "=" && m.op != "=~" {
				continue
			}
			// name.ns.svc.cluster.local: the second label is the namespace.
			parts := strings.Split(m.value, ".")
			if len(parts) < 2 || strings.ContainsAny(parts[1], "*|.+?()[]") {
				continue
			}
			if parts[1] != ns {
				return excludes
			}
			sc = names
			continue
		}
		if !m.accepts(value) {
			return excludes
		}
		if m.op == "=" || m.op == "=~" {
			sc = names
		}
	}
	return sc
}

func templated(v string) bool {
	return strings.Contains(v, "{{") || strings.Contains(v, "$")
}

// ---- a small PromQL selector reader ------------------------------------------------------------
// It finds vector selectors (metric{matchers}) of the metric families above without a PromQL parser:
// identifiers outside strings, and the matcher list that follows.

type matcher struct {
	name, op, value string
}

// String prints the matcher as PromQL writes it.
func (m matcher) String() string { return fmt.Sprintf("%s%s%q", m.name, m.op, m.value) }

// accepts reports whether the matcher lets a label value through (regexps are anchored, as in
// PromQL). An unparsable regexp accepts everything: the lint must not invent a finding.
func (m matcher) accepts(v string) bool {
	switch m.op {
	case "=":
		return v == m.value
	case "!=":
		return v != m.value
	case "=~", "!~":
		re, err := regexp.Compile("^(?:" + m.value + ")$")
		if err != nil {
			return true
		}
		return re.MatchString(v) == (m.op == "=~")
	}
	return true
}

type selector struct {
	metric   string
	matchers []matcher
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func parseSelectors(expr string) []selector {
	var out []selector
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			_, i = readString(expr, i)
		case c == '{':
			ms, next := readMatchers(expr, i)
			name := ""
			var rest []matcher
			for _, m := range ms {
				if m.name == "__name__" && m.op == "=" {
					name = m.value
				} else {
					rest = append(rest, m)
				}
			}
			if name != "" {
				out = append(out, selector{metric: name, matchers: rest})
			}
			i = next
		case isIdentStart(c) && (i == 0 || !isIdent(expr[i-1])):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			name := expr[i:j]
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
				k++
			}
			if httpMetric(name) || spanMetric(name) || strings.HasPrefix(name, "istio_") {
				sel := selector{metric: name}
				if k < len(expr) && expr[k] == '{' {
					sel.matchers, k = readMatchers(expr, k)
					j = k
				}
				if k >= len(expr) || expr[k] != '(' {
					out = append(out, sel)
				}
			}
			i = j
		default:
			i++
		}
	}
	return out
}

// readString reads a quoted string at expr[i] and returns its value and the index after it.
func readString(expr string, i int) (string, int) {
	q := expr[i]
	var b strings.Builder
	j := i + 1
	for j < len(expr) && expr[j] != q {
		if expr[j] == '\\' && q != '`' && j+1 < len(expr) {
			j++
			switch expr[j] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(expr[j])
			}
			j++
			continue
		}
		b.WriteByte(expr[j])
		j++
	}
	return b.String(), j + 1
}

// readMatchers reads {name op "value", ...} at expr[i] and returns the matchers and the index after
// the closing brace.
func readMatchers(expr string, i int) ([]matcher, int) {
	var out []matcher
	j := i + 1
	for j < len(expr) {
		for j < len(expr) && (expr[j] == ' ' || expr[j] == ',' || expr[j] == '\t' || expr[j] == '\n') {
			j++
		}
		if j >= len(expr) {
			break
		}
		if expr[j] == '}' {
			return out, j + 1
		}
		k := j
		for k < len(expr) && isIdent(expr[k]) {
			k++
		}
		name := expr[j:k]
		for k < len(expr) && expr[k] == ' ' {
			k++
		}
		op := ""
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(expr[k:], o) {
				op = o
				break
			}
		}
		if name == "" || op == "" {
			// Not a matcher list we understand: skip to the closing brace.
			for k < len(expr) && expr[k] != '}' {
				k++
			}
			return out, k + 1
		}
		k += len(op)
		for k < len(expr) && expr[k] == ' ' {
			k++
		}
		if k >= len(expr) || (expr[k] != '"' && expr[k] != '\'' && expr[k] != '`') {
			return out, k
		}
		value, next := readString(expr, k)
		out = append(out, matcher{name: name, op: op, value: value})
		j = next
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].name < out[b].name })
	return out, j
}
