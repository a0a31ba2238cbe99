// Package meshtest builds snapshots for tests: a small healthy ambient mesh to start from, and
// helpers to bend it into the broken states the rules must catch.
package meshtest

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Healthy returns a consistent ambient mesh at the given Istio version: one istiod revision named after
// the version (e.g. "1-30-3") with tags default and prod, istio-cni and one ztunnel on every node, nodes
// in two pools, an ambient namespace with a waypoint, a sidecar namespace, Gateway API v1.5.1 and a
// Kubernetes version the release supports.
func Healthy(version string, nodes int) *mesh.Snapshot {
	v := mesh.MustParseVersion(version)
	rev := v.RevisionName()
	s := &mesh.Snapshot{
		Cluster:         mesh.Cluster{KubernetesVersion: mesh.Version{Major: 1, Minor: v.Minor + 4, Patch: 0}, KubernetesVersionSource: "server"},
		DefaultRevision: rev,
		GatewayAPI:      mesh.GatewayAPI{Installed: true, BundleVersion: "v1.6.0", Channel: "standard"},
	}
	s.Revisions = []mesh.Revision{{
		Name: rev, Namespace: "istio-system", Deployment: "istiod-" + rev, Version: v,
		Image: "docker.io/istio/pilot:" + version + "-distroless", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2,
		ObservedCurrent: true, Ambient: true, TrustedZtunnelAccounts: []string{"istio-system/ztunnel"}, HelmRelease: "istiod-" + rev,
	}}
	for _, t := range []string{"default", "prod"} {
		s.Tags = append(s.Tags, mesh.Tag{Name: t, Revision: rev, Webhook: "istio-revision-tag-" + t,
			Service: "istiod-revision-tag-" + t, ServiceNamespace: "istio-system", TargetService: "istio-system/istiod-" + rev})
	}
	n := int32(nodes)
	rollout := mesh.DaemonSetRollout{Desired: n, Current: n, Ready: n, Updated: n, Available: n, ObservedCurrent: true}
	s.CNI = &mesh.CNI{Namespace: "istio-system", Name: "istio-cni-node", Version: v, Image: "docker.io/istio/install-cni:" + version,
		Rollout: rollout, UpdateStrategy: mesh.UpdateStrategy{Type: "RollingUpdate", MaxUnavailable: "1"}, TerminationGracePeriodSeconds: 30,
		Config: map[string]string{"AMBIENT_ENABLED": "true", "CURRENT_AGENT_VERSION": version}, HelmRelease: "istio-cni"}
	z := mesh.Ztunnel{Namespace: "istio-system", Name: "ztunnel", ServiceAccount: "ztunnel", Version: v, Image: "docker.io/istio/ztunnel:" + version,
		Selector: map[string]string{"app": "ztunnel"}, NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		UpdateStrategy: mesh.UpdateStrategy{Type: "RollingUpdate", MaxSurge: "1", MaxUnavailable: "0"}, TerminationGracePeriodSeconds: 30,
		Rollout: rollout, Revision: rev, HelmRelease: "ztunnel"}
	var names []string
	for i := 0; i < nodes; i++ {
		pool := "general"
		if i%2 == 1 {
			pool = "batch"
		}
		name := fmt.Sprintf("%s-%d", pool, i)
		names = append(names, name)
		s.Nodes = append(s.Nodes, mesh.Node{Name: name, Pool: pool, PoolLabel: "karpenter.sh/nodepool", Ready: true,
			Labels: map[string]string{"karpenter.sh/nodepool": pool, "kubernetes.io/os": "linux"}, KubeletVersion: "v1.34.0"})
		s.CNI.Pods = append(s.CNI.Pods, mesh.NodePod{Node: name, Pod: "istio-cni-node-" + name, Version: v, Ready: true})
		z.Pods = append(z.Pods, mesh.NodePod{Node: name, Pod: "ztunnel-" + name, Version: v, Ready: true})
	}
	s.Ztunnels = []mesh.Ztunnel{z}
	s.Namespaces = []mesh.Namespace{
		{Name: "shop", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient", mesh.LabelUseWaypoint: "shop-waypoint"},
			Pods: mesh.PodSummary{Total: 4, AmbientEnabled: 4}},
		{Name: "legacy", Labels: map[string]string{mesh.LabelRev: "prod"}, Pods: mesh.PodSummary{Total: 2, Sidecar: map[string]int{rev: 2}}},
		{Name: "istio-system", Pods: mesh.PodSummary{Total: 2 + 2*nodes, None: 2 + 2*nodes}},
	}
	s.Workloads = []mesh.Workload{
		{Namespace: "shop", Kind: "Deployment", Name: "cart", Labels: map[string]string{"app": "cart"}, Pods: 2, Ready: 2, Mode: mesh.ModeAmbient,
			Redirection: map[string]int{"enabled": 2}, Nodes: pick(names, 0, 1)},
		{Namespace: "shop", Kind: "StatefulSet", Name: "db", Labels: map[string]string{"app": "db"}, Pods: 2, Ready: 2, Mode: mesh.ModeAmbient,
			Redirection: map[string]int{"enabled": 2}, Nodes: pick(names, 1, 2), LocalStorage: true},
		{Namespace: "legacy", Kind: "Deployment", Name: "billing", Labels: map[string]string{"app": "billing"}, Pods: 2, Ready: 2, Mode: mesh.ModeSidecar,
			SidecarRevisions: map[string]int{rev: 2}, ProxyVersions: []mesh.Version{v}, PodRevisionLabel: "", Nodes: pick(names, 0, 2)},
		{Namespace: "shop", Kind: "Deployment", Name: "shop-waypoint", Labels: map[string]string{"gateway.networking.k8s.io/gateway-name": "shop-waypoint"},
			Pods: 1, Ready: 1, Mode: mesh.ModeNone, OptedOut: 1, Nodes: pick(names, 0), GatewayName: "shop-waypoint"},
	}
	s.Gateways = []mesh.Gateway{
		{Kind: mesh.GatewayKindAPI, Namespace: "shop", Name: "shop-waypoint", Class: "istio-waypoint", Waypoint: true, WaypointFor: "service",
			Revision: rev, Versions: []mesh.Version{v}, Pods: 1, ReadyPods: 1},
		{Kind: mesh.GatewayKindDeployment, Namespace: "istio-ingress", Name: "istio-ingress", RevisionLabel: "prod", Revision: rev,
			Versions: []mesh.Version{v}, Pods: 2, ReadyPods: 2, HelmRelease: "istio-ingress"},
	}
	s.PodDisruptionBudgets = []mesh.PodDisruptionBudget{
		{Namespace: "shop", Name: "cart", Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}, MinAvailable: "1",
			DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2},
	}
	s.HelmReleases = []mesh.HelmRelease{
		{Name: "istio-base", Namespace: "istio-system", Chart: "base", ChartVersion: version, AppVersion: version, Revision: 1, Status: "deployed",
			Values: map[string]any{"defaultRevision": rev}},
		{Name: "istiod-" + rev, Namespace: "istio-system", Chart: "istiod", ChartVersion: version, AppVersion: version, Revision: 1, Status: "deployed",
			Values: map[string]any{"revision": rev, "profile": "ambient"}},
		{Name: "istio-cni", Namespace: "istio-system", Chart: "cni", ChartVersion: version, AppVersion: version, Revision: 1, Status: "deployed",
			Values: map[string]any{"profile": "ambient"}},
		{Name: "ztunnel", Namespace: "istio-system", Chart: "ztunnel", ChartVersion: version, AppVersion: version, Revision: 1, Status: "deployed",
			Values: map[string]any{"revision": rev}},
		{Name: "istio-ingress", Namespace: "istio-ingress", Chart: "gateway", ChartVersion: version, AppVersion: version, Revision: 1, Status: "deployed",
			Values: map[string]any{"revision": "prod"}},
	}
	s.CRDs = []mesh.CRD{{Name: "authorizationpolicies.security.istio.io", Group: "security.istio.io",
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "istio-base", "meta.helm.sh/release-namespace": "istio-system"}}}
	s.Normalize()
	return s
}

