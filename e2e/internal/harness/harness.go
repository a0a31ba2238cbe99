// Package harness wires the e2e environment together: the cluster, the simulated nodes, the Gateway
// API CRDs, the fake istiod and CNI, the real Istio charts and the fixtures. Its methods are
// sigs.k8s.io/e2e-framework env.Funcs, so every suite's TestMain is a few lines and every suite runs
// against the same installation whatever the provider.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fakecni"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
	"github.com/ambientkit/ambientkit/e2e/internal/fixtures"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// The installation every suite starts from.
const (
	IstioNamespace   = "istio-system"
	Revision         = "1-30-3"
	IstioVersion     = "1.30.3"
	IstioHub         = "docker.io/istio"
	TagProdStable    = "prod-stable"
	GatewayNamespace = "istio-ingress"
	GatewayRelease   = "istio-ingress"
	PoolGeneral      = "general"
	PoolBatch        = "batch"
)

// Options configure a run.
type Options struct {
	Cluster cluster.Options
	// FakeIstiod serves injection and validation (needed where pods never run: kwok).
	FakeIstiod     bool
	FakeIstiodMode fakeistiod.Mode
	// FakeCNI marks ambient pods as istio-cni would (needed where no CNI agent runs: kwok).
	FakeCNI bool
	// FakeNodes creates the pools as kwok nodes (the cluster must run a kwok controller); otherwise
	// the cluster's schedulable nodes are spread over the pools.
	FakeNodes bool
	// Pools of nodes.
	Pools []cluster.Pool
	// AppImage of the fixtures' application containers (default fixtures.DefaultAppImage).
	AppImage string
	// KeepCluster leaves the cluster running at the end; KeepRunDir keeps the run folder on success.
	KeepCluster, KeepRunDir bool
	// Timeout for each component or workload to become ready.
	Timeout time.Duration
}

// OptionsFromEnv reads the cluster options (see cluster.OptionsFromEnv) and E2E_FAKE_ISTIOD (on|off),
// E2E_FAKE_ISTIOD_MODE (service|url, default: service when port 443 can be bound), E2E_FAKE_CNI
// (on|off), E2E_FAKE_NODES (on|off, default on for kwok), E2E_NODES (per pool, default 12),
// E2E_APP_IMAGE, E2E_KEEP_CLUSTER=1, E2E_KEEP_RUN_DIR=1. The fakes
// default to on, except on kind where the real istiod and CNI run.
func OptionsFromEnv() (Options, error) {
	co, err := cluster.OptionsFromEnv()
	if err != nil {
		return Options{}, err
	}
	o := Options{Cluster: co, Timeout: 3 * time.Minute}
	fakes := co.Provider != cluster.ProviderKind
	if o.FakeIstiod, err = onOff("E2E_FAKE_ISTIOD", fakes); err != nil {
		return o, err
	}
	if o.FakeCNI, err = onOff("E2E_FAKE_CNI", fakes); err != nil {
		return o, err
	}
	if o.FakeNodes, err = onOff("E2E_FAKE_NODES", co.Provider == cluster.ProviderKwok); err != nil {
		return o, err
	}
	o.FakeIstiodMode = fakeistiod.Mode(os.Getenv("E2E_FAKE_ISTIOD_MODE"))
	o.AppImage = os.Getenv("E2E_APP_IMAGE")
	perPool := 12
	if v := os.Getenv("E2E_NODES"); v != "" {
		if perPool, err = strconv.Atoi(v); err != nil || perPool < 1 {
			return o, fmt.Errorf("E2E_NODES=%q: want a positive number of nodes per pool", v)
		}
	}
	o.Pools = []cluster.Pool{{Name: PoolGeneral, Nodes: perPool}, {Name: PoolBatch, Nodes: perPool}}
	o.KeepCluster = os.Getenv("E2E_KEEP_CLUSTER") == "1"
	o.KeepRunDir = os.Getenv("E2E_KEEP_RUN_DIR") == "1"
	return o, nil
}

