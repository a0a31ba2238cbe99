package ambient

import (
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/revision"
)

// withRevision returns a copy of s with a ready revision rev at version v added, as it will be once
// the istiod install step has finished. Only the lists it changes are copied.
func withRevision(s *mesh.Snapshot, rev string, v mesh.Version) *mesh.Snapshot {
	c := *s
	c.Revisions = append([]mesh.Revision(nil), s.Revisions...)
	n := mesh.Revision{Name: rev, Namespace: "istio-system", Deployment: "istiod-" + rev, Version: v,
		Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, ObservedCurrent: true, Ambient: true, HelmRelease: "istiod-" + rev}
	if p := revision.Primary(s); p != nil {
		n.Namespace = p.Namespace
		n.Replicas, n.ReadyReplicas, n.UpdatedReplicas = max(p.Replicas, 1), max(p.Replicas, 1), max(p.Replicas, 1)
		n.Ambient = p.Ambient
		n.TrustedZtunnelAccounts = append([]string(nil), p.TrustedZtunnelAccounts...)
		n.Image = ""
	}
	c.Revisions = append(c.Revisions, n)
	c.Normalize()
	return &c
}

// simulate returns the mesh as it will be after one hop's steps up to (not including) the removal of
// old revisions: components at version v, tags and the default revision on newRev (revision
// strategy), ztunnel switched, restarted workloads injected by newRev, gateways re-owned.
func simulate(s *mesh.Snapshot, v mesh.Version, newRev string, restarted bool) *mesh.Snapshot {
	var c mesh.Snapshot
	if newRev != "" {
		c = *withRevision(s, newRev, v)
	} else {
		c = *s
		c.Revisions = append([]mesh.Revision(nil), s.Revisions...)
		for i := range c.Revisions {
			c.Revisions[i].Version = v
		}
	}
	old := map[string]bool{}
	for _, r := range s.Revisions {
		old[r.Name] = true
	}
	movedTags := map[string]bool{}
	if newRev != "" {
		movedTags = moveTagsTo(&c, s, old, newRev)
	}
	upgradeNodeAgents(&c, s, v, newRev)
	gatewayReleases := map[string]bool{}
	c.Gateways = append([]mesh.Gateway(nil), s.Gateways...)
	for i := range c.Gateways {
		g := &c.Gateways[i]
		if g.Kind == mesh.GatewayKindDeployment && g.HelmRelease != "" {
			gatewayReleases[g.Namespace+"/"+g.Name] = true
			if newRev != "" && old[g.RevisionLabel] {
				g.RevisionLabel = newRev
			}
		}
	}
	if newRev != "" && restarted {
		restartTagged(&c, s, movedTags, gatewayReleases, newRev, v)
	}
	// Gateway Deployments are injected again: after a new revision takes them over, or, in place,
	// when their Helm chart's upgrade rolls them (the upgraded istiod injects its new proxy).
	reinjectGateways(&c, v, newRev == "")
	// Owners last: a gateway-chart Deployment belongs to the revision that injected its pods.
	for i := range c.Gateways {
		g := &c.Gateways[i]
		g.Revision, g.Owners = c.GatewayOwners(*g)
		// The versions its pods run after the hop: those a chart upgrade or a moved tag rolls, those
		// of the new revision, and in place every Gateway API gateway and waypoint the upgraded
		// istiod renders again with its new proxy image (istio/istio@1.30.3
		// pilot/pkg/config/kube/gateway/deploymentcontroller.go).
		if g.Kind == mesh.GatewayKindDeployment && (g.HelmRelease != "" || movedTags[g.RevisionLabel]) || g.Revision == newRev ||
			newRev == "" && g.Kind == mesh.GatewayKindAPI && g.Revision != "" {
			g.Versions = []mesh.Version{v}
		}
	}
	c.Normalize()
	return &c
}

// moveTagsTo points every tag of an old revision, and the default revision, at newRev in c, and
// returns the tags it moved.
func moveTagsTo(c, s *mesh.Snapshot, old map[string]bool, newRev string) map[string]bool {
	moved := map[string]bool{}
	c.Tags = append([]mesh.Tag(nil), s.Tags...)
	for i := range c.Tags {
		if t := &c.Tags[i]; old[t.Revision] {
			// The move re-renders both of the tag's objects (tags.Render).
			moved[t.Name] = true
			t.Revision = newRev
			if t.WebhookRevision != "" {
				t.WebhookRevision = newRev
			}
			if t.ServiceRevision != "" {
				t.ServiceRevision = newRev
			}
			t.TargetService = c.Revisions[0].Namespace + "/istiod-" + newRev
		}
	}
	if old[c.DefaultRevision] {
		c.DefaultRevision = newRev
	}
	return moved
}