func pick(names []string, idx ...int) []string {
	var out []string
	for _, i := range idx {
		if i < len(names) {
			out = append(out, names[i])
		}
	}
	return out
}

// SetControlPlane sets the version (and image) of every istiod revision.
func SetControlPlane(s *mesh.Snapshot, version string) {
	v := mesh.MustParseVersion(version)
	for i := range s.Revisions {
		s.Revisions[i].Version = v
		s.Revisions[i].Image = "docker.io/istio/pilot:" + version
	}
}

// SetCNI sets the istio-cni version on the DaemonSet and every pod.
func SetCNI(s *mesh.Snapshot, version string) {
	v := mesh.MustParseVersion(version)
	s.CNI.Version = v
	for i := range s.CNI.Pods {
		s.CNI.Pods[i].Version = v
	}
}

// SetZtunnel sets the version of every ztunnel DaemonSet and pod.
func SetZtunnel(s *mesh.Snapshot, version string) {
	v := mesh.MustParseVersion(version)
	for i := range s.Ztunnels {
		s.Ztunnels[i].Version = v
		for j := range s.Ztunnels[i].Pods {
			s.Ztunnels[i].Pods[j].Version = v
		}
	}
}

// SetDataPlane sets CNI, ztunnel, sidecar proxies and gateways to the version.
func SetDataPlane(s *mesh.Snapshot, version string) {
	SetCNI(s, version)
	SetZtunnel(s, version)
	v := mesh.MustParseVersion(version)
	for i := range s.Workloads {
		if len(s.Workloads[i].ProxyVersions) > 0 {
			s.Workloads[i].ProxyVersions = []mesh.Version{v}
		}
	}
	for i := range s.Gateways {
		s.Gateways[i].Versions = []mesh.Version{v}
	}
}
