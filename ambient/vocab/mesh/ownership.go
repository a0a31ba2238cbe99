package mesh

import "sort"

// Which istiod revision owns an object, and which waypoint an object uses, as istiod decides them.

// serviceTagsSince is the first istiod that counts tag Services and the default revision as its own
// (istio/istio@1.28.0: pkg/revisions/tag_watcher.go; 1.25.0 to 1.27.x read only the webhook
// configurations, and 1.24 inlined the same rule in pilot/pkg/config/kube/gateway/deploymentcontroller.go).
var serviceTagsSince = Version{Major: 1, Minor: 28}

// defaultTagWebhook is the name istiod looks up to see whether a default tag exists
// (pkg/revisions/tag_watcher.go, defaultTagMutatingWebhookName): only that exact name counts.
const defaultTagWebhook = "istio-revision-tag-default"

// MyTags returns what revision r answers to, as istiod's GetMyTags builds it: its own name, every
// tag whose webhook configuration names it, and, from 1.28 (or when r's version is unknown), every
// tag whose Service in r's namespace names it (istio/istio@1.30.3 and @release-1.31:
// pkg/revisions/tag_watcher.go).
func (s *Snapshot) MyTags(r Revision) map[string]bool {
	mine := map[string]bool{r.Name: true}
	services := r.Version.IsZero() || !r.Version.Less(serviceTagsSince)
	for _, t := range s.Tags {
		if rev, ok := t.WebhookPointsAt(); ok && rev == r.Name {
			mine[t.Name] = true
		}
		if rev, ok := t.ServicePointsAt(); ok && services && rev == r.Name && (t.ServiceNamespace == "" || t.ServiceNamespace == r.Namespace) {
			mine[t.Name] = true
		}
		if _, w := t.WebhookPointsAt(); !w && t.Service == "" && t.Revision == r.Name { // a tag built in code with neither object named
			mine[t.Name] = true
		}
	}
	return mine
}

