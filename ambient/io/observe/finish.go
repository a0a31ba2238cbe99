package observe

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// finish assembles the snapshot from everything added, in an order that does not depend on the
// order objects arrived in.
func (b *builder) finish(source string, opts Options) (*mesh.Snapshot, error) {
	s := &mesh.Snapshot{
		Revisions:            b.revisions,
		Ztunnels:             b.ztunnels,
		Nodes:                b.nodes,
		NodePools:            b.nodePools,
		PodDisruptionBudgets: b.pdbs,
		Policies:             b.policies,
		CRDs:                 b.crds,
		DefaultRevision:      b.defaultRevision,
		Injectors:            b.injectors,
		Observation:          mesh.Observation{Source: source},
	}
	if err := b.kubernetesVersion(s, opts); err != nil {
		return nil, err
	}
	for i := range s.Nodes {
		if r := b.nodeRequested[s.Nodes[i].Name]; len(r) > 0 {
			s.Nodes[i].Requested = r
		}
	}
	b.finishNodeAgents(s)
	s.Tags = b.tags()
	b.finishWorkloads(s)
	b.finishNamespaces(s)
	b.finishGateways(s)
	b.mig.finish(s)
	b.finishNetwork(s)
	releases, err := b.finishHelm()
	if err != nil {
		return nil, err
	}
	s.HelmReleases = releases
	s.CRDs = b.finishCRDs(s.CRDs)
	s.Observation.Unread = b.unread(s.CRDs)
	s.Normalize()
	s.GatewayAPI = gatewayAPI(s.CRDs) // CRDs are sorted now, so ties resolve the same way every time
	// Ownership follows istiod's rules and needs the whole snapshot: tags, namespaces, revisions.
	s.ResolveGatewayOwners()
	return s, nil
}

func (b *builder) kubernetesVersion(s *mesh.Snapshot, opts Options) error {
	if opts.ServerVersion != nil {
		info, err := opts.ServerVersion.ServerVersion()
		if err != nil {
			return fmt.Errorf("read the Kubernetes server version: %w; check access to the API server's /version, or leave Options.ServerVersion nil to take the oldest kubelet's version", err)
		}
		if info == nil {
			return fmt.Errorf("read the Kubernetes server version: the server returned no version; leave Options.ServerVersion nil to take the oldest kubelet's version")
		}
		v, err := mesh.ParseKubernetesVersion(info.GitVersion)
		if err != nil {
			return fmt.Errorf("read the Kubernetes server version: %w; leave Options.ServerVersion nil to take the oldest kubelet's version", err)
		}
		s.Cluster.KubernetesVersion, s.Cluster.KubernetesVersionSource = v, "server"
		return nil
	}
	if b.kubectlVersionAt != "" {
		s.Cluster.KubernetesVersion, s.Cluster.KubernetesVersionSource = b.kubectlVersion, kubectlVersionSource
		return nil
	}
	for _, k := range b.kubelets {
		v, err := mesh.ParseKubernetesVersion(k)
		if err != nil {
			continue // an odd kubelet version says nothing about the control plane
		}
		if s.Cluster.KubernetesVersion.IsZero() || v.Less(s.Cluster.KubernetesVersion) {
			s.Cluster.KubernetesVersion = v
		}
	}
	if !s.Cluster.KubernetesVersion.IsZero() {
		s.Cluster.KubernetesVersionSource = "nodes"
	}
	return nil
}

// finishNodeAgents picks the CNI, attaches its configuration, and gives the CNI and every ztunnel
// the pods their DaemonSet owns.
func (b *builder) finishNodeAgents(s *mesh.Snapshot) {
	if len(b.cnis) > 0 {
		// Several candidates are unusual; prefer the canonical name, then the first by namespace/name.
		sort.Slice(b.cnis, func(i, j int) bool {
			a, c := b.cnis[i], b.cnis[j]
			if (a.Name == cniDaemonSetName) != (c.Name == cniDaemonSetName) {
				return a.Name == cniDaemonSetName
			}
			return a.Namespace+"/"+a.Name < c.Namespace+"/"+c.Name
		})
		cni := b.cnis[0]
		cni.Config = b.cniConfig[cni.Namespace]
		cni.Pods = b.nodePods[cni.Namespace+"/"+cni.Name]
		s.CNI = &cni
	}
	for i := range s.Ztunnels {
		z := &s.Ztunnels[i]
		z.Pods = b.nodePods[z.Namespace+"/"+z.Name]
	}
}

