package tags

import (
	"fmt"
	"sort"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// Radius is what a tag reaches: everything that moves when the tag moves.
type Radius struct {
	Tag      string `json:"tag"`
	Revision string `json:"revision"`
	// Namespaces whose istio.io/rev label (or, for tag default, istio-injection=enabled) selects the tag.
	Namespaces []string `json:"namespaces,omitempty"`
	// Workloads run sidecars the tag injects; they need a restart to pick up a moved tag. Gateway
	// deployments are listed under Gateways instead.
	Workloads []mesh.ObjectRef `json:"workloads,omitempty"`
	// SidecarPods counts the pods of Workloads.
	SidecarPods int `json:"sidecarPods"`
	// StatefulWorkloads counts StatefulSets, Jobs and pods with local storage among Workloads.
	StatefulWorkloads int `json:"statefulWorkloads"`
	// Gateways and Waypoints the tag owns by istiod's rules (label, namespace label, default tag).
	Gateways  []mesh.ObjectRef `json:"gateways,omitempty"`
	Waypoints []mesh.ObjectRef `json:"waypoints,omitempty"`
	// AmbientNamespaces send traffic through one of Waypoints: the namespace's own
	// istio.io/use-waypoint label names it, or a Service or workload in it does. Their L7 traffic
	// moves with the tag.
	AmbientNamespaces []string `json:"ambientNamespaces,omitempty"`
	// Services send their traffic through one of Waypoints, by their own istio.io/use-waypoint label
	// or their namespace's (a Service's own label wins, and "none" opts it out).
	Services []mesh.ObjectRef `json:"services,omitempty"`
	// WaypointWorkloads send workload-addressed traffic through one of Waypoints (waypoints for
	// workload or all traffic), by their pods' label or their namespace's.
	WaypointWorkloads []mesh.ObjectRef `json:"waypointWorkloads,omitempty"`
}

// Summary prints the radius in one line: "2 namespaces, 14 sidecar pods (1 stateful workload), ...".
func (r Radius) Summary() string {
	out := fmt.Sprintf("%d namespace(s), %d sidecar pod(s) in %d workload(s) (%d stateful), %d gateway(s), %d waypoint(s) serving %d ambient namespace(s)",
		len(r.Namespaces), r.SidecarPods, len(r.Workloads), r.StatefulWorkloads, len(r.Gateways), len(r.Waypoints), len(r.AmbientNamespaces))
	if len(r.Services)+len(r.WaypointWorkloads) > 0 {
		out += fmt.Sprintf(" (%d Service(s) and %d workload(s) through them)", len(r.Services), len(r.WaypointWorkloads))
	}
	return out
}

// selects reports whether a namespace's labels select the tag for injection.
func selects(tag string, labels map[string]string) bool {
	if labels[mesh.LabelInjection] != "" && labels[mesh.LabelInjection] != "enabled" {
		return false
	}
	if tag == "default" && labels[mesh.LabelInjection] == "enabled" {
		return true
	}
	return labels[mesh.LabelInjection] == "" && labels[mesh.LabelRev] == tag
}

// BlastRadius computes what the tag reaches in the snapshot. ok is false when the tag does not exist.
func BlastRadius(s *mesh.Snapshot, tag string) (Radius, bool) {
	t, ok := s.Tag(tag)
	if !ok {
		return Radius{}, false
	}
	r := Radius{Tag: tag, Revision: t.Revision}
	nsSelected := map[string]bool{}
	for _, n := range s.Namespaces {
		if selects(tag, n.Labels) {
			nsSelected[n.Name] = true
			r.Namespaces = append(r.Namespaces, n.Name)
		}
	}
	for _, w := range s.Workloads {
		if w.GatewayName != "" || len(w.SidecarRevisions) == 0 || isGatewayDeployment(s, w) {
			continue
		}
		if w.PodRevisionLabel == tag || (w.PodRevisionLabel == "" && nsSelected[w.Namespace]) {
			r.Workloads = append(r.Workloads, w.Ref())
			for _, n := range w.SidecarRevisions {
				r.SidecarPods += n
			}
			if w.Stateful() {
				r.StatefulWorkloads++
			}
		}
	}
	waypoints := map[string]bool{}
	for _, g := range s.Gateways {
		if !reaches(s, tag, g) {
			continue
		}
		if g.Waypoint {
			r.Waypoints = append(r.Waypoints, g.Ref())
			waypoints[g.Namespace+"/"+g.Name] = true
		} else {
			r.Gateways = append(r.Gateways, g.Ref())
		}
	}
	ambient := map[string]bool{}
	for _, u := range s.WaypointUsers() {
		if !waypoints[u.Waypoint.Namespace+"/"+u.Waypoint.Name] {
			continue
		}
		switch u.Object.Kind {
		case "Namespace":
			ambient[u.Object.Name] = true
		case "Service":
			ambient[u.Object.Namespace] = true
			r.Services = append(r.Services, u.Object)
		default:
			ambient[u.Object.Namespace] = true
			r.WaypointWorkloads = append(r.WaypointWorkloads, u.Object)
		}
	}
	for n := range ambient {
		r.AmbientNamespaces = append(r.AmbientNamespaces, n)
	}
	sort.Strings(r.Namespaces)
	sort.Strings(r.AmbientNamespaces)
	return r, true
}

// reaches reports whether the tag decides which revision owns the gateway. A Gateway API gateway or
// waypoint selects the value of its own istio.io/rev label when the label is present, even empty,
// else its namespace's, and an empty value selects the default tag (istiod's IsMine,
// istio/istio@release-1.31: pkg/revisions/tag_watcher.go). A gateway-chart Deployment follows
// injection: its namespace's labels win over its pods' (mesh.Snapshot.InjectionRevision).
func reaches(s *mesh.Snapshot, tag string, g mesh.Gateway) bool {
	ns, _ := s.Namespace(g.Namespace)
	selected := ns.Labels[mesh.LabelRev]
	if g.Kind == mesh.GatewayKindDeployment {
		if inj, has := ns.Labels[mesh.LabelInjection]; has {
			return inj == "enabled" && tag == "default"
		}
		if selected == "" {
			selected = g.RevisionLabel
		}
	} else if g.HasRevisionLabel() {
		selected = g.RevisionLabel
	}
	return selected == tag || selected == "" && tag == "default"
}

func isGatewayDeployment(s *mesh.Snapshot, w mesh.Workload) bool {
	if w.Kind != "Deployment" {
		return false
	}
	for _, g := range s.Gateways {
		if g.Kind == mesh.GatewayKindDeployment && g.Namespace == w.Namespace && g.Name == w.Name {
			return true
		}
	}
	return false
}

// Ranked is a tag in risk order with the reason for its place.
type Ranked struct {
	Radius Radius `json:"radius"`
	Reason string `json:"reason"`
}

// Order sorts the tags that point at one of the given revisions lowest risk first: fewer stateful
// workloads, then fewer gateways and waypoints, then fewer sidecar pods, then fewer namespaces, then
// name; tag default always last, since it also catches everything unlabelled. An empty revisions list
// means every tag.
func Order(s *mesh.Snapshot, revisions ...string) []Ranked {
	want := map[string]bool{}
	for _, r := range revisions {
		want[r] = true
	}
	var out []Ranked
	for _, t := range s.Tags {
		if len(want) > 0 && !want[t.Revision] {
			continue
		}
		r, _ := BlastRadius(s, t.Name)
		out = append(out, Ranked{Radius: r})
	}
	key := func(r Radius) [6]int {
		def := 0
		if r.Tag == "default" {
			def = 1
		}
		return [6]int{def, r.StatefulWorkloads, len(r.Gateways) + len(r.Waypoints), r.SidecarPods, len(r.Namespaces), len(r.AmbientNamespaces)}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := key(out[i].Radius), key(out[j].Radius)
		if a != b {
			for k := range a {
				if a[k] != b[k] {
					return a[k] < b[k]
				}
			}
		}
		return out[i].Radius.Tag < out[j].Radius.Tag
	})
	for i := range out {
		r := out[i].Radius
		why := fmt.Sprintf("position %d of %d: %s", i+1, len(out), r.Summary())
		if r.Tag == "default" {
			why += "; default goes last because it also owns everything unlabelled"
		}
		out[i].Reason = why
	}
	return out
}