func onOff(name string, def bool) (bool, error) {
	switch strings.ToLower(os.Getenv(name)) {
	case "":
		return def, nil
	case "on", "1", "true":
		return true, nil
	case "off", "0", "false":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: want on or off", name, os.Getenv(name))
}

// Timing is how long one part of the run took.
type Timing struct {
	Name     string
	Duration time.Duration
}

// Harness is one e2e run's environment. Fields are set by the Setup funcs in order.
type Harness struct {
	Opts       Options
	Cluster    *cluster.Cluster
	RestConfig *rest.Config
	Clientset  kubernetes.Interface
	// Client is a controller-runtime client with observe.Scheme and watches (client.NewWithWatch), for
	// observe.Live and the executor, whose waits then wake on watches.
	Client  client.Client
	Gateway gatewayclient.Interface
	Applier *kube.Applier
	Helm    *charts.Helm
	Istio   charts.Istio
	Fake    *fakeistiod.Server
	CNI     *fakecni.Agent
	// Nodes per pool.
	Nodes map[string][]string
	// GatewayAPIVersion is the bundle version of the installed Gateway API CRDs.
	GatewayAPIVersion string
	// InstallSteps are the timed chart installation steps.
	InstallSteps []charts.Step
	Fixtures     *fixtures.Created

	t0       time.Time
	mu       sync.Mutex
	timings  []Timing
	failed   atomic.Bool
	tornDown atomic.Bool
}

// New makes a harness from the environment.
func New() (*Harness, error) {
	o, err := OptionsFromEnv()
	if err != nil {
		return nil, err
	}
	return NewWithOptions(o)
}

// NewWithOptions makes a harness; nothing starts until the Setup funcs run.
func NewWithOptions(o Options) (*Harness, error) {
	h := &Harness{Opts: o, t0: time.Now()}
	o.Cluster.Logf = h.Logf
	c, err := cluster.New(o.Cluster)
	if err != nil {
		return nil, err
	}
	h.Cluster = c
	h.Istio = charts.Istio{
		Namespace: IstioNamespace, Revision: Revision, Version: IstioVersion, Hub: IstioHub,
		Tags:             []string{"default", TagProdStable},
		GatewayNamespace: GatewayNamespace, GatewayRelease: GatewayRelease,
		Timeout: o.Timeout,
	}
	h.Logf("run folder %s, provider %s", c.RunDir(), c.Provider())
	return h, nil
}

// Logf prints a progress line with the time since the run started.
func (h *Harness) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[e2e %6.1fs] %s\n", time.Since(h.t0).Seconds(), fmt.Sprintf(format, args...))
}

func (h *Harness) timed(name string, f func() error) error {
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	h.mu.Lock()
	h.timings = append(h.timings, Timing{Name: name, Duration: d})
	h.mu.Unlock()
	if err != nil {
		h.failed.Store(true)
		h.Logf("%s FAILED after %s: %v", name, d.Round(time.Millisecond), err)
		return fmt.Errorf("%s: %w", name, err)
	}
	h.Logf("%s done in %s", name, d.Round(time.Millisecond))
	return nil
}

// Timings returns the timed parts of the run so far.
func (h *Harness) Timings() []Timing {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Timing(nil), h.timings...)
}

// CreateCluster starts (or connects to) the cluster and creates the nodes.
func (h *Harness) CreateCluster(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	err := h.timed("cluster", func() error {
		kc, err := h.Cluster.Create(ctx)
		if err != nil {
			return err
		}
		cfg.WithKubeconfigFile(kc)
		return h.connect(kc)
	})
	if err != nil {
		return ctx, err
	}
	err = h.timed("nodes", func() error {
		var err error
		if h.Opts.FakeNodes {
			h.Nodes, err = cluster.CreateNodes(ctx, h.Clientset, h.Opts.Pools, h.Opts.Timeout)
		} else {
			h.Nodes, err = cluster.LabelExistingNodes(ctx, h.Clientset, h.Opts.Pools)
		}
		n := 0
		for _, v := range h.Nodes {
			n += len(v)
		}
		h.Logf("nodes: %d in pools %v", n, poolSizes(h.Nodes))
		return err
	})
	return ctx, err
}