// tags merges tag webhooks and tag Services by tag name. Each object's revision is kept
// (WebhookRevision, ServiceRevision): istiod 1.28+ counts both (istio/istio@1.30.3 and
// @release-1.31: pkg/revisions/tag_watcher.go, GetMyTags), so a tag whose two objects disagree is
// claimed by two revisions, and no preference between them may hide that. Revision prefers the
// webhook's label, as before.
func (b *builder) tags() []mesh.Tag {
	sort.Slice(b.tagWebhooks, func(i, j int) bool { return b.tagWebhooks[i].Webhook < b.tagWebhooks[j].Webhook })
	sort.Slice(b.tagServices, func(i, j int) bool {
		return b.tagServices[i].ServiceNamespace+"/"+b.tagServices[i].Service < b.tagServices[j].ServiceNamespace+"/"+b.tagServices[j].Service
	})
	byName := map[string]*mesh.Tag{}
	var order []string
	for _, t := range b.tagWebhooks {
		if _, ok := byName[t.Name]; ok {
			continue
		}
		t := t
		byName[t.Name] = &t
		order = append(order, t.Name)
	}
	for _, svc := range b.tagServices {
		t, ok := byName[svc.Name]
		if !ok {
			svc := svc
			byName[svc.Name] = &svc
			order = append(order, svc.Name)
			continue
		}
		if t.Service != "" {
			continue
		}
		t.Service, t.ServiceNamespace, t.ServiceRevision, t.ServiceRelease = svc.Service, svc.ServiceNamespace, svc.ServiceRevision, svc.ServiceRelease
		if t.Revision == "" {
			t.Revision = svc.Revision
		}
	}
	out := make([]mesh.Tag, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out
}

// finishWorkloads resolves Jobs to their CronJobs and turns the counters into workloads.
func (b *builder) finishWorkloads(s *mesh.Snapshot) {
	keys := make([]workloadKey, 0, len(b.workloads))
	for k := range b.workloads {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].namespace+"/"+keys[i].kind+"/"+keys[i].name < keys[j].namespace+"/"+keys[j].kind+"/"+keys[j].name
	})
	merged := map[workloadKey]*workloadAgg{}
	var order []workloadKey
	for _, k := range keys {
		w := b.workloads[k]
		if k.kind == "Job" {
			b.boundJob(w, k)
			if cj, ok := b.cronJobOf[k.namespace+"/"+k.name]; ok {
				k = workloadKey{k.namespace, "CronJob", cj}
			}
		}
		if m, ok := merged[k]; ok {
			m.merge(w)
			continue
		}
		merged[k] = w
		order = append(order, k)
	}
	for _, k := range order {
		w := merged[k].workload(k)
		w.Scheduling = merged[k].scheduling
		w.Placed = b.finishPlacement(merged[k].placed)
		s.Workloads = append(s.Workloads, w)
	}
}

// boundJob sets how long the pods of one Job may run: the shorter of the Job's and the pods' own
// activeDeadlineSeconds, unbounded when neither is set (or the Job was not read and its pods set
// none).
func (b *builder) boundJob(w *workloadAgg, k workloadKey) {
	job, read := b.jobDeadline[k.namespace+"/"+k.name]
	pods := w.podDeadline
	if w.podNoDeadline {
		pods = 0
	}
	switch {
	case read && job > 0 && pods > 0:
		w.deadline = min(job, pods)
	case read && job > 0:
		w.deadline = job
	case pods > 0:
		w.deadline = pods
	default:
		w.unbounded = true
	}
}

