package migrate

import (
	"sort"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Where a Service's waypoint comes from.
const (
	// FromService: the Service's own istio.io/use-waypoint label.
	FromService = "service"
	// FromNamespace: the namespace's istio.io/use-waypoint label.
	FromNamespace = "namespace"
	// FromOptions: the waypoint ReadinessOptions says the caller will create and label the namespace with.
	FromOptions = "options"
	// FromOptOut: istio.io/use-waypoint=none on the Service.
	FromOptOut = "opt-out"
)

// Waypoint traffic types (istio.io/waypoint-for; "service" when unset).
const (
	trafficService  = "service"
	trafficWorkload = "workload"
	trafficAll      = "all"
)

// waypointView answers which waypoint serves a Service or workload, following
// fetchWaypointForTarget, fetchWaypointForService and fetchWaypointForWorkload in istio/istio
// pilot/pkg/serviceregistry/ambient/waypoints.go@release-1.31: the object's istio.io/use-waypoint
// label beats the namespace's; "none" opts out; istio.io/use-waypoint-namespace changes the
// namespace; a waypoint must accept the traffic type (service by default).
type waypointView struct {
	s *mesh.Snapshot
	// planned is the waypoint to assume for namespace planNS when its namespace has no label.
	planNS  string
	planned *WaypointRef
}

// WaypointRef names a waypoint Gateway.
type WaypointRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// For is istio.io/waypoint-for: service (default), workload, all or none.
	For string `json:"for,omitempty"`
}

// String prints "namespace/name".
func (w WaypointRef) String() string { return w.Namespace + "/" + w.Name }

func newWaypointView(s *mesh.Snapshot, planNS string) *waypointView {
	return &waypointView{s: s, planNS: planNS}
}

func (wv *waypointView) namespace(name string) *mesh.Namespace {
	for i := range wv.s.Namespaces {
		if wv.s.Namespaces[i].Name == name {
			return &wv.s.Namespaces[i]
		}
	}
	return nil
}

// gateway finds a waypoint Gateway in the snapshot.
func (wv *waypointView) gateway(ns, name string) *mesh.Gateway {
	for i := range wv.s.Gateways {
		g := &wv.s.Gateways[i]
		if g.Kind == mesh.GatewayKindAPI && g.Waypoint && g.Namespace == ns && g.Name == name {
			return g
		}
	}
	return nil
}

// useWaypoint reads the label pair of an object: the named waypoint, whether it opts out, and
// whether it has a label at all.
func useWaypoint(labels map[string]string, defaultNS string) (ref WaypointRef, none, has bool) {
	v, ok := labels[mesh.LabelUseWaypoint]
	if !ok {
		return WaypointRef{}, false, false
	}
	if v == "none" {
		return WaypointRef{}, true, true
	}
	ns := defaultNS
	if o, ok := labels[mesh.LabelUseWaypointNamespace]; ok {
		ns = o
	}
	return WaypointRef{Namespace: ns, Name: v}, false, true
}

// resolved is the waypoint of one target.
type resolved struct {
	ref    WaypointRef
	from   string
	exists bool
}

// forTarget resolves the waypoint an object with these labels in namespace ns uses, before the
// traffic-type check.
func (wv *waypointView) forTarget(ns string, labels map[string]string) (resolved, bool) {
	if ref, none, has := useWaypoint(labels, ns); has {
		if none {
			return resolved{from: FromOptOut}, false
		}
		return wv.complete(resolved{ref: ref, from: FromService}), true
	}
	if n := wv.namespace(ns); n != nil {
		if ref, none, has := useWaypoint(n.Labels, ns); has {
			if none {
				return resolved{from: FromOptOut}, false
			}
			return wv.complete(resolved{ref: ref, from: FromNamespace}), true
		}
	}
	if wv.planned != nil && ns == wv.planNS {
		return wv.complete(resolved{ref: *wv.planned, from: FromOptions}), true
	}
	return resolved{}, false
}

func (wv *waypointView) complete(r resolved) resolved {
	if g := wv.gateway(r.ref.Namespace, r.ref.Name); g != nil {
		r.exists = true
		if r.ref.For == "" {
			r.ref.For = g.WaypointFor
		}
	}
	if r.ref.For == "" {
		r.ref.For = trafficService
	}
	return r
}

// forService is the waypoint of a Service, or false when it has none.
func (wv *waypointView) forService(svc mesh.Service) (resolved, bool) {
	if svc.Labels[mesh.LabelGatewayManaged] == "istio.io-mesh-controller" || svc.Labels[mesh.LabelGatewayManaged] == "istio.io-eastwest-controller" {
		return resolved{}, false // a waypoint or east-west gateway has no waypoint of its own
	}
	r, ok := wv.forTarget(svc.Namespace, svc.Labels)
	if !ok || (r.ref.For != trafficService && r.ref.For != trafficAll) {
		return r, false
	}
	return r, true
}

// forWorkload is the waypoint of a workload's pods (workload-addressed traffic), or false.
func (wv *waypointView) forWorkload(w mesh.Workload) (resolved, bool) {
	r, ok := wv.forTarget(w.Namespace, w.Labels)
	if !ok || (r.ref.For != trafficWorkload && r.ref.For != trafficAll) {
		return r, false
	}
	return r, true
}

// servesWorkload lists the waypoints that will stand in front of a workload: its own (workload
// traffic) and those of the Services that select it.
func (wv *waypointView) servesWorkload(w mesh.Workload) []string {
	set := map[string]bool{}
	if r, ok := wv.forWorkload(w); ok {
		set[r.ref.String()] = true
	}
	for _, svc := range wv.s.Services {
		if svc.Namespace != w.Namespace || len(svc.Selector) == 0 || !subset(svc.Selector, w.Labels) {
			continue
		}
		if r, ok := wv.forService(svc); ok {
			set[r.ref.String()] = true
		}
	}
	return sortedKeys(set)
}

// forPolicy lists the waypoints in front of the workloads a selector (or, namespaceWide, the whole
// namespace) picks.
func (wv *waypointView) forPolicy(ns string, matchLabels map[string]string, namespaceWide bool) []string {
	set := map[string]bool{}
	for _, w := range wv.s.Workloads {
		if w.Namespace != ns || (!namespaceWide && !subset(matchLabels, w.Labels)) {
			continue
		}
		for _, wp := range wv.servesWorkload(w) {
			set[wp] = true
		}
	}
	if namespaceWide {
		for _, svc := range wv.s.Services {
			if svc.Namespace != ns {
				continue
			}
			if r, ok := wv.forService(svc); ok {
				set[r.ref.String()] = true
			}
		}
	}
	return sortedKeys(set)
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func sortedKeys(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