func poolSizes(m map[string][]string) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}

func (h *Harness) connect(kubeconfig string) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400
	h.RestConfig = rc
	if h.Clientset, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	if h.Client, err = client.NewWithWatch(rc, client.Options{Scheme: observe.Scheme()}); err != nil {
		return err
	}
	if h.Gateway, err = gatewayclient.NewForConfig(rc); err != nil {
		return err
	}
	if h.Applier, err = kube.NewApplier(rc, "ambientkit-e2e"); err != nil {
		return err
	}
	return nil
}

// InstallIstio installs the Gateway API CRDs, starts the fakes and installs the Istio charts.
func (h *Harness) InstallIstio(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	err := h.timed("gateway-api-crds", func() error {
		v, err := charts.InstallGatewayAPICRDs(ctx, h.Applier, h.Opts.Timeout)
		h.GatewayAPIVersion = v
		h.Logf("gateway api: standard CRDs %s installed", v)
		return err
	})
	if err != nil {
		return ctx, err
	}
	if h.Opts.FakeIstiod {
		err = h.timed("fake-istiod", func() error {
			var err error
			h.Fake, err = fakeistiod.Start(ctx, fakeistiod.Options{
				Client: h.Clientset, IstioNamespace: IstioNamespace, Mode: h.Opts.FakeIstiodMode, Logf: h.Logf,
			})
			return err
		})
		if err != nil {
			return ctx, err
		}
	}
	if h.Opts.FakeCNI {
		h.CNI = fakecni.New(h.Clientset, 500*time.Millisecond)
		h.CNI.Start(ctx)
	}
	err = h.timed("istio", func() error {
		dir, err := charts.IstioChartsDir(ctx)
		if err != nil {
			return err
		}
		h.Helm = &charts.Helm{
			Kubeconfig: h.Cluster.Kubeconfig(), CacheDir: filepath.Join(h.Cluster.RunDir(), "helm-cache"),
			ChartsDir: dir, ReleaseVersion: IstioVersion, Logf: h.Logf,
		}
		h.Logf("istio: charts from %s", dir)
		h.InstallSteps, err = charts.InstallIstio(ctx, h.Helm, h.Clientset, h.Applier, h.Istio, h.syncWebhooks)
		return err
	})
	return ctx, err
}

// syncWebhooks waits until the fake istiod serves every Istio webhook configuration (a no-op without it).
func (h *Harness) syncWebhooks(ctx context.Context, step string) error {
	if h.Fake == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, h.Opts.Timeout)
	defer cancel()
	return h.Fake.Sync(sctx)
}