// Claims returns, sorted, the revisions whose istiod handles an object (a Gateway API gateway or
// waypoint) with the given istio.io/rev label in namespace; set says whether the object carries
// the label at all. It is istiod's IsMine (istio/istio@1.30.3 and @release-1.31:
// pkg/revisions/tag_watcher.go), applied to every revision:
//
//   - a present label counts even when empty; only an absent one falls back to the namespace's;
//   - a revision handles the object when what it answers to (MyTags) holds that value;
//   - an empty value is handled by a revision that answers to "default" (a revision named default,
//     or one a default tag points at), and, from 1.28, by the default revision
//     (istiod-default-validator) unless a webhook configuration named istio-revision-tag-default
//     exists that does not point at it.
//
// More than one revision can claim the same object: a revision named default beside a default
// tag, a default tag that exists only as a Service (the default revision does not see it), or a
// split tag. istiod claims objects in a namespace its cache does not hold; a snapshot that lacks
// the namespace says nothing about istiod, so it is read as an unlabelled namespace.
func (s *Snapshot) Claims(namespace, label string, set bool) []string {
	selected := s.selectedRevision(namespace, label, set)
	defaultTagExists := false
	for _, t := range s.Tags {
		if t.Webhook == defaultTagWebhook {
			defaultTagExists = true
		}
	}
	var out []string
	for _, r := range s.Revisions {
		mine := s.MyTags(r)
		weAreDefault := s.DefaultRevision == r.Name && !r.Version.IsZero() && !r.Version.Less(serviceTagsSince)
		if mine[selected] || selected == "" && (mine["default"] || weAreDefault && !defaultTagExists) {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
}

// selectedRevision is the value IsMine matches: the object's label when present, else its
// namespace's.
func (s *Snapshot) selectedRevision(namespace, label string, set bool) string {
	if set {
		return label
	}
	ns, _ := s.Namespace(namespace)
	return ns.Labels[LabelRev]
}

// InjectionRevision returns the revision whose injector a new pod labelled sidecar.istio.io/inject=true
// with istio.io/rev podLabel ("" when absent) in namespace gets, by the selectors of the injector
// webhooks (istio-facts §1.6; istio/istio@1.30.3:
// manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml and
// revision-tags-mwc.yaml): the namespace's istio-injection=enabled selects the default injector, its
// istio.io/rev the rev.namespace webhooks, and only in a namespace with neither does the pod's
// label (rev.object) or, without one, the default injector decide. "" when none matches.
func (s *Snapshot) InjectionRevision(namespace, podLabel string) string {
	ns, _ := s.Namespace(namespace)
	switch inj, has := ns.Labels[LabelInjection]; {
	case has && inj == "enabled":
		return s.injectorOf("default")
	case has:
		return ""
	case ns.Labels[LabelRev] != "":
		return s.injectorOf(ns.Labels[LabelRev])
	case podLabel != "":
		return s.injectorOf(podLabel)
	}
	return s.injectorOf("default")
}

// injectorOf resolves a revision or tag name to the revision whose injector its webhooks call:
// a revision of that name, else the revision the tag's webhook configuration names.
func (s *Snapshot) injectorOf(name string) string {
	if _, ok := s.Revision(name); ok {
		return name
	}
	if t, ok := s.Tag(name); ok {
		if rev, hasWebhook := t.WebhookPointsAt(); hasWebhook {
			return rev
		}
		if t.Service == "" {
			return t.Revision
		}
	}
	return ""
}

// GatewayOwners returns the revisions that own g, sorted, and the one of them Gateway.Revision
// names. A Gateway API gateway or waypoint is deployed by every revision that claims it (Claims;
// the deployment controller asks IsMine, istio/istio@release-1.31:
// pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go). A gateway-chart Deployment is not
// reconciled by istiod: it belongs to the revisions that injected its pods, or, when no pod was
// seen, to the one injection would pick for a new pod (InjectionRevision).
func (s *Snapshot) GatewayOwners(g Gateway) (owner string, owners []string) {
	if g.Kind == GatewayKindDeployment {
		future := s.InjectionRevision(g.Namespace, g.RevisionLabel)
		for _, w := range s.Workloads {
			if w.Kind != "Deployment" || w.Namespace != g.Namespace || w.Name != g.Name {
				continue
			}
			for rev, n := range w.SidecarRevisions {
				if n > 0 && rev != "" {
					owners = append(owners, rev)
				}
			}
		}
		sort.Strings(owners)
		if len(owners) == 0 {
			if future == "" {
				return "", nil
			}
			return future, []string{future}
		}
		return pick(owners, future), owners
	}
	owners = s.Claims(g.Namespace, g.RevisionLabel, g.HasRevisionLabel())
	prefer := s.DefaultOwner()
	if sel := s.selectedRevision(g.Namespace, g.RevisionLabel, g.HasRevisionLabel()); sel != "" {
		prefer = s.ResolveRevision(sel)
	}
	return pick(owners, prefer), owners
}

// pick returns the only owner, else prefer when it is one of them, else the first.
func pick(owners []string, prefer string) string {
	switch {
	case len(owners) == 0:
		return ""
	case len(owners) == 1:
		return owners[0]
	}
	for _, o := range owners {
		if o == prefer {
			return o
		}
	}
	return owners[0]
}

// ResolveGatewayOwners sets Revision and Owners of every gateway (GatewayOwners). Observation calls
// it once tags, namespaces, workloads and revisions are known; planners that change those call it
// again on their copy.
func (s *Snapshot) ResolveGatewayOwners() {
	for i := range s.Gateways {
		s.Gateways[i].Revision, s.Gateways[i].Owners = s.GatewayOwners(s.Gateways[i])
	}
}

// UseWaypoint reads istio.io/use-waypoint from labels as istiod's GetUseWaypoint does
// (istio/istio@1.30.3 and @release-1.31: pilot/pkg/serviceregistry/ambient/waypoints.go): present
// reports whether the label is there at all; the value "none" opts out (ok false); the waypoint's
// namespace is istio.io/use-waypoint-namespace when present, else fallback.
func UseWaypoint(labels map[string]string, fallback string) (waypoint ObjectRef, present, ok bool) {
	name, present := labels[LabelUseWaypoint]
	if !present {
		return ObjectRef{}, false, false
	}
	if name == "none" {
		return ObjectRef{}, true, false
	}
	ns := fallback
	if override, has := labels[LabelUseWaypointNamespace]; has {
		ns = override
	}
	return ObjectRef{Kind: GatewayKindAPI, Namespace: ns, Name: name}, true, name != "" && ns != ""
}

// WaypointOf returns the waypoint an object with the given labels in namespace sends its traffic
// to, by istiod's precedence (fetchWaypointForTarget in waypoints.go): the object's own
// istio.io/use-waypoint label, when present, wins over its namespace's, and "none" opts it out even
// when the namespace names a waypoint. own tells whether the object's label decided. ok is false
// when it uses no waypoint.
func (s *Snapshot) WaypointOf(namespace string, labels map[string]string) (waypoint ObjectRef, own, ok bool) {
	if wp, present, ok := UseWaypoint(labels, namespace); present {
		return wp, true, ok
	}
	ns, _ := s.Namespace(namespace)
	wp, _, ok := UseWaypoint(ns.Labels, namespace)
	return wp, false, ok
}

// Waypoint returns the waypoint Gateway named by ref.
func (s *Snapshot) Waypoint(ref ObjectRef) (Gateway, bool) {
	for _, g := range s.Gateways {
		if g.Kind == GatewayKindAPI && g.Namespace == ref.Namespace && g.Name == ref.Name {
			return g, true
		}
	}
	return Gateway{}, false
}

// WaypointUser is something whose traffic goes through a waypoint.
type WaypointUser struct {
	// Object is the Service, workload or Namespace.
	Object ObjectRef
	// Waypoint is the Gateway it uses.
	Waypoint ObjectRef
	// Own is true when the object's own istio.io/use-waypoint label chose the waypoint, false when
	// its namespace's did (for a Namespace, always true).
	Own bool
}

// WaypointUsers lists, in snapshot order, every namespace labelled with a waypoint, every Service
// and every workload that sends traffic through one of the snapshot's waypoints: Services that the
// waypoint takes Service traffic for (its own waypoints and east-west gateways excluded, as
// fetchWaypointForService does), workloads it takes workload traffic for. A workload's label is read
// from the labels all its pods share (Workload.Labels).
func (s *Snapshot) WaypointUsers() []WaypointUser {
	var out []WaypointUser
	for _, n := range s.Namespaces {
		if wp, _, ok := UseWaypoint(n.Labels, n.Name); ok {
			if _, found := s.Waypoint(wp); found {
				out = append(out, WaypointUser{Object: ObjectRef{Kind: "Namespace", Name: n.Name}, Waypoint: wp, Own: true})
			}
		}
	}
	for _, svc := range s.Services {
		switch svc.Labels[LabelGatewayManaged] {
		case "istio.io-mesh-controller", "istio.io-eastwest-controller":
			continue
		}
		wp, own, ok := s.WaypointOf(svc.Namespace, svc.Labels)
		if g, found := s.Waypoint(wp); ok && found && g.ServesServices() {
			out = append(out, WaypointUser{Object: svc.Ref(), Waypoint: wp, Own: own})
		}
	}
	for _, w := range s.Workloads {
		if w.GatewayName != "" {
			continue // a waypoint's or gateway's own pods
		}
		wp, own, ok := s.WaypointOf(w.Namespace, w.Labels)
		if g, found := s.Waypoint(wp); ok && found && g.ServesWorkloads() {
			out = append(out, WaypointUser{Object: w.Ref(), Waypoint: wp, Own: own})
		}
	}
	return out
}
