// Command demo-mesh installs the embedded demo mesh (package ambient/io/demo) on a kwok cluster, from
// the real Istio charts with the Helm SDK, and then keeps playing istiod's webhooks and status and the
// CNI's capture for it until it is stopped. hack/e2e-cluster.sh runs it for `up --demo`:
//
//	demo-mesh -kubeconfig KC -dir DIR   # writes DIR/charts and DIR/demo-mesh.ready, then serves
//
// What it makes, read from the demo's own YAML so the two cannot drift apart:
//
//   - the 14 nodes (names, pools, labels, taints; ip-10-0-1-18 cordoned once its pods run) as kwok
//     nodes with loopback addresses, and the two Karpenter NodePools (CRD keeping every field);
//   - the Gateway API standard CRDs and the namespaces with their labels;
//   - the Helm releases at the chart versions and values the demo's release Secrets record (base and
//     istiod upgraded once, as their v2 records say), from istio.io/istio's manifests/charts stamped
//     1.30.3 as the e2e harness does (e2e/internal/charts), and the revision tags of the demo's tag
//     webhooks, rendered from the istiod chart and applied outside any release;
//   - the workloads: each ReplicaSet's pods become a Deployment (the demo's own Deployment where it
//     has one, the waypoints'), the StatefulSet, Jobs and CronJob get the pod template of their pods,
//     every replica pinned to the node the demo runs it on; sidecars come from injection and capture
//     from the fake CNI, not from the YAML;
//   - the rest as the demo has it: GatewayClasses, waypoint Gateways, PodDisruptionBudgets, Istio
//     policies, the CA Secret.
//
// The webhook hazard (../shared/docs/real-cluster.md): the charts' webhooks name the istiod Service,
// which no pod serves on kwok. As in the e2e harness, a fake istiod (e2e/internal/fakeistiod) serves
// injection and validation on the Service's loopback ClusterIP (the cluster's Service range is
// 127.96.0.0/16) and keeps the webhooks' caBundle; it refuses a cluster whose kubernetes Service is not
// on the loopback. So the program must keep running while the cluster is used: the script starts it
// in the background and `down` stops it.
//
// DIR/charts holds the charts stamped 1.31.4 (base, istiod, cni, ztunnel, gateway) and, beside them,
// <chart>@1.30.3 folders, the layout the examples' --charts takes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/fakecni"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the kwok cluster (hack/e2e-cluster.sh up)")
	dir := flag.String("dir", "", "folder for the stamped charts, the Helm cache and the ready file")
	timeout := flag.Duration("timeout", 3*time.Minute, "bound on each wait for a workload or CRD")
	flag.Parse()
	if *kubeconfig == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "demo-mesh: -kubeconfig and -dir are required (see hack/e2e-cluster.sh up --demo)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *dir, *timeout); err != nil && !errors.Is(ctx.Err(), context.Canceled) {
		logf("FAILED: %v", err)
		os.Exit(1)
	}
}

var t0 = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[demo-mesh %6.1fs] %s\n", time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
}

// The versions the demo runs and the one its examples plan to.
const (
	demoVersion   = "1.30.3"
	targetVersion = "1.31.4"
	istioHub      = "docker.io/istio"
	istioNS       = "istio-system"
)

// Files the program writes into -dir: its process id at start (hack/e2e-cluster.sh down stops that
// process), and once the mesh is installed the ready file, which holds the charts folder.
const (
	PIDFile   = "demo-mesh.pid"
	ReadyFile = "demo-mesh.ready"
)

func run(ctx context.Context, kubeconfig, dir string, timeout time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, ReadyFile))
	if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	k, err := connect(kubeconfig, timeout)
	if err != nil {
		return err
	}
	d, err := loadDemo()
	if err != nil {
		return err
	}
	if err := k.checkLoopback(ctx); err != nil {
		return err
	}
	if err := k.nodes(ctx, d); err != nil {
		return err
	}
	gwAPI, err := charts.InstallGatewayAPICRDs(ctx, k.ap, timeout)
	if err != nil {
		return fmt.Errorf("gateway api CRDs: %w", err)
	}
	logf("gateway api: standard CRDs %s installed", gwAPI)
	if err := k.namespaces(ctx, d); err != nil {
		return err
	}

	fake, err := fakeistiod.Start(ctx, fakeistiod.Options{Client: k.cs, IstioNamespace: istioNS, Logf: logf})
	if err != nil {
		return err
	}
	defer fake.Stop()
	cni := fakecni.New(k.cs, 500*time.Millisecond)
	cni.Start(ctx)
	defer cni.Stop()
	k.sync = func(ctx context.Context) error {
		sctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return fake.Sync(sctx)
	}

	src, err := charts.IstioChartsDir(ctx)
	if err != nil {
		return err
	}
	helm := &charts.Helm{Kubeconfig: kubeconfig, CacheDir: filepath.Join(dir, "helm-cache"), ChartsDir: src, ReleaseVersion: demoVersion, Logf: logf}
	logf("istio: charts from %s", src)
	if err := k.istio(ctx, helm, d); err != nil {
		return err
	}
	status, err := fakeistiod.StartStatus(ctx, fakeistiod.StatusOptions{Dynamic: k.dyn, Client: k.cs, Logf: logf})
	if err != nil {
		return err
	}
	defer status.Stop()
	if err := k.rest(ctx, d); err != nil {
		return err
	}
	if err := k.workloads(ctx, d); err != nil {
		return err
	}
	if _, err := cni.Sync(ctx); err != nil {
		return fmt.Errorf("fake CNI: %w", err)
	}
	if _, err := status.Sync(ctx); err != nil {
		return fmt.Errorf("fake istiod status: %w", err)
	}

	chartsDir := filepath.Join(dir, "charts")
	if err := stampCharts(helm, chartsDir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReadyFile), []byte(chartsDir+"\n"), 0o644); err != nil {
		return err
	}
	logf("ready in %s: demo mesh installed; charts %s (%s, <chart>@%s); serving webhooks until stopped",
		time.Since(t0).Round(100*time.Millisecond), chartsDir, targetVersion, demoVersion)
	<-ctx.Done()
	logf("stopping")
	return nil
}

// stampCharts writes the charts of the target release into dst and those of the running release
// beside them as <chart>@<version>, from the same sources the installation used.
func stampCharts(h *charts.Helm, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if _, err := h.StampCharts(dst, targetVersion); err != nil {
		return fmt.Errorf("stamp charts %s: %w", targetVersion, err)
	}
	tmp := dst + ".tmp"
	defer os.RemoveAll(tmp)
	paths, err := h.StampCharts(tmp, demoVersion)
	if err != nil {
		return fmt.Errorf("stamp charts %s: %w", demoVersion, err)
	}
	for name, p := range paths {
		if err := os.Rename(p, filepath.Join(dst, name+"@"+demoVersion)); err != nil {
			return err
		}
	}
	return nil
}
