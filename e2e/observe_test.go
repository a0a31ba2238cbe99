//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
)

type snapshotKey struct{}

// TestObserveLive observes the live cluster and compares the snapshot with what the charts and the
// fixtures installed.
func TestObserveLive(t *testing.T) {
	v := mesh.MustParseVersion(harness.IstioVersion)
	f := features.New("observe a live ambient mesh").
		WithLabel("feature", "observe").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			snap, err := observe.Live(ctx, h.Client, observe.Options{PageSize: 50, ServerVersion: h.Clientset.Discovery()})
			if err != nil {
				t.Fatalf("observe.Live: %v", err)
			}
			t.Logf("observed in %d API requests; skipped %v", snap.Observation.Requests, snap.Observation.Skipped)
			return context.WithValue(ctx, snapshotKey{}, snap)
		}).
		Assess("the Kubernetes version is the server's", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := snap(ctx)
			info, err := h.Clientset.Discovery().ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			want, err := mesh.ParseKubernetesVersion(info.GitVersion)
			if err != nil {
				t.Fatal(err)
			}
			if s.Cluster.KubernetesVersion != want || s.Cluster.KubernetesVersionSource != "server" {
				t.Errorf("cluster version %v from %q, want %v from \"server\"", s.Cluster.KubernetesVersion, s.Cluster.KubernetesVersionSource, want)
			}
			if s.Observation.Source != "live" || s.Observation.Requests == 0 {
				t.Errorf("observation %+v, want source live and some requests", s.Observation)
			}
			return ctx
		}).
		Assess("istiod revision 1-30-3 runs 1.30.3 with the ambient profile and trusts the chart's ztunnel", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			type rev struct {
				Name, Namespace, Deployment, Image, HelmRelease string
				Version                                         mesh.Version
				Ambient, Ready                                  bool
				Trusted                                         []string
			}
			var got []rev
			for _, r := range snap(ctx).Revisions {
				got = append(got, rev{r.Name, r.Namespace, r.Deployment, r.Image, r.HelmRelease, r.Version, r.Ambient, r.Ready(), r.TrustedZtunnelAccounts})
			}
			want := []rev{{
				Name: harness.Revision, Namespace: harness.IstioNamespace, Deployment: h.Istio.IstiodRelease(),
				Image: harness.IstioHub + "/pilot:" + harness.IstioVersion + "-distroless", HelmRelease: h.Istio.IstiodRelease(),
				Version: v, Ambient: true, Ready: true,
				// Rendered by the real chart: CA_TRUSTED_NODE_ACCOUNTS = <release namespace>/ztunnel.
				Trusted: []string{harness.IstioNamespace + "/ztunnel"},
			}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("revisions (-want +got):\n%s", d)
			}
			if s := snap(ctx); s.DefaultRevision != harness.Revision {
				t.Errorf("default revision %q, want %q (base chart defaultRevision)", s.DefaultRevision, harness.Revision)
			}
			return ctx
		}).
		Assess("revision tags and injectors point at the revision", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := snap(ctx)
			type tag struct{ Name, Revision, Webhook, Service, ServiceNamespace, TargetService string }
			var got []tag
			for _, x := range s.Tags {
				got = append(got, tag{x.Name, x.Revision, x.Webhook, x.Service, x.ServiceNamespace, x.TargetService})
			}
			// The webhooks call the revision's istiod Service, or the fake's URL in its url mode.
			target := harness.IstioNamespace + "/" + h.Istio.IstiodRelease()
			if h.Fake != nil && h.Fake.URLFor("inject", harness.Revision) != "" {
				target = h.Fake.URLFor("inject", harness.Revision)
			}
			var want []tag
			for _, name := range h.Istio.Tags {
				want = append(want, tag{name, harness.Revision, "istio-revision-tag-" + name, "istiod-revision-tag-" + name,
					harness.IstioNamespace, target})
			}
			sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("tags (-want +got):\n%s", d)
			}
			type inj struct{ Name, Revision, Tag string }
			var gotInj []inj
			for _, x := range s.Injectors {
				gotInj = append(gotInj, inj{x.Name, x.Revision, x.Tag})
			}
			wantInj := []inj{
				{"istio-revision-tag-default", harness.Revision, "default"},
				{"istio-revision-tag-" + harness.TagProdStable, harness.Revision, harness.TagProdStable},
				{"istio-sidecar-injector-" + harness.Revision, harness.Revision, ""},
			}
			if d := cmp.Diff(wantInj, gotInj); d != "" {
				t.Errorf("injectors (-want +got):\n%s", d)
			}
			return ctx
		}).
		Assess("the CNI and ztunnel run 1.30.3 on every node", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := snap(ctx)
			nodes := 0
			for _, ns := range h.Nodes {
				nodes += len(ns)
			}
			if s.CNI == nil {
				t.Fatal("no CNI observed")
			}
			type agent struct {
				Namespace, Name, Image, HelmRelease, Revision, ServiceAccount string
				Version                                                       mesh.Version
				Complete                                                      bool
				Desired, Pods, ReadyPods                                      int
				PodVersions                                                   []mesh.Version
			}
			view := func(pods []mesh.NodePod) (ready int, vs []mesh.Version) {
				seen := map[mesh.Version]bool{}
				for _, p := range pods {
					if p.Ready {
						ready++
					}
					if !seen[p.Version] {
						seen[p.Version] = true
						vs = append(vs, p.Version)
					}
				}
				return
			}
			r, vs := view(s.CNI.Pods)
			gotCNI := agent{Namespace: s.CNI.Namespace, Name: s.CNI.Name, Image: s.CNI.Image, HelmRelease: s.CNI.HelmRelease,
				Version: s.CNI.Version, Complete: s.CNI.Rollout.Complete(), Desired: int(s.CNI.Rollout.Desired),
				Pods: len(s.CNI.Pods), ReadyPods: r, PodVersions: vs}
			wantCNI := agent{Namespace: harness.IstioNamespace, Name: charts.DaemonSetCNI,
				Image: harness.IstioHub + "/install-cni:" + harness.IstioVersion + "-distroless", HelmRelease: charts.ReleaseCNI,
				Version: v, Complete: true, Desired: nodes, Pods: nodes, ReadyPods: nodes, PodVersions: []mesh.Version{v}}
			if d := cmp.Diff(wantCNI, gotCNI); d != "" {
				t.Errorf("CNI (-want +got):\n%s", d)
			}
			if s.CNI.Config["AMBIENT_ENABLED"] != "true" {
				t.Errorf("CNI config AMBIENT_ENABLED=%q, want \"true\" (profile ambient); config %v", s.CNI.Config["AMBIENT_ENABLED"], s.CNI.Config)
			}

			var gotZ []agent
			for _, z := range s.Ztunnels {
				r, vs := view(z.Pods)
				gotZ = append(gotZ, agent{Namespace: z.Namespace, Name: z.Name, Image: z.Image, HelmRelease: z.HelmRelease,
					Revision: z.Revision, ServiceAccount: z.ServiceAccount, Version: z.Version, Complete: z.Rollout.Complete(),
					Desired: int(z.Rollout.Desired), Pods: len(z.Pods), ReadyPods: r, PodVersions: vs})
			}
			wantZ := []agent{{Namespace: harness.IstioNamespace, Name: charts.DaemonSetZtun,
				Image: harness.IstioHub + "/ztunnel:" + harness.IstioVersion + "-distroless", HelmRelease: charts.ReleaseZtunnel,
				Revision: harness.Revision, ServiceAccount: "ztunnel", Version: v, Complete: true,
				Desired: nodes, Pods: nodes, ReadyPods: nodes, PodVersions: []mesh.Version{v}}}
			if d := cmp.Diff(wantZ, gotZ); d != "" {
				t.Errorf("ztunnels (-want +got):\n%s", d)
			}
			if len(s.Ztunnels) == 1 {
				z := s.Ztunnels[0]
				wantStrategy := mesh.UpdateStrategy{Type: "RollingUpdate", MaxSurge: "1", MaxUnavailable: "0"}
				if z.UpdateStrategy != wantStrategy || z.TerminationGracePeriodSeconds != 30 {
					t.Errorf("ztunnel strategy %+v grace %d, want %+v grace 30 (chart defaults)", z.UpdateStrategy, z.TerminationGracePeriodSeconds, wantStrategy)
				}
			}
			return ctx
		}).
		Assess("the ingress gateway and the waypoint belong to the revision", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			type gw struct {
				Kind, Namespace, Name, Class, WaypointFor, Revision, HelmRelease string
				Waypoint                                                         bool
				Pods, ReadyPods                                                  int
				Versions                                                         []mesh.Version
			}
			var got []gw
			for _, g := range snap(ctx).Gateways {
				got = append(got, gw{g.Kind, g.Namespace, g.Name, g.Class, g.WaypointFor, g.Revision, g.HelmRelease, g.Waypoint, g.Pods, g.ReadyPods, g.Versions})
			}
			want := []gw{
				// The gateway chart's pods follow the default tag; injection gave them proxyv2 1.30.3.
				{Kind: mesh.GatewayKindDeployment, Namespace: harness.GatewayNamespace, Name: harness.GatewayRelease,
					Revision: harness.Revision, HelmRelease: harness.GatewayRelease, Pods: 1, ReadyPods: 1, Versions: []mesh.Version{v}},
				// No istiod runs on kwok to deploy the waypoint, so it has no pods; unlabelled, the
				// default tag owns it.
				{Kind: mesh.GatewayKindAPI, Namespace: "orders", Name: "waypoint", Class: "istio-waypoint", WaypointFor: "service",
					Revision: harness.Revision, Waypoint: true},
			}
			if h.Cluster.Provider() == cluster.ProviderKind {
				// A real istiod deploys the waypoint: take its pod counts as observed.
				for _, g := range got {
					if g.Kind == mesh.GatewayKindAPI && g.Name == "waypoint" {
						want[1].Pods, want[1].ReadyPods = g.Pods, g.ReadyPods
					}
				}
			}
			sort.Slice(want, func(i, j int) bool {
				return gwLess(want[i].Kind, want[i].Namespace, want[i].Name, want[j].Kind, want[j].Namespace, want[j].Name)
			})
			sort.Slice(got, func(i, j int) bool {
				return gwLess(got[i].Kind, got[i].Namespace, got[i].Name, got[j].Kind, got[j].Namespace, got[j].Name)
			})
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("gateways (-want +got):\n%s", d)
			}
			return ctx
		}).
		Assess("namespaces and workloads count sidecar and ambient pods as the fixtures made them", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := snap(ctx)
			type nsView struct {
				Labels                                map[string]string
				Total, AmbientEnabled, AmbientPending int
				AmbientMissing, None                  int
				Sidecar                               map[string]int
			}
			for _, fn := range h.Fixtures.Namespaces {
				total, sidecar, ambient, none := h.Fixtures.PodsIn(fn.Name)
				want := nsView{Labels: fn.Labels, Total: total, AmbientEnabled: ambient, None: none}
				if sidecar > 0 {
					want.Sidecar = map[string]int{fn.SidecarRevision: sidecar}
				}
				if len(want.Labels) == 0 {
					want.Labels = nil
				}
				n, ok := s.Namespace(fn.Name)
				if !ok {
					t.Errorf("namespace %s not observed", fn.Name)
					continue
				}
				got := nsView{Labels: n.Labels, Total: n.Pods.Total, AmbientEnabled: n.Pods.AmbientEnabled, AmbientPending: n.Pods.AmbientPending,
					AmbientMissing: n.Pods.AmbientMissing, None: n.Pods.None, Sidecar: n.Pods.Sidecar}
				if len(got.Labels) == 0 {
					got.Labels = nil
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("namespace %s (-want +got):\n%s", fn.Name, d)
				}
			}

			type wl struct {
				Mode                string
				Pods, Ready         int
				SidecarRevisions    map[string]int
				ProxyVersions       []mesh.Version
				Redirection         map[string]int
				OptedOut            int
				NodesOutsideThePool []string
			}
			byKey := map[string]mesh.Workload{}
			for _, w := range s.Workloads {
				byKey[w.Namespace+"/"+w.Kind+"/"+w.Name] = w
			}
			pool := map[string]string{}
			for p, names := range h.Nodes {
				for _, n := range names {
					pool[n] = p
				}
			}
			for _, fw := range h.Fixtures.Workloads {
				key := fw.Namespace + "/" + fw.Kind + "/" + fw.Name
				w, ok := byKey[key]
				if !ok {
					t.Errorf("workload %s not observed", key)
					continue
				}
				want := wl{Pods: fw.Pods, Ready: fw.Pods}
				switch {
				case fw.OptedOut:
					want.Mode, want.OptedOut = mesh.ModeNone, fw.Pods
				case fw.Mode == "sidecar":
					want.Mode = mesh.ModeSidecar
					want.SidecarRevisions = map[string]int{harness.Revision: fw.Pods}
					want.ProxyVersions = []mesh.Version{v}
				case fw.Mode == "ambient":
					want.Mode = mesh.ModeAmbient
					want.Redirection = map[string]int{"enabled": fw.Pods}
				default:
					want.Mode = mesh.ModeNone
				}
				got := wl{Mode: w.Mode, Pods: w.Pods, Ready: w.Ready, SidecarRevisions: w.SidecarRevisions,
					ProxyVersions: w.ProxyVersions, Redirection: w.Redirection, OptedOut: w.OptedOut}
				for _, n := range w.Nodes {
					if pool[n] != fw.Pool {
						got.NodesOutsideThePool = append(got.NodesOutsideThePool, n)
					}
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("workload %s (-want +got):\n%s", key, d)
				}
			}
			return ctx
		}).
		Assess("nodes, PodDisruptionBudgets, policies, Helm releases and Gateway API are observed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := snap(ctx)
			gotPools := map[string]int{}
			notReady := 0
			for _, n := range s.Nodes {
				if n.PoolLabel == cluster.PoolLabel {
					gotPools[n.Pool]++
				}
				if !n.Ready {
					notReady++
				}
			}
			wantPools := map[string]int{}
			for p, names := range h.Nodes {
				wantPools[p] = len(names)
			}
			if d := cmp.Diff(wantPools, gotPools); d != "" || notReady > 0 {
				t.Errorf("nodes per pool (-want +got):\n%s; %d not ready", d, notReady)
			}

			fixtureNS := map[string]bool{}
			for _, n := range h.Fixtures.Namespaces {
				fixtureNS[n.Name] = true
			}
			var pdbs []string
			for _, p := range s.PodDisruptionBudgets {
				if fixtureNS[p.Namespace] {
					pdbs = append(pdbs, p.Namespace+"/"+p.Name)
				}
			}
			if d := cmp.Diff(h.Fixtures.PDBs, pdbs); d != "" {
				t.Errorf("PodDisruptionBudgets (-want +got):\n%s", d)
			}

			type pol struct {
				Kind, Namespace, Name, RevisionLabel, Action, Mode string
				HasSelector, HasTargetRefs                         bool
				L7, PortModes, Hosts                               []string
			}
			var got []pol
			for _, p := range s.Policies {
				got = append(got, pol{p.Kind, p.Namespace, p.Name, p.RevisionLabel, p.Action, p.Mode, p.HasSelector, p.HasTargetRefs, sorted(p.L7), sorted(p.PortModes), p.Hosts})
			}
			want := []pol{
				{Kind: "AuthorizationPolicy", Namespace: "analytics", Name: "reports-l4", RevisionLabel: harness.Revision, Action: "DENY", HasSelector: true},
				{Kind: "AuthorizationPolicy", Namespace: "orders", Name: "orders-l7", Action: "ALLOW", HasTargetRefs: true, L7: []string{"methods", "paths"}},
				{Kind: "DestinationRule", Namespace: "payments", Name: "api", Hosts: []string{"api.payments.svc.cluster.local"}},
				{Kind: "PeerAuthentication", Namespace: harness.IstioNamespace, Name: "default", Mode: "STRICT"},
				{Kind: "PeerAuthentication", Namespace: "payments", Name: "permissive-metrics", Mode: "STRICT", HasSelector: true, PortModes: []string{"9090=PERMISSIVE"}},
				{Kind: "VirtualService", Namespace: "shop", Name: "web", Hosts: []string{"web.shop.svc.cluster.local"}},
			}
			sort.Slice(got, func(i, j int) bool {
				return polKey(got[i].Kind, got[i].Namespace, got[i].Name) < polKey(got[j].Kind, got[j].Namespace, got[j].Name)
			})
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("policies (-want +got):\n%s", d)
			}

			type rel struct{ Name, Namespace, Chart, ChartVersion, AppVersion, Status string }
			var gotRel []rel
			for _, r := range s.HelmReleases {
				gotRel = append(gotRel, rel{r.Name, r.Namespace, r.Chart, r.ChartVersion, r.AppVersion, r.Status})
			}
			iv := harness.IstioVersion
			wantRel := []rel{
				{charts.ReleaseBase, harness.IstioNamespace, "base", iv, iv, "deployed"},
				{h.Istio.IstiodRelease(), harness.IstioNamespace, "istiod", iv, iv, "deployed"},
				{charts.ReleaseCNI, harness.IstioNamespace, "cni", iv, iv, "deployed"},
				{charts.ReleaseZtunnel, harness.IstioNamespace, "ztunnel", iv, iv, "deployed"},
				{harness.GatewayRelease, harness.GatewayNamespace, "gateway", iv, iv, "deployed"},
			}
			sort.Slice(wantRel, func(i, j int) bool {
				return wantRel[i].Namespace+"/"+wantRel[i].Name < wantRel[j].Namespace+"/"+wantRel[j].Name
			})
			sort.Slice(gotRel, func(i, j int) bool {
				return gotRel[i].Namespace+"/"+gotRel[i].Name < gotRel[j].Namespace+"/"+gotRel[j].Name
			})
			if d := cmp.Diff(wantRel, gotRel); d != "" {
				t.Errorf("Helm releases (-want +got):\n%s", d)
			}

			wantGW := mesh.GatewayAPI{Installed: true, BundleVersion: h.GatewayAPIVersion, Channel: "standard"}
			if s.GatewayAPI != wantGW {
				t.Errorf("Gateway API %+v, want %+v", s.GatewayAPI, wantGW)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f, dumpMatchesLive())
}