// CreateFixtures creates the workloads and policies, and waits until ambient pods are captured.
func (h *Harness) CreateFixtures(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	err := h.timed("fixtures", func() error {
		if err := h.syncWebhooks(ctx, "fixtures"); err != nil {
			return err
		}
		var err error
		h.Fixtures, err = fixtures.Create(ctx, h.Clientset, h.Gateway, h.Applier, fixtures.Spec{
			Revision: Revision, Tag: TagProdStable, IstioNamespace: IstioNamespace,
			GeneralPool: PoolGeneral, BatchPool: PoolBatch, AppImage: h.Opts.AppImage, Timeout: h.Opts.Timeout,
		})
		if err != nil {
			return err
		}
		if h.CNI != nil {
			if _, err := h.CNI.Sync(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	return ctx, err
}

// RecordFailure is an AfterEachTest func that remembers failed tests (logs are exported at Finish).
func (h *Harness) RecordFailure(ctx context.Context, cfg *envconf.Config, t *testing.T) (context.Context, error) {
	if t.Failed() {
		h.failed.Store(true)
	}
	return ctx, nil
}

// Finish stops the fakes, saves what they recorded and, after a failure, the component logs, then
// deletes the cluster (unless E2E_KEEP_CLUSTER=1; an existing cluster is never deleted).
func (h *Harness) Finish(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	h.Teardown()
	return ctx, nil
}

// Teardown is Finish without the framework (also used on signals). It runs once.
func (h *Harness) Teardown() {
	if !h.tornDown.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if h.CNI != nil {
		h.CNI.Stop()
	}
	if h.Fake != nil {
		h.Fake.Stop()
		calls := h.Fake.Calls()
		if b, err := json.MarshalIndent(calls, "", "  "); err == nil {
			p := filepath.Join(h.Cluster.RunDir(), "webhook-calls.json")
			if os.WriteFile(p, b, 0o644) == nil {
				h.Logf("fake istiod: %d webhook calls recorded in %s", len(calls), p)
			}
		}
	}
	if h.failed.Load() {
		files, err := h.Cluster.ExportLogs(ctx, filepath.Join(h.Cluster.RunDir(), "logs"))
		if err != nil {
			h.Logf("exporting component logs failed: %v", err)
		} else if len(files) > 0 {
			h.Logf("component logs saved: %s", strings.Join(files, ", "))
		}
	}
	if h.Opts.KeepCluster {
		h.Logf("E2E_KEEP_CLUSTER=1: cluster left running; kubeconfig %s", h.Cluster.Kubeconfig())
		return
	}
	if !h.Cluster.Owned() {
		_ = h.timed("cleanup", func() error { return h.cleanupExisting(ctx) })
		return
	}
	_ = h.timed("teardown", func() error { return h.Cluster.Destroy(ctx) })
}

// cleanupExisting removes from a cluster the suite did not create what the run added: the fixture
// namespaces and the Istio releases and tags. Gateway API and Istio CRDs, the istio-system and
// istio-ingress namespaces and the pool labels on nodes stay.
func (h *Harness) cleanupExisting(ctx context.Context) error {
	if h.Clientset == nil {
		return nil
	}
	var errs []error
	nss, err := h.Clientset.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: fixtures.LabelFixture + "=true"})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, n := range nss.Items {
			if err := h.Clientset.CoreV1().Namespaces().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	if h.Helm != nil {
		if err := charts.UninstallIstio(ctx, h.Helm, h.Clientset, h.Istio); err != nil {
			errs = append(errs, err)
		}
	}
	// Wait for the namespaces to go, so a next run against this cluster can create them again.
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := h.Clientset.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: fixtures.LabelFixture + "=true"})
		return err == nil && len(l.Items) == 0, nil
	})
	if len(h.Nodes) > 0 && h.Opts.FakeNodes {
		for _, names := range h.Nodes {
			for _, n := range names {
				_ = h.Clientset.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
			}
		}
	}
	return errors.Join(errs...)
}

// Done prints the timings and removes the run folder after a successful run (unless
// E2E_KEEP_RUN_DIR=1 or the cluster was kept).
func (h *Harness) Done(code int) {
	var parts []string
	for _, t := range h.Timings() {
		parts = append(parts, fmt.Sprintf("%s=%s", t.Name, t.Duration.Round(100*time.Millisecond)))
	}
	for _, s := range h.InstallSteps {
		parts = append(parts, fmt.Sprintf("istio/%s=%s", s.Name, s.Duration.Round(100*time.Millisecond)))
	}
	h.Logf("timings: %s; total %s", strings.Join(parts, " "), time.Since(h.t0).Round(100*time.Millisecond))
	if code == 0 && !h.failed.Load() && !h.Opts.KeepRunDir && !h.Opts.KeepCluster {
		_ = os.RemoveAll(h.Cluster.RunDir())
		return
	}
	h.Logf("run folder kept: %s", h.Cluster.RunDir())
}
