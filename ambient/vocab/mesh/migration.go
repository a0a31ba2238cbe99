package mesh

// The vocabulary below serves namespace migration (package migrate): the Services a waypoint would
// serve, the status istiod writes on policies, and the observability configuration that a move to
// ambient can break. Observation fills these lists already sorted (by object, then by position).

// Service is a Kubernetes Service, cut down to what waypoint and route planning read.
type Service struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Labels keeps only ServiceLabels.
	Labels map[string]string `json:"labels,omitempty"`
	// Selector is the Service's pod selector; nil for a Service without one.
	Selector map[string]string `json:"selector,omitempty"`
	// Ports in the order the Service lists them.
	Ports []ServicePort `json:"ports,omitempty"`
}

// ServiceLabels are the Service labels a snapshot keeps: waypoint use and the marker istiod puts on
// the Services of waypoints and east-west gateways.
var ServiceLabels = []string{LabelUseWaypoint, LabelUseWaypointNamespace, LabelGatewayManaged, LabelIngressUseWaypoint}

// LabelGatewayManaged marks generated gateway and waypoint objects ("istio.io-mesh-controller" for
// waypoints).
const LabelGatewayManaged = "gateway.istio.io/managed"

// Ref names the Service.
func (s Service) Ref() ObjectRef {
	return ObjectRef{Kind: "Service", Namespace: s.Namespace, Name: s.Name}
}

// ServicePort is one port of a Service.
type ServicePort struct {
	Name string `json:"name,omitempty"`
	Port int32  `json:"port"`
	// TargetPort as written (a number or a container port name), empty when unset.
	TargetPort  string `json:"targetPort,omitempty"`
	Protocol    string `json:"protocol,omitempty"`
	AppProtocol string `json:"appProtocol,omitempty"`
}

// PolicyCondition is one status condition of an Istio object.
type PolicyCondition struct {
	// Type is ZtunnelAccepted or WaypointAccepted (istio/istio pilot/pkg/model/service.go).
	Type string `json:"type"`
	// Status is "True", "False" or "Unknown".
	Status string `json:"status"`
	// Reason: Accepted, Invalid, PartiallyInvalid, AncestorNotBound, TargetNotFound, UnsupportedValue, ...
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// Policy condition types istiod writes (istio/istio pilot/pkg/model/service.go@1.30.3 and release-1.31).
const (
	ConditionZtunnelAccepted  = "ZtunnelAccepted"
	ConditionWaypointAccepted = "WaypointAccepted"
)

// Uses of a telemetry query.
const (
	// TelemetryAlert is a PrometheusRule alerting rule.
	TelemetryAlert = "alert"
	// TelemetryRecord is a PrometheusRule recording rule.
	TelemetryRecord = "record"
	// TelemetryPanel is a Grafana dashboard query (panel target or template variable).
	TelemetryPanel = "panel"
	// TelemetryAnalysis is an Argo Rollouts AnalysisTemplate or ClusterAnalysisTemplate metric.
	TelemetryAnalysis = "analysis"
	// TelemetryScaler is a KEDA ScaledObject prometheus trigger.
	TelemetryScaler = "scaler"
	// TelemetryMetricTemplate is a Flagger MetricTemplate.
	TelemetryMetricTemplate = "metric-template"
)

// TelemetryQuery is one PromQL query held in the cluster.
type TelemetryQuery struct {
	// Object holds the query: PrometheusRule, ConfigMap (Grafana dashboard), GrafanaDashboard,
	// AnalysisTemplate, ClusterAnalysisTemplate, ScaledObject or MetricTemplate.
	Object ObjectRef `json:"object"`
	// Use is one of the Telemetry* constants.
	Use string `json:"use"`
	// Name says where in the object the query sits: the alert or record name, the dashboard and
	// panel title, the analysis metric's name, the trigger's index.
	Name string `json:"name,omitempty"`
	// Expr is the query as written (it may hold template placeholders).
	Expr string `json:"expr"`
}

// ScrapeTarget is one endpoint of a PodMonitor or ServiceMonitor.
type ScrapeTarget struct {
	// Object is the PodMonitor or ServiceMonitor.
	Object ObjectRef `json:"object"`
	// AnyNamespace is true for namespaceSelector.any; otherwise Namespaces lists matchNames, and
	// both empty means the monitor's own namespace.
	AnyNamespace bool     `json:"anyNamespace,omitempty"`
	Namespaces   []string `json:"namespaces,omitempty"`
	// Selector selects the pods (PodMonitor) or Services (ServiceMonitor).
	Selector *LabelSelector `json:"selector,omitempty"`
	// Port is the endpoint's port name or number as written (port, targetPort or portNumber).
	Port string `json:"port,omitempty"`
	// Path is the metrics path, empty for the default /metrics.
	Path string `json:"path,omitempty"`
}

// SelectsNamespace reports whether the target's namespace selection includes ns.
func (t ScrapeTarget) SelectsNamespace(ns string) bool {
	if t.AnyNamespace {
		return true
	}
	if len(t.Namespaces) == 0 {
		return t.Object.Namespace == ns
	}
	return contains(t.Namespaces, ns)
}