type dumpKey struct{}

// dump is what dumpMatchesLive's Setup made: the snapshots of the dump and of the live cluster, and
// which optional dump commands failed (the kinds the cluster does not serve).
type dump struct {
	dir           string
	offline, live *mesh.Snapshot
	// serial is the live cluster read one kind at a time, streamed with watch-lists (Options.WatchList).
	serial, streamed *mesh.Snapshot
	failedOptional   []string
	commands, files  int
}

// kubectl returns the kubectl binary the harness built ($E2E_BIN_DIR/kubectl), or one on PATH for
// providers that need no binaries.
func kubectl(t *testing.T) string {
	if dir := os.Getenv("E2E_BIN_DIR"); dir != "" {
		p := filepath.Join(dir, "kubectl")
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("kubectl: %v (hack/e2e-bins.sh builds it into E2E_BIN_DIR)", err)
		}
		return p
	}
	p, err := exec.LookPath("kubectl")
	if err != nil {
		failCannotRun(t, fmt.Sprintf("no kubectl: E2E_BIN_DIR is unset and kubectl is not on PATH (%v)", err))
	}
	return p
}

// dumpMatchesLive saves a dump of the cluster with exactly the commands observe.DumpCommands gives,
// run through the real kubectl, and checks that observe.Dir over it sees what observe.Live sees and
// that both give the same upgrade plan.
func dumpMatchesLive() features.Feature {
	return features.New("a kubectl dump made with observe.DumpCommands observes like the live cluster").
		WithLabel("feature", "observe").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := &dump{dir: t.TempDir()}
			kc := kubectl(t)
			prefix := []string{kc, "--kubeconfig", h.Cluster.Kubeconfig(), "--cache-dir", filepath.Join(d.dir, ".kube-cache")}
			cmds := observe.DumpCommands(observe.DumpOptions{Kubectl: prefix,
				ReleaseNamespaces: []string{harness.IstioNamespace, harness.GatewayNamespace}})
			t0 := time.Now()
			for _, c := range cmds {
				out, err := os.Create(filepath.Join(d.dir, c.File))
				if err != nil {
					t.Fatal(err)
				}
				var stderr bytes.Buffer
				cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				cmd := exec.CommandContext(cctx, c.Argv[0], c.Argv[1:]...)
				cmd.Dir, cmd.Stdout, cmd.Stderr = d.dir, out, &stderr
				err = cmd.Run()
				cancel()
				if cerr := out.Close(); cerr != nil {
					t.Fatal(cerr)
				}
				line := strings.Replace(c.String(), kc, "kubectl", 1)
				switch {
				case err == nil:
				case c.Optional && strings.Contains(stderr.String(), "the server doesn't have a resource type"):
					d.failedOptional = append(d.failedOptional, c.Argv[len(prefix)+1])
					t.Logf("optional, not served: %s", line)
				default:
					t.Fatalf("%s: %v\n%s", line, err, stderr.String())
				}
				d.commands++
			}
			entries, err := os.ReadDir(d.dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !e.IsDir() {
					d.files++
				}
			}
			t.Logf("dump: %d commands, %d files in %s", d.commands, d.files, time.Since(t0).Round(time.Millisecond))
			if d.offline, err = observe.Dir(ctx, d.dir, observe.Options{}); err != nil {
				t.Fatalf("observe.Dir over the dump: %v", err)
			}
			if d.live, err = observe.Live(ctx, h.Client, observe.Options{PageSize: 50, ServerVersion: h.Clientset.Discovery()}); err != nil {
				t.Fatalf("observe.Live: %v", err)
			}
			if d.serial, err = observe.Live(ctx, h.Client, observe.Options{PageSize: 50, Parallel: 1, ServerVersion: h.Clientset.Discovery()}); err != nil {
				t.Fatalf("observe.Live one kind at a time: %v", err)
			}
			wc, err := client.NewWithWatch(h.RestConfig, client.Options{Scheme: observe.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			if d.streamed, err = observe.Live(ctx, wc, observe.Options{WatchList: true, ServerVersion: h.Clientset.Discovery()}); err != nil {
				t.Fatalf("observe.Live with watch-lists: %v", err)
			}
			return context.WithValue(ctx, dumpKey{}, d)
		}).
		Assess("reading kinds one at a time or streaming them gives the same snapshot", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := ctx.Value(dumpKey{}).(*dump)
			ignore := cmpopts.IgnoreFields(mesh.Snapshot{}, "Observation")
			if diff := cmp.Diff(d.live, d.serial, ignore); diff != "" {
				t.Errorf("one kind at a time (-parallel +serial):\n%s", diff)
			}
			if diff := cmp.Diff(d.live, d.streamed, ignore); diff != "" {
				t.Errorf("with watch-lists (-lists +watch-lists):\n%s", diff)
			}
			// A watch-list per list the paged observation makes: no LIST at all.
			if d.streamed.Observation.Requests >= d.live.Observation.Requests && d.live.Observation.Requests > 30 {
				t.Errorf("watch-lists made %d requests, paged LISTs %d", d.streamed.Observation.Requests, d.live.Observation.Requests)
			}
			if diff := cmp.Diff(d.live.Observation.Skipped, d.streamed.Observation.Skipped); diff != "" {
				t.Errorf("skipped kinds (-lists +watch-lists):\n%s", diff)
			}
			t.Logf("requests: %d in pages of 50, %d one kind at a time, %d with watch-lists", d.live.Observation.Requests, d.serial.Observation.Requests, d.streamed.Observation.Requests)
			return ctx
		}).
		Assess("the dump gives the live snapshot", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := ctx.Value(dumpKey{}).(*dump)
			if d.offline.Cluster.KubernetesVersionSource != "kubectl-version" || d.live.Cluster.KubernetesVersionSource != "server" {
				t.Errorf("version sources: dump %q, live %q; want kubectl-version and server",
					d.offline.Cluster.KubernetesVersionSource, d.live.Cluster.KubernetesVersionSource)
			}
			// Everything else is equal: the version itself, and every release read from its records.
			opts := cmp.Options{
				cmpopts.IgnoreFields(mesh.Snapshot{}, "Observation"),
				cmpopts.IgnoreFields(mesh.Cluster{}, "KubernetesVersionSource"),
			}
			if diff := cmp.Diff(d.live, d.offline, opts); diff != "" {
				t.Errorf("snapshot of the dump differs from the live one (-live +dump):\n%s", diff)
			}
			if len(d.offline.HelmReleases) != 5 {
				t.Errorf("the dump gives %d Helm releases, want the 5 the harness installed", len(d.offline.HelmReleases))
			}
			for _, r := range d.offline.HelmReleases {
				if r.Inferred || r.Revision == 0 {
					t.Errorf("release %s was not read from its record (inferred %v)", r.String(), r.Inferred)
				}
			}
			for _, c := range d.offline.CRDs {
				if c.Inferred {
					t.Errorf("CRD %s inferred although the dump holds the CRDs", c.Name)
				}
			}
			if d.offline.Fingerprint() != d.live.Fingerprint() {
				t.Errorf("fingerprints differ: dump %s, live %s", d.offline.Fingerprint(), d.live.Fingerprint())
			}
			return ctx
		}).
		Assess("the optional commands that fail are the kinds Live skips", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := ctx.Value(dumpKey{}).(*dump)
			var skipped []string
			for _, label := range d.live.Observation.Skipped {
				// "karpenter.sh/NodePool" is read by kubectl as "nodepools.karpenter.sh"; the
				// configuration kinds name their plurals (XMesh: xmeshes).
				group, kind, _ := strings.Cut(label, "/")
				plural := strings.ToLower(kind) + "s"
				if ck, ok := mesh.KnownConfigKind(group, kind); ok {
					plural = ck.Plural
				}
				skipped = append(skipped, plural+"."+group)
			}
			if diff := cmp.Diff(sorted(skipped), sorted(d.failedOptional)); diff != "" {
				t.Errorf("optional kinds not served (-skipped by Live +failed in the dump):\n%s", diff)
			}
			return ctx
		}).
		Assess("the dump and the live cluster give the same upgrade plan", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := ctx.Value(dumpKey{}).(*dump)
			opts := ambient.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Today: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
			encode := func(name string, s *mesh.Snapshot) string {
				p, err := ambient.PlanUpgrade(s, opts)
				if err != nil {
					t.Fatalf("PlanUpgrade from the %s snapshot: %v", name, err)
				}
				b, err := plan.EncodeYAML(p)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			live, offline := encode("live", d.live), encode("dump", d.offline)
			if diff := cmp.Diff(live, offline); diff != "" {
				t.Errorf("plans differ (-live +dump):\n%s", diff)
			}
			t.Logf("plan: %d bytes of YAML, equal from both", len(live))
			return ctx
		}).
		Feature()
}

func snap(ctx context.Context) *mesh.Snapshot {
	s, _ := ctx.Value(snapshotKey{}).(*mesh.Snapshot)
	if s == nil {
		panic("no snapshot in context: the Setup step failed")
	}
	return s
}

func gwLess(k1, ns1, n1, k2, ns2, n2 string) bool {
	return k1+"/"+ns1+"/"+n1 < k2+"/"+ns2+"/"+n2
}

func polKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func sorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
