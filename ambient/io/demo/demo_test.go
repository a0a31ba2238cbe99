package demo_test

import (
	"context"
	"io/fs"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

func snapshot(t *testing.T) *mesh.Snapshot {
	t.Helper()
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDemoControlPlane(t *testing.T) {
	s := snapshot(t)
	v := mesh.MustParseVersion("1.30.3")
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"Kubernetes is 1.34.2, read from the kubelets", s.Cluster, mesh.Cluster{KubernetesVersion: mesh.MustParseVersion("1.34.2"), KubernetesVersionSource: "nodes"}},
		{"one ambient istiod revision 1-30-3 with two ready replicas that trusts the ztunnel", s.Revisions, []mesh.Revision{{
			Name: "1-30-3", Namespace: "istio-system", Deployment: "istiod-1-30-3", Version: v, Image: "docker.io/istio/pilot:1.30.3-distroless",
			Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, ObservedCurrent: true, Ambient: true,
			TrustedZtunnelAccounts: []string{"istio-system/ztunnel"}, HelmRelease: "istiod-1-30-3"}}},
		{"the default revision is 1-30-3", s.DefaultRevision, "1-30-3"},
		{"three tags, each with a webhook and a Service, all pointing at 1-30-3", s.Tags, []mesh.Tag{
			{Name: "canary", Revision: "1-30-3", WebhookRevision: "1-30-3", ServiceRevision: "1-30-3", Webhook: "istio-revision-tag-canary", Service: "istiod-revision-tag-canary", ServiceNamespace: "istio-system", TargetService: "istio-system/istiod-1-30-3"},
			{Name: "default", Revision: "1-30-3", WebhookRevision: "1-30-3", ServiceRevision: "1-30-3", Webhook: "istio-revision-tag-default", Service: "istiod-revision-tag-default", ServiceNamespace: "istio-system", TargetService: "istio-system/istiod-1-30-3"},
			{Name: "prod-stable", Revision: "1-30-3", WebhookRevision: "1-30-3", ServiceRevision: "1-30-3", Webhook: "istio-revision-tag-prod-stable", Service: "istiod-revision-tag-prod-stable", ServiceNamespace: "istio-system", TargetService: "istio-system/istiod-1-30-3"},
		}},
		{"four injectors: the revision's own and one per tag", injectorSelects(s), map[string][]string{
			"istio-sidecar-injector-1-30-3":  {"istio.io/rev=1-30-3"},
			"istio-revision-tag-canary":      {"istio.io/rev=canary"},
			"istio-revision-tag-default":     {"istio-injection=enabled", "istio.io/rev=default", "sidecar.istio.io/inject=true"},
			"istio-revision-tag-prod-stable": {"istio.io/rev=prod-stable"},
		}},
		{"the default owner is 1-30-3 through the default tag", s.DefaultOwner(), "1-30-3"},
		{"Helm releases are the newest revision of each Istio release", releases(s), map[string]string{
			"istio-system/istio-base": "base 1.30.3 #2 deployed", "istio-system/istiod-1-30-3": "istiod 1.30.3 #2 deployed",
			"istio-system/istio-cni": "cni 1.30.3 #1 deployed", "istio-system/ztunnel": "ztunnel 1.30.3 #1 deployed",
			"istio-ingress/istio-ingress": "gateway 1.30.3 #1 deployed",
		}},
		{"Gateway API v1.5.1 standard is installed", s.GatewayAPI, mesh.GatewayAPI{Installed: true, BundleVersion: "v1.5.1", Channel: "standard"}},
		{"23 CRDs: 15 Istio and 8 Gateway API", len(s.CRDs), 23},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, tt.got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func injectorSelects(s *mesh.Snapshot) map[string][]string {
	out := map[string][]string{}
	for _, in := range s.Injectors {
		out[in.Name] = in.Selects
	}
	return out
}

func releases(s *mesh.Snapshot) map[string]string {
	out := map[string]string{}
	for _, h := range s.HelmReleases {
		out[h.Namespace+"/"+h.Name] = h.Chart + " " + h.ChartVersion + " #" + strconv.Itoa(h.Revision) + " " + h.Status
	}
	return out
}

func TestDemoNodesAndNodeAgents(t *testing.T) {
	s := snapshot(t)
	pools := map[string]int{}
	cordoned := 0
	for _, n := range s.Nodes {
		pools[n.Pool]++
		if n.Unschedulable {
			cordoned++
		}
		if !n.Ready || n.PoolLabel != "karpenter.sh/nodepool" || n.KubeletVersion != "v1.34.2" {
			t.Errorf("node %s: ready %v, pool label %q, kubelet %q", n.Name, n.Ready, n.PoolLabel, n.KubeletVersion)
		}
	}
	if d := cmp.Diff(map[string]int{"general": 8, "batch": 6}, pools); d != "" || len(s.Nodes) != 14 || cordoned != 1 {
		t.Errorf("14 nodes in two pools with one cordoned; got %d nodes, %d cordoned, pools (-want +got):\n%s", len(s.Nodes), cordoned, d)
	}

	v := mesh.MustParseVersion("1.30.3")
	if s.CNI == nil {
		t.Fatal("no CNI")
	}
	if s.CNI.Name != "istio-cni-node" || s.CNI.Version != v || !s.CNI.Rollout.Complete() || s.CNI.HelmRelease != "istio-cni" ||
		s.CNI.Config["AMBIENT_ENABLED"] != "true" || s.CNI.Config["AMBIENT_DNS_CAPTURE"] != "true" || s.CNI.Config["CURRENT_AGENT_VERSION"] != "1.30.3" {
		t.Errorf("CNI = %+v", s.CNI)
	}
	if len(s.Ztunnels) != 1 {
		t.Fatalf("ztunnels = %d, want 1", len(s.Ztunnels))
	}
	z := s.Ztunnels[0]
	wantZ := mesh.Ztunnel{Namespace: "istio-system", Name: "ztunnel", ServiceAccount: "ztunnel", Version: v, Image: "docker.io/istio/ztunnel:1.30.3-distroless",
		Selector: map[string]string{"app": "ztunnel"}, NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		UpdateStrategy: mesh.UpdateStrategy{Type: "RollingUpdate", MaxUnavailable: "0", MaxSurge: "1"}, TerminationGracePeriodSeconds: 30,
		Rollout:  mesh.DaemonSetRollout{Desired: 14, Current: 14, Ready: 14, Updated: 14, Available: 14, ObservedCurrent: true},
		Revision: "1-30-3", XDSAddress: "istiod-1-30-3.istio-system.svc:15012", CAAddress: "istiod-1-30-3.istio-system.svc:15012", HelmRelease: "ztunnel"}
	gotZ := z
	gotZ.Pods = nil
	if d := cmp.Diff(wantZ, gotZ); d != "" {
		t.Errorf("ztunnel (-want +got):\n%s", d)
	}
	if rev, ok := s.ZtunnelRevision(z); !ok || rev != "1-30-3" {
		t.Errorf("ztunnel revision = %q %v", rev, ok)
	}
	for _, agent := range []struct {
		name string
		pods []mesh.NodePod
	}{{"CNI", s.CNI.Pods}, {"ztunnel", z.Pods}} {
		nodes := map[string]bool{}
		for _, p := range agent.pods {
			if !p.Ready || p.Version != v || p.Terminating {
				t.Errorf("%s pod %s on %s: %+v", agent.name, p.Pod, p.Node, p)
			}
			nodes[p.Node] = true
		}
		for _, n := range s.Nodes {
			if !nodes[n.Name] {
				t.Errorf("%s has no pod on node %s", agent.name, n.Name)
			}
		}
	}
}

func TestDemoGatewaysAndWaypoints(t *testing.T) {
	s := snapshot(t)
	got := map[string]string{}
	for _, g := range s.Gateways {
		got[g.Ref().String()] = g.Revision
		if g.Pods == 0 || g.ReadyPods != g.Pods || len(g.Versions) != 1 || g.Versions[0] != mesh.MustParseVersion("1.30.3") {
			t.Errorf("gateway %s: pods %d/%d, versions %v", g.Ref(), g.ReadyPods, g.Pods, g.Versions)
		}
	}
	want := map[string]string{
		// pinned to the canary tag by its own istio.io/rev label (istioctl waypoint apply --revision canary)
		"Gateway catalog/catalog-waypoint": "1-30-3",
		// unlabelled, in an unlabelled namespace: the default tag decides
		"Gateway inventory/inventory-waypoint": "1-30-3",
		// the gateway chart's pods carry istio.io/rev=prod-stable
		"Deployment istio-ingress/istio-ingress": "1-30-3",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("gateway owners (-want +got):\n%s", d)
	}
	for _, g := range s.Gateways {
		switch g.Name {
		case "catalog-waypoint":
			ns, _ := s.Namespace(g.Namespace)
			if !g.Waypoint || g.RevisionLabel != "canary" || ns.Labels[mesh.LabelRev] != "" || g.ManagedBy != "istio.io-mesh-controller" {
				t.Errorf("catalog waypoint %+v in namespace %+v", g, ns)
			}
		case "istio-ingress":
			if g.RevisionLabel != "prod-stable" || g.HelmRelease != "istio-ingress" || g.Waypoint {
				t.Errorf("ingress %+v", g)
			}
		}
	}
}

func TestDemoNamespacesWorkloadsAndPolicies(t *testing.T) {
	s := snapshot(t)
	summaries := map[string]mesh.PodSummary{}
	for _, n := range s.Namespaces {
		summaries[n.Name] = n.Pods
	}
	wantSummaries := map[string]mesh.PodSummary{
		"payments":  {Total: 3, Sidecar: map[string]int{"1-30-3": 3}},
		"orders":    {Total: 2, Sidecar: map[string]int{"1-30-3": 2}},
		"catalog":   {Total: 3, AmbientEnabled: 2, None: 1},
		"inventory": {Total: 3, AmbientEnabled: 2, None: 1},
		"search":    {Total: 3, AmbientEnabled: 2, None: 1},
		"data":      {Total: 3, AmbientEnabled: 3},
		"batch":     {Total: 2, None: 2},
	}
	for name, want := range wantSummaries {
		if d := cmp.Diff(want, summaries[name]); d != "" {
			t.Errorf("namespace %s pods (-want +got):\n%s", name, d)
		}
	}

	byRef := map[string]mesh.Workload{}
	for _, w := range s.Workloads {
		byRef[w.Ref().String()] = w
	}
	pg := byRef["StatefulSet data/postgres"]
	if !pg.Stateful() || !pg.LocalStorage || pg.Mode != mesh.ModeAmbient || pg.Pods != 3 {
		t.Errorf("postgres = %+v", pg)
	}
	budgets := s.BudgetsFor(pg)
	if len(budgets) != 1 || budgets[0].MaxUnavailable != "0" || budgets[0].DisruptionsAllowed != 0 {
		t.Errorf("postgres should sit behind a PDB that allows no disruption; got %+v", budgets)
	}
	if w, ok := byRef["CronJob batch/nightly-report"]; !ok || !w.Stateful() {
		t.Errorf("the CronJob's running Job should be summarised under the CronJob: %+v", w)
	}
	if w, ok := byRef["Job batch/reindex-catalog"]; !ok || len(w.Nodes) != 1 {
		t.Errorf("long-running Job: %+v", w)
	}
	if w := byRef["Deployment payments/payments-api"]; w.Mode != mesh.ModeSidecar || w.SidecarRevisions["1-30-3"] != 3 || w.LocalStorage {
		t.Errorf("payments-api: %+v (the sidecar's emptyDir volumes are not the application's local storage)", w)
	}
	if w := byRef["Deployment search/search-indexer"]; w.OptedOut != 1 || w.Mode != mesh.ModeNone {
		t.Errorf("search-indexer: %+v", w)
	}
	nodes := map[string]bool{}
	for _, w := range s.Workloads {
		for _, n := range w.Nodes {
			nodes[n] = true
		}
	}
	if len(nodes) != 14 {
		t.Errorf("pods run on %d nodes, want all 14", len(nodes))
	}

	l7 := map[string]bool{}
	for _, p := range s.Policies {
		if p.Kind == "AuthorizationPolicy" {
			l7[p.Name] = len(p.L7) > 0 && p.HasSelector
		}
		if p.Kind == "PeerAuthentication" && p.Namespace == "istio-system" && p.Mode != "STRICT" {
			t.Errorf("mesh-wide PeerAuthentication mode = %s", p.Mode)
		}
	}
	if d := cmp.Diff(map[string]bool{"payments-allow-ingress": false, "payments-read-only": true, "catalog-viewer": false}, l7); d != "" {
		t.Errorf("selector-based L7 policies (-want +got):\n%s", d)
	}
}

func TestDemoIsStableAndRoundTrips(t *testing.T) {
	a, b := snapshot(t), snapshot(t)
	if a.Observation.Source != "demo" {
		t.Errorf("source = %q", a.Observation.Source)
	}
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("two observations of the demo give different fingerprints")
	}
	data, err := mesh.EncodeSnapshot(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := mesh.DecodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(a, back); d != "" {
		t.Errorf("snapshot does not survive encode/decode (-want +got):\n%s", d)
	}
}

func TestDemoObjectsAndFiles(t *testing.T) {
	objs, err := demo.Objects()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetObjectKind().GroupVersionKind().Kind]++
	}
	if kinds["Node"] != 14 || kinds["Pod"] < 50 || kinds["CustomResourceDefinition"] != 23 {
		t.Errorf("objects by kind: %v", kinds)
	}
	files, err := fs.Glob(demo.Files(), "*.yaml")
	if err != nil || len(files) < 10 {
		t.Errorf("files = %v, %v", files, err)
	}
}