// finishNamespaces lists every namespace seen as an object or through its pods, with its summary.
func (b *builder) finishNamespaces(s *mesh.Snapshot) {
	names := map[string]bool{}
	for n := range b.namespaces {
		names[n] = true
	}
	for n := range b.podNS {
		names[n] = true
	}
	for n := range names {
		ns := mesh.Namespace{Name: n, Labels: b.namespaces[n]}
		if agg := b.podNS[n]; agg != nil {
			ns.Pods = agg.summary(ns.Ambient())
		}
		s.Namespaces = append(s.Namespaces, ns)
	}
}

// finishGateways fills gateway pods and versions from the workloads that run them.
func (b *builder) finishGateways(s *mesh.Snapshot) {
	for _, g := range append(append([]mesh.Gateway(nil), b.apiGateways...), b.gwDeploys...) {
		for _, w := range s.Workloads {
			if w.Namespace != g.Namespace {
				continue
			}
			if g.Kind == mesh.GatewayKindAPI && w.GatewayName != g.Name {
				continue
			}
			if g.Kind == mesh.GatewayKindDeployment && (w.Kind != "Deployment" || w.Name != g.Name) {
				continue
			}
			g.Pods += w.Pods
			g.ReadyPods += w.Ready
			for _, v := range w.ProxyVersions {
				if !containsVersion(g.Versions, v) {
					g.Versions = append(g.Versions, v)
				}
			}
			if g.Kind == mesh.GatewayKindAPI && g.ManagedBy == "" {
				g.ManagedBy = w.Labels[labelGatewayManaged]
			}
		}
		s.Gateways = append(s.Gateways, g)
	}
}

func containsVersion(list []mesh.Version, v mesh.Version) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// finishCRDs adds the CRDs whose objects were seen but which the input does not hold (users often
// leave `kubectl get crd` out of a dump): installed, with their metadata unknown (mesh.CRD.Inferred).
func (b *builder) finishCRDs(crds []mesh.CRD) []mesh.CRD {
	have := map[string]bool{}
	for _, c := range crds {
		have[c.Name] = true
	}
	for name, group := range b.customKinds {
		if !have[name] {
			crds = append(crds, mesh.CRD{Name: name, Group: group, Inferred: true})
		}
	}
	return crds
}

// gatewayAPI summarises the Gateway API CRDs: installed when the gateways CRD exists (seen or
// inferred from Gateway objects), the oldest bundle version, and the channel (experimental when any
// CRD says so).
func gatewayAPI(crds []mesh.CRD) mesh.GatewayAPI {
	var g mesh.GatewayAPI
	var oldest mesh.Version
	oldestRaw := ""
	for _, c := range crds {
		if c.Group != gatewayAPIGroup {
			continue
		}
		if c.Name == "gateways."+gatewayAPIGroup {
			g.Installed = true
		}
		switch ch := c.Annotations[annotationChannel]; {
		case ch == "experimental":
			g.Channel = ch
		case ch != "" && g.Channel == "":
			g.Channel = ch
		}
		raw := c.Annotations[annotationBundle]
		if raw == "" {
			continue
		}
		v, err := mesh.ParseVersion(strings.TrimPrefix(raw, "v"))
		switch {
		case err != nil:
			if oldestRaw == "" && g.BundleVersion == "" {
				g.BundleVersion = raw // unreadable, but better than nothing until a readable one shows up
			}
		case oldestRaw == "" || v.Less(oldest):
			oldest, oldestRaw = v, raw
			g.BundleVersion = raw
		}
	}
	return g
}

// unread lists the resources of mesh.ConfigGroups that the cluster's CRDs serve and the input did
// not read, sorted; nil when the input does not say what it read.
func (b *builder) unread(crds []mesh.CRD) []string {
	if !b.complete {
		return nil
	}
	var out []string
	for _, c := range crds {
		if mesh.IsConfigGroup(c.Group) && !b.read[c.Name] && b.customKinds[c.Name] == "" {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}
