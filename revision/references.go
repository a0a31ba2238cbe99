package revision

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Reference is one thing that still refers to a revision.
type Reference struct {
	Object mesh.ObjectRef `json:"object"`
	// Detail says how it refers ("label istio.io/rev=1-30-3", "3 pods injected by it").
	Detail string `json:"detail"`
}

// String prints "Kind ns/name: detail".
func (r Reference) String() string { return r.Object.String() + ": " + r.Detail }

// References lists everything in the snapshot that refers to the revision: tags pointing at it,
// namespaces and policies labelled with its name, pods injected by it, gateways and waypoints it owns
// (also together with another revision), what sends traffic through those waypoints, ztunnels
// connected to it, and the default revision. A revision can be removed only when the list is
// empty. The result is sorted.
func References(s *mesh.Snapshot, rev string) []Reference {
	var out []Reference
	add := func(ref mesh.ObjectRef, format string, a ...any) {
		out = append(out, Reference{Object: ref, Detail: fmt.Sprintf(format, a...)})
	}
	for _, t := range s.Tags {
		switch w, hasWebhook := t.WebhookPointsAt(); {
		case !t.Split() && t.PointsAt(rev):
			add(t.Ref(), "tag %q points at it", t.Name)
		case hasWebhook && w == rev:
			add(t.WebhookRef(), "tag %q points at it through its webhook configuration (its Service points elsewhere)", t.Name)
		case t.PointsAt(rev):
			add(t.ServiceRef(), "tag %q points at it through its Service (its webhook configuration points elsewhere)", t.Name)
		}
	}
	if s.DefaultRevision == rev {
		add(mesh.ObjectRef{Kind: "ValidatingWebhookConfiguration", Name: "istiod-default-validator"}, "it is the default revision")
	}
	for _, n := range s.Namespaces {
		if n.Labels[mesh.LabelRev] == rev {
			add(mesh.ObjectRef{Kind: "Namespace", Name: n.Name}, "labelled %s=%s", mesh.LabelRev, rev)
		}
	}
	controlPlane := map[mesh.ObjectRef]bool{}
	for _, r := range s.Revisions {
		controlPlane[mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}] = true
	}
	for _, w := range s.Workloads {
		if controlPlane[w.Ref()] {
			continue // istiod's own pods carry istio.io/rev; they are the revision, not a reference to it
		}
		if n := w.SidecarRevisions[rev]; n > 0 {
			add(w.Ref(), "%d pod(s) run sidecars injected by it", n)
		} else if w.PodRevisionLabel == rev {
			add(w.Ref(), "pods labelled %s=%s", mesh.LabelRev, rev)
		}
	}
	for _, g := range s.Gateways {
		if g.OwnedBy(rev) {
			what := "gateway"
			if g.Waypoint {
				what = "waypoint"
			}
			how := "through its namespace or the default tag"
			switch {
			case g.Kind == mesh.GatewayKindDeployment:
				how = "through the injection of its pods"
			case g.HasRevisionLabel():
				how = fmt.Sprintf("through its label %s=%s", mesh.LabelRev, g.RevisionLabel)
			}
			if len(g.Owners) > 1 {
				how += fmt.Sprintf(" (with %s)", strings.Join(g.Owners, ", "))
			}
			add(g.Ref(), "%s owned by it %s", what, how)
		}
	}
	// What sends traffic through a waypoint the revision owns: namespaces labelled with it, and
	// Services and workloads whose own istio.io/use-waypoint label names it (those that inherit it
	// are covered by their namespace).
	for _, u := range s.WaypointUsers() {
		g, ok := s.Waypoint(u.Waypoint)
		if !ok || !g.OwnedBy(rev) || (u.Object.Kind != "Namespace" && !u.Own) {
			continue
		}
		add(u.Object, "uses waypoint %s/%s, which it owns (label %s)", u.Waypoint.Namespace, u.Waypoint.Name, mesh.LabelUseWaypoint)
	}
	for _, z := range s.Ztunnels {
		if r, ok := s.ZtunnelRevision(z); ok && r == rev {
			add(z.Ref(), "ztunnel connects to it")
		}
	}
	for _, p := range s.Policies {
		if p.RevisionLabel == rev {
			add(p.Ref(), "labelled %s=%s: only this revision processes it", mesh.LabelRev, rev)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