// upgradeNodeAgents leaves istio-cni and every ztunnel at v in c, ztunnels pinned to a revision
// pinned to newRev.
func upgradeNodeAgents(c, s *mesh.Snapshot, v mesh.Version, newRev string) {
	if s.CNI != nil {
		cni := *s.CNI
		cni.Version = v
		cni.Pods = setPodVersions(s.CNI.Pods, v)
		c.CNI = &cni
	}
	c.Ztunnels = append([]mesh.Ztunnel(nil), s.Ztunnels...)
	for i := range c.Ztunnels {
		c.Ztunnels[i].Version = v
		c.Ztunnels[i].Pods = setPodVersions(c.Ztunnels[i].Pods, v)
		if newRev != "" && c.Ztunnels[i].Revision != "" {
			c.Ztunnels[i].Revision = newRev
		}
	}
}

// restartTagged re-injects, as their restarts leave them, the sidecar workloads that follow a moved
// tag and the gateway releases' Deployments.
func restartTagged(c, s *mesh.Snapshot, movedTags, gatewayReleases map[string]bool, newRev string, v mesh.Version) {
	c.Workloads = append([]mesh.Workload(nil), s.Workloads...)
	for i := range c.Workloads {
		w := &c.Workloads[i]
		if len(w.SidecarRevisions) == 0 {
			continue
		}
		label := w.PodRevisionLabel
		if label == "" {
			if ns, ok := c.Namespace(w.Namespace); ok {
				label = ns.Labels[mesh.LabelRev]
				if label == "" && ns.Labels[mesh.LabelInjection] == "enabled" {
					label = "default"
				}
			}
		}
		if !movedTags[label] && !gatewayReleases[w.Namespace+"/"+w.Name] {
			continue
		}
		reinjected(w, newRev, v)
	}
}

// reinjectGateways re-injects gateway-chart Deployments by the revision injection now selects: the
// gateway steps restart them (a Helm upgrade, or a restart when not installed with Helm) whether or
// not tag moves restart workloads.
func reinjectGateways(c *mesh.Snapshot, v mesh.Version, helmOnly bool) {
	c.Workloads = append([]mesh.Workload(nil), c.Workloads...)
	for _, g := range c.Gateways {
		if g.Kind != mesh.GatewayKindDeployment || helmOnly && g.HelmRelease == "" {
			continue
		}
		rev := c.InjectionRevision(g.Namespace, g.RevisionLabel)
		for i := range c.Workloads {
			w := &c.Workloads[i]
			if w.Kind != "Deployment" || w.Namespace != g.Namespace || w.Name != g.Name || len(w.SidecarRevisions) == 0 || rev == "" {
				continue
			}
			reinjected(w, rev, v)
		}
	}
}

// reinjected makes every sidecar pod of w injected by rev at version v, as a restart leaves them.
func reinjected(w *mesh.Workload, rev string, v mesh.Version) {
	total := 0
	for _, n := range w.SidecarRevisions {
		total += n
	}
	w.SidecarRevisions = map[string]int{rev: total}
	w.ProxyVersions = []mesh.Version{v}
}

func setPodVersions(pods []mesh.NodePod, v mesh.Version) []mesh.NodePod {
	out := append([]mesh.NodePod(nil), pods...)
	for i := range out {
		out[i].Version = v
	}
	return out
}

// finishSimulation removes the old revisions nothing refers to any more, as the removal steps will.
func finishSimulation(after *mesh.Snapshot, newRev string) *mesh.Snapshot {
	if newRev == "" {
		return after
	}
	c := *after
	c.Revisions = nil
	for _, r := range after.Revisions {
		if r.Name == newRev || len(revision.References(after, r.Name)) > 0 {
			c.Revisions = append(c.Revisions, r)
		}
	}
	return &c
}

// replaceZtunnel returns the mesh after a blue-green: the one ztunnel replaced by green, and every
// revision trusting green's account instead of blue's.
func replaceZtunnel(s *mesh.Snapshot, green mesh.Ztunnel) *mesh.Snapshot {
	c := *s
	blue := s.Ztunnels[0].Account()
	c.Ztunnels = []mesh.Ztunnel{green}
	c.Revisions = append([]mesh.Revision(nil), s.Revisions...)
	for i := range c.Revisions {
		var trust []string
		for _, a := range c.Revisions[i].TrustedZtunnelAccounts {
			if a != blue && a != green.Account() {
				trust = append(trust, a)
			}
		}
		c.Revisions[i].TrustedZtunnelAccounts = append(trust, green.Account())
	}
	c.Normalize()
	return &c
}
