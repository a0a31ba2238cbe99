package mesh

import "sort"

// Revision returns the revision with the given name.
func (s *Snapshot) Revision(name string) (Revision, bool) {
	for _, r := range s.Revisions {
		if r.Name == name {
			return r, true
		}
	}
	return Revision{}, false
}

// Tag returns the tag with the given name.
func (s *Snapshot) Tag(name string) (Tag, bool) {
	for _, t := range s.Tags {
		if t.Name == name {
			return t, true
		}
	}
	return Tag{}, false
}

// Namespace returns the namespace with the given name.
func (s *Snapshot) Namespace(name string) (Namespace, bool) {
	i := sort.Search(len(s.Namespaces), func(i int) bool { return s.Namespaces[i].Name >= name })
	if i < len(s.Namespaces) && s.Namespaces[i].Name == name {
		return s.Namespaces[i], true
	}
	for _, n := range s.Namespaces { // unsorted input
		if n.Name == name {
			return n, true
		}
	}
	return Namespace{}, false
}

// Node returns the node with the given name.
func (s *Snapshot) Node(name string) (Node, bool) {
	i := sort.Search(len(s.Nodes), func(i int) bool { return s.Nodes[i].Name >= name })
	if i < len(s.Nodes) && s.Nodes[i].Name == name {
		return s.Nodes[i], true
	}
	for _, n := range s.Nodes { // unsorted input
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// ResolveRevision maps an istio.io/rev value (a revision name or a tag) to the revision it selects.
// It returns "" when the value names neither.
func (s *Snapshot) ResolveRevision(nameOrTag string) string {
	if nameOrTag == "" {
		return ""
	}
	if _, ok := s.Revision(nameOrTag); ok {
		return nameOrTag
	}
	if t, ok := s.Tag(nameOrTag); ok {
		return t.Revision
	}
	return ""
}

// DefaultOwner returns the revision that handles objects with no istio.io/rev label, by istiod's
// rules (istio-facts §1.6): a `default` tag wins; else a revision literally named "default"; else, for
// istiod 1.28 and newer, the revision named by istiod-default-validator. "" when none.
func (s *Snapshot) DefaultOwner() string {
	if t, ok := s.Tag("default"); ok {
		return t.Revision
	}
	if _, ok := s.Revision("default"); ok {
		return "default"
	}
	if s.DefaultRevision != "" {
		if r, ok := s.Revision(s.DefaultRevision); ok && !r.Version.IsZero() && r.Version.Compare(Version{Major: 1, Minor: 28}) >= 0 {
			return r.Name
		}
	}
	return ""
}

// OwnerOf returns the revision that owns a Gateway API object with the given own istio.io/rev label
// in a namespace ("" meaning no label): the one revision that claims it (Claims), or, when several
// do, the one the object's label, else its namespace's, else the default owner names. It cannot tell
// an empty label from none; Gateway owners come from GatewayOwners, which can.
func (s *Snapshot) OwnerOf(namespace, revLabel string) string {
	owner, _ := s.GatewayOwners(Gateway{Kind: GatewayKindAPI, Namespace: namespace, RevisionLabel: revLabel})
	return owner
}

// ZtunnelRevision returns the revision a ztunnel connects to: its istio.io/rev annotation, else the
// istiod Service named in its XDS or CA address, else the default owner. ok is false when it cannot
// be told.
func (s *Snapshot) ZtunnelRevision(z Ztunnel) (rev string, ok bool) {
	if z.Revision != "" {
		r := s.ResolveRevision(z.Revision)
		return r, r != ""
	}
	for _, addr := range []string{z.XDSAddress, z.CAAddress} {
		if addr == "" {
			continue
		}
		host := addr
		for i := 0; i < len(host); i++ {
			if host[i] == '.' || host[i] == ':' {
				host = host[:i]
				break
			}
		}
		switch {
		case host == "istiod":
			if _, ok := s.Revision("default"); ok {
				return "default", true
			}
		case len(host) > len("istiod-revision-tag-") && host[:len("istiod-revision-tag-")] == "istiod-revision-tag-":
			r := s.ResolveRevision(host[len("istiod-revision-tag-"):])
			return r, r != ""
		case len(host) > len("istiod-") && host[:len("istiod-")] == "istiod-":
			r := s.ResolveRevision(host[len("istiod-"):])
			return r, r != ""
		}
		return "", false
	}
	if _, ok := s.Revision("default"); ok {
		return "default", true
	}
	if len(s.Revisions) == 1 {
		return s.Revisions[0].Name, true
	}
	return "", false
}

// ControlPlaneVersions returns the distinct known istiod versions, oldest first.
func (s *Snapshot) ControlPlaneVersions() []Version {
	seen := map[Version]bool{}
	var out []Version
	for _, r := range s.Revisions {
		if r.Version.IsZero() || seen[r.Version] {
			continue
		}
		seen[r.Version] = true
		out = append(out, r.Version)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// WorkloadsOnNode returns the workloads with pods on the node, in snapshot order.
func (s *Snapshot) WorkloadsOnNode(node string) []Workload {
	var out []Workload
	for _, w := range s.Workloads {
		i := sort.SearchStrings(w.Nodes, node)
		if i < len(w.Nodes) && w.Nodes[i] == node {
			out = append(out, w)
		}
	}
	return out
}

// BudgetsFor returns the PodDisruptionBudgets that select the workload's pods.
func (s *Snapshot) BudgetsFor(w Workload) []PodDisruptionBudget {
	var out []PodDisruptionBudget
	for _, p := range s.PodDisruptionBudgets {
		if p.Namespace == w.Namespace && p.Selector.Matches(w.Labels) {
			out = append(out, p)
		}
	}
	return out
}

// AmbientWorkload reports whether the workload's pods are, or should be, captured by ambient: they
// carry the redirection annotation, or run in an ambient namespace without opting out, a sidecar
// or the host network.
func (s *Snapshot) AmbientWorkload(w Workload) bool { return s.ambientWorkload(w) }

// ambientWorkload reports whether the workload's pods are, or should be, captured by ambient.
func (s *Snapshot) ambientWorkload(w Workload) bool {
	if w.Redirection["enabled"] > 0 || w.Redirection["pending"] > 0 {
		return true
	}
	if w.Mode == ModeSidecar || w.Pods == w.OptedOut+w.HostNetwork {
		return false
	}
	ns, _ := s.Namespace(w.Namespace)
	return ns.Ambient()
}

// AmbientInUse reports whether anything relies on ambient: an ambient namespace, a redirected pod, a
// ztunnel or a waypoint.
func (s *Snapshot) AmbientInUse() bool {
	if len(s.Ztunnels) > 0 {
		return true
	}
	for _, n := range s.Namespaces {
		if n.Ambient() || n.Pods.AmbientEnabled > 0 || n.Pods.AmbientPending > 0 {
			return true
		}
	}
	for _, g := range s.Gateways {
		if g.Waypoint {
			return true
		}
	}
	return false
}

// AmbientNodes returns the nodes that run pods captured (or to be captured) by ambient, with the
// number of such workloads on each.
func (s *Snapshot) AmbientNodes() map[string]int {
	out := map[string]int{}
	for _, w := range s.Workloads {
		if !s.ambientWorkload(w) {
			continue
		}
		for _, n := range w.Nodes {
			out[n]++
		}
	}
	return out
}

// ReadyAgentOn returns a ready, non-terminating pod on the node. pods must be sorted by node, as
// Normalize leaves them.
func ReadyAgentOn(pods []NodePod, node string) (NodePod, bool) {
	for i := sort.Search(len(pods), func(i int) bool { return pods[i].Node >= node }); i < len(pods) && pods[i].Node == node; i++ {
		if pods[i].Ready && !pods[i].Terminating {
			return pods[i], true
		}
	}
	return NodePod{}, false
}

// TagNames returns the names of the tags, in snapshot order.
func (s *Snapshot) TagNames() []string {
	out := make([]string, 0, len(s.Tags))
	for _, t := range s.Tags {
		out = append(out, t.Name)
	}
	return out
}

// RevisionNames returns the names of the revisions, in snapshot order.
func (s *Snapshot) RevisionNames() []string {
	out := make([]string, 0, len(s.Revisions))
	for _, r := range s.Revisions {
		out = append(out, r.Name)
	}
	return out
}
