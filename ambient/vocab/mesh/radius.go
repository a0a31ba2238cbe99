package mesh

import (
	"fmt"
	"sort"
)

// TagRadius is what a tag reaches: everything that moves when the tag moves (tags.BlastRadius).
type TagRadius struct {
	Tag      string `json:"tag"`
	Revision string `json:"revision"`
	// Namespaces whose istio.io/rev label (or, for tag default, istio-injection=enabled) selects the tag.
	Namespaces []string `json:"namespaces,omitempty"`
	// Workloads run sidecars the tag injects; they need a restart to pick up a moved tag. Gateway
	// deployments are listed under Gateways instead.
	Workloads []ObjectRef `json:"workloads,omitempty"`
	// SidecarPods counts the pods of Workloads.
	SidecarPods int `json:"sidecarPods"`
	// StatefulWorkloads counts StatefulSets, Jobs and pods with local storage among Workloads.
	StatefulWorkloads int `json:"statefulWorkloads"`
	// Gateways and Waypoints the tag owns by istiod's rules (label, namespace label, default tag).
	Gateways  []ObjectRef `json:"gateways,omitempty"`
	Waypoints []ObjectRef `json:"waypoints,omitempty"`
	// AmbientNamespaces send traffic through one of Waypoints: the namespace's own
	// istio.io/use-waypoint label names it, or a Service or workload in it does. Their L7 traffic
	// moves with the tag.
	AmbientNamespaces []string `json:"ambientNamespaces,omitempty"`
	// Services send their traffic through one of Waypoints, by their own istio.io/use-waypoint label
	// or their namespace's (a Service's own label wins, and "none" opts it out).
	Services []ObjectRef `json:"services,omitempty"`
	// WaypointWorkloads send workload-addressed traffic through one of Waypoints (waypoints for
	// workload or all traffic), by their pods' label or their namespace's.
	WaypointWorkloads []ObjectRef `json:"waypointWorkloads,omitempty"`
}

// Summary prints the radius in one line: "2 namespaces, 14 sidecar pods (1 stateful workload), ...".
func (r TagRadius) Summary() string {
	out := fmt.Sprintf("%d namespace(s), %d sidecar pod(s) in %d workload(s) (%d stateful), %d gateway(s), %d waypoint(s) serving %d ambient namespace(s)",
		len(r.Namespaces), r.SidecarPods, len(r.Workloads), r.StatefulWorkloads, len(r.Gateways), len(r.Waypoints), len(r.AmbientNamespaces))
	if len(r.Services)+len(r.WaypointWorkloads) > 0 {
		out += fmt.Sprintf(" (%d Service(s) and %d workload(s) through them)", len(r.Services), len(r.WaypointWorkloads))
	}
	return out
}

// selectsTag reports whether a namespace's labels select the tag for injection.
func selectsTag(tag string, labels map[string]string) bool {
	if labels[LabelInjection] != "" && labels[LabelInjection] != "enabled" {
		return false
	}
	if tag == "default" && labels[LabelInjection] == "enabled" {
		return true
	}
	return labels[LabelInjection] == "" && labels[LabelRev] == tag
}

// TagRadius computes what the tag reaches in the snapshot. ok is false when the tag does not exist.
func (s *Snapshot) TagRadius(tag string) (TagRadius, bool) {
	t, ok := s.Tag(tag)
	if !ok {
		return TagRadius{}, false
	}
	r := TagRadius{Tag: tag, Revision: t.Revision}
	nsSelected := map[string]bool{}
	for _, n := range s.Namespaces {
		if selectsTag(tag, n.Labels) {
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
		if !tagReaches(s, tag, g) {
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

// tagReaches reports whether the tag decides which revision owns the gateway. A Gateway API gateway or
// waypoint selects the value of its own istio.io/rev label when the label is present, even empty,
// else its namespace's, and an empty value selects the default tag (istiod's IsMine,
// istio/istio@release-1.31: pkg/revisions/tag_watcher.go). A gateway-chart Deployment follows
// injection: its namespace's labels win over its pods' (Snapshot.InjectionRevision).
func tagReaches(s *Snapshot, tag string, g Gateway) bool {
	ns, _ := s.Namespace(g.Namespace)
	selected := ns.Labels[LabelRev]
	if g.Kind == GatewayKindDeployment {
		if inj, has := ns.Labels[LabelInjection]; has {
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

func isGatewayDeployment(s *Snapshot, w Workload) bool {
	if w.Kind != "Deployment" {
		return false
	}
	for _, g := range s.Gateways {
		if g.Kind == GatewayKindDeployment && g.Namespace == w.Namespace && g.Name == w.Name {
			return true
		}
	}
	return false
}

// Followers lists what follows the tag: the namespaces that
// select it or send traffic through its waypoints, the workloads it injected, the gateways and
// waypoints it owns, and the Services and workloads whose traffic goes through those waypoints;
// namespaces first, then by kind and name.
func (r TagRadius) Followers() []ObjectRef {
	var out []ObjectRef
	seen := map[ObjectRef]bool{}
	add := func(refs ...ObjectRef) {
		for _, ref := range refs {
			if !seen[ref] {
				seen[ref] = true
				out = append(out, ref)
			}
		}
	}
	var namespaces []string
	namespaces = append(namespaces, r.Namespaces...)
	namespaces = append(namespaces, r.AmbientNamespaces...)
	sort.Strings(namespaces)
	for _, n := range namespaces {
		add(ObjectRef{Kind: "Namespace", Name: n})
	}
	var rest []ObjectRef
	rest = append(rest, r.Workloads...)
	rest = append(rest, r.Gateways...)
	rest = append(rest, r.Waypoints...)
	rest = append(rest, r.Services...)
	rest = append(rest, r.WaypointWorkloads...)
	sort.Slice(rest, func(i, j int) bool { return rest[i].String() < rest[j].String() })
	add(rest...)
	return out
}
