// Package cluster starts and stops the cluster the e2e suites run against: a kwok cluster built from
// source binaries (default), a kind cluster, or an existing cluster given by a kubeconfig.
//
// A kwok cluster is hermetic: every component binds to 127.0.0.1, the Service range is loopback
// (127.96.0.0/16) so no ClusterIP leads off the machine, and nodes are created by the suite with
// loopback addresses and pod CIDRs, so even a stray logs/exec call would stay on the loopback.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/e2e-framework/support/kind"
	"sigs.k8s.io/e2e-framework/support/kwok"

	"github.com/ambientkit/ambientkit/e2e/internal/kwokstages"
)

// Providers.
const (
	ProviderKwok     = "kwok"
	ProviderKind     = "kind"
	ProviderExisting = "existing"
)

// Timing modes of Options.Timing.
const (
	TimingFast      = kwokstages.ModeFast
	TimingRealistic = kwokstages.ModeRealistic
)

// DefaultServiceCIDR is the loopback Service range of kwok clusters.
const DefaultServiceCIDR = "127.96.0.0/16"

// Options say which cluster to use and where to keep its files.
type Options struct {
	// Provider is ProviderKwok, ProviderKind or ProviderExisting.
	Provider string
	// Name of the cluster to create (kwok, kind).
	Name string
	// RunDir is this run's folder: kubeconfig, kwok work directory, exported logs.
	RunDir string
	// BinDir holds kwokctl, kwok, etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
	BinDir string
	// Kubeconfig of an existing cluster (ProviderExisting).
	Kubeconfig string
	// KindConfig and KindNodeImage are passed to kind when set.
	KindConfig, KindNodeImage string
	// ServiceCIDR of a kwok cluster; default DefaultServiceCIDR.
	ServiceCIDR string
	// ReadyTimeout bounds cluster creation; default 3m.
	ReadyTimeout time.Duration
	// Timing of a kwok cluster's pods (package kwokstages): TimingFast (default) plays kwok's fast
	// stages, where only pods annotated e2e.ambientkit.io/timing=realistic honour their grace period
	// and only pods annotated e2e.ambientkit.io/ready-after turn Ready late; TimingRealistic makes
	// every pod honour its grace period and delays ztunnel readiness by ZtunnelReady (default 3s).
	Timing string
	// ZtunnelReady delays the readiness of every app=ztunnel pod of a kwok cluster (0: at once, or 3s
	// under TimingRealistic).
	ZtunnelReady time.Duration
	// Logf receives progress lines.
	Logf func(format string, args ...any)
}

// OptionsFromEnv reads E2E_PROVIDER (kwok, kind or existing; existing is implied by E2E_KUBECONFIG),
// E2E_KUBECONFIG, E2E_CLUSTER_NAME, E2E_RUN_DIR, E2E_BIN_DIR, E2E_KIND_CONFIG, E2E_KIND_IMAGE,
// E2E_READY_TIMEOUT, E2E_TIMING (fast or realistic) and E2E_ZTUNNEL_READY (a Go duration). RunDir
// defaults to a new folder under the system temp dir.
func OptionsFromEnv() (Options, error) {
	o := Options{
		Provider:      os.Getenv("E2E_PROVIDER"),
		Name:          os.Getenv("E2E_CLUSTER_NAME"),
		RunDir:        os.Getenv("E2E_RUN_DIR"),
		BinDir:        os.Getenv("E2E_BIN_DIR"),
		Kubeconfig:    os.Getenv("E2E_KUBECONFIG"),
		KindConfig:    os.Getenv("E2E_KIND_CONFIG"),
		KindNodeImage: os.Getenv("E2E_KIND_IMAGE"),
	}
	if o.Provider == "" {
		o.Provider = ProviderKwok
		if o.Kubeconfig != "" {
			o.Provider = ProviderExisting
		}
	}
	switch o.Provider {
	case ProviderKwok, ProviderKind:
	case ProviderExisting:
		if o.Kubeconfig == "" {
			return o, errors.New("E2E_PROVIDER=existing needs E2E_KUBECONFIG=<path>")
		}
	default:
		return o, fmt.Errorf("E2E_PROVIDER=%q: want kwok, kind or existing", o.Provider)
	}
	if o.Name == "" {
		o.Name = "ambientkit-e2e"
	}
	if d := os.Getenv("E2E_READY_TIMEOUT"); d != "" {
		t, err := time.ParseDuration(d)
		if err != nil {
			return o, fmt.Errorf("E2E_READY_TIMEOUT: %w", err)
		}
		o.ReadyTimeout = t
	}
	st, err := kwokstages.ParseTiming(os.Getenv("E2E_TIMING"), os.Getenv("E2E_ZTUNNEL_READY"))
	if err != nil {
		return o, fmt.Errorf("E2E_TIMING/E2E_ZTUNNEL_READY: %w", err)
	}
	o.Timing, o.ZtunnelReady = TimingFast, st.ZtunnelReady
	if st.GraceAll {
		o.Timing = TimingRealistic
	}
	return o, nil
}

// Cluster is the cluster of one run.
type Cluster struct {
	opts       Options
	provider   support.E2EClusterProvider
	kubeconfig string
	created    bool
}

// New checks the options and prepares the run folder; nothing is started yet.
func New(opts Options) (*Cluster, error) {
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = DefaultServiceCIDR
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 3 * time.Minute
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if _, err := opts.stages(); err != nil {
		return nil, err
	}
	if opts.RunDir == "" {
		d, err := os.MkdirTemp("", "ambientkit-e2e-")
		if err != nil {
			return nil, err
		}
		opts.RunDir = d
	}
	abs, err := filepath.Abs(opts.RunDir)
	if err != nil {
		return nil, err
	}
	opts.RunDir = abs
	if err := os.MkdirAll(opts.RunDir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts}
	switch opts.Provider {
	case ProviderKwok:
		if opts.BinDir == "" {
			return nil, errors.New("kwok provider: E2E_BIN_DIR is not set; run hack/e2e-bins.sh and export the folder it prints (hack/e2e.sh does both)")
		}
		for _, b := range kwokBinaries {
			if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
				return nil, fmt.Errorf("kwok provider: %s missing in E2E_BIN_DIR=%s (run hack/e2e-bins.sh): %w", b, opts.BinDir, err)
			}
		}
		// kwokctl keeps every cluster under KWOK_WORKDIR: one folder per run, so clusters never collide.
		// Every kwokctl call sets it to its own cluster's folder (inKwokWorkdir), so a suite can run
		// a second cluster beside the shared one.
		c.provider = kwok.NewCluster(opts.Name).WithPath(filepath.Join(opts.BinDir, "kwokctl")).
			WithOpts(kwok.WithWaitDuration(opts.ReadyTimeout))
	case ProviderKind:
		k := kind.NewCluster(opts.Name)
		if opts.KindNodeImage != "" {
			k.WithOpts(kind.WithImage(opts.KindNodeImage))
		}
		c.provider = k
	case ProviderExisting:
		c.kubeconfig = opts.Kubeconfig
	default:
		return nil, fmt.Errorf("unknown provider %q", opts.Provider)
	}
	return c, nil
}

var kwokBinaries = []string{"kwokctl", "kwok", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// Provider returns the provider name.
func (c *Cluster) Provider() string { return c.opts.Provider }

// RunDir returns this run's folder.
func (c *Cluster) RunDir() string { return c.opts.RunDir }

// Kubeconfig returns the kubeconfig path (after Create).
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// Owned reports whether the suite created the cluster (and deletes it in Destroy).
func (c *Cluster) Owned() bool { return c.opts.Provider != ProviderExisting }

func (c *Cluster) kwokWorkdir() string { return filepath.Join(c.opts.RunDir, "kwok") }

// kwokctlEnv serialises kwokctl calls: each sets KWOK_WORKDIR to its cluster's folder.
var kwokctlEnv sync.Mutex

// inKwokWorkdir runs f (a kwokctl call, which reads KWOK_WORKDIR from the process's environment)
// with KWOK_WORKDIR set to this cluster's folder, and restores it afterwards.
func (c *Cluster) inKwokWorkdir(f func() error) error {
	if c.opts.Provider != ProviderKwok {
		return f()
	}
	kwokctlEnv.Lock()
	defer kwokctlEnv.Unlock()
	prev, had := os.LookupEnv("KWOK_WORKDIR")
	if err := os.Setenv("KWOK_WORKDIR", c.kwokWorkdir()); err != nil {
		return err
	}
	defer func() {
		if had {
			_ = os.Setenv("KWOK_WORKDIR", prev)
		} else {
			_ = os.Unsetenv("KWOK_WORKDIR")
		}
	}()
	return f()
}

// Create starts the cluster and waits until its API answers. On failure the components' logs are
// exported under the run folder and named in the error.
func (c *Cluster) Create(ctx context.Context) (string, error) {
	t0 := time.Now()
	switch c.opts.Provider {
	case ProviderExisting:
		c.opts.Logf("cluster: using existing cluster from %s", c.kubeconfig)
	case ProviderKwok:
		args, err := c.kwokArgs()
		if err != nil {
			return "", err
		}
		c.created = true // even a failed create may leave processes behind: always destroy
		c.opts.Logf("cluster: kwokctl create cluster --name %s %s", c.opts.Name, strings.Join(args, " "))
		var kc string
		err = c.inKwokWorkdir(func() error {
			var err error
			kc, err = c.provider.Create(ctx, args...)
			return err
		})
		if err != nil {
			return "", c.failWithLogs(ctx, fmt.Errorf("kwok cluster %q was not ready within %s: %w", c.opts.Name, c.opts.ReadyTimeout, err))
		}
		c.kubeconfig = kc
	case ProviderKind:
		var args []string
		if c.opts.KindConfig != "" {
			args = append(args, "--config", c.opts.KindConfig)
		}
		c.created = true
		kc, err := c.provider.Create(ctx, args...)
		if err != nil {
			return "", c.failWithLogs(ctx, fmt.Errorf("kind cluster %q: %w", c.opts.Name, err))
		}
		c.kubeconfig = kc
	}
	if err := c.waitAPI(ctx); err != nil {
		return "", c.failWithLogs(ctx, err)
	}
	c.opts.Logf("cluster: %s cluster ready in %s (kubeconfig %s)", c.opts.Provider, time.Since(t0).Round(100*time.Millisecond), c.kubeconfig)
	return c.kubeconfig, nil
}

// stages renders the kwok stages for the options' timing.
func (o Options) stages() (string, error) {
	var so kwokstages.Options
	switch o.Timing {
	case "", TimingFast:
	case TimingRealistic:
		so.GraceAll, so.ZtunnelReady = true, kwokstages.DefaultZtunnelReady
	default:
		return "", fmt.Errorf("cluster timing %q: want %s or %s", o.Timing, TimingFast, TimingRealistic)
	}
	if o.ZtunnelReady > 0 {
		so.ZtunnelReady = o.ZtunnelReady
	}
	return kwokstages.Render(so)
}

// Timing returns the cluster's timing mode and ztunnel readiness delay as rendered into its stages
// (kwok only; an existing or kind cluster has real kubelets).
func (c *Cluster) Timing() (mode string, ztunnelReady time.Duration) {
	mode = c.opts.Timing
	if mode == "" {
		mode = TimingFast
	}
	ztunnelReady = c.opts.ZtunnelReady
	if mode == TimingRealistic && ztunnelReady <= 0 {
		ztunnelReady = kwokstages.DefaultZtunnelReady
	}
	return mode, ztunnelReady
}

func (c *Cluster) kwokArgs() ([]string, error) {
	cfgPath := filepath.Join(c.opts.RunDir, "kwokctl.yaml")
	stages, err := c.opts.stages()
	if err != nil {
		return nil, err
	}
	// Everything binds to the loopback only; the stages play pods as the timing says (kwokstages).
	conf := "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  bindAddress: 127.0.0.1\n---\n" + stages
	if err := os.WriteFile(cfgPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	bin := func(n string) string { return filepath.Join(c.opts.BinDir, n) }
	return []string{
		"--runtime", "binary",
		"--config", cfgPath,
		"--kube-apiserver-binary", bin("kube-apiserver"),
		"--kube-controller-manager-binary", bin("kube-controller-manager"),
		"--kube-scheduler-binary", bin("kube-scheduler"),
		"--kwok-controller-binary", bin("kwok"),
		"--etcd-binary", bin("etcd"),
		"--kube-authorization=true", "--kube-admission=true",
		"--extra-args", "kube-apiserver=service-cluster-ip-range=" + c.opts.ServiceCIDR,
		"--extra-args", "kube-controller-manager=service-cluster-ip-range=" + c.opts.ServiceCIDR,
		"--kubeconfig", filepath.Join(c.opts.RunDir, "kubeconfig"),
	}, nil
}

// waitAPI waits for the API server and the controllers a suite needs: the default ServiceAccount
// (service account controller) and the "kubernetes" Service, whose ClusterIP must be loopback on kwok.
func (c *Cluster) waitAPI(ctx context.Context) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, c.opts.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			last = fmt.Errorf("/readyz: %w", err)
			return false, nil
		}
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metaGet); err != nil {
			last = fmt.Errorf("ServiceAccount default/default: %w", err)
			return false, nil
		}
		svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metaGet)
		if err != nil {
			last = fmt.Errorf("Service default/kubernetes: %w", err)
			return false, nil
		}
		if c.opts.Provider == ProviderKwok && !strings.HasPrefix(svc.Spec.ClusterIP, "127.") {
			return false, fmt.Errorf("Service default/kubernetes has ClusterIP %s: the loopback service range %s was not applied", svc.Spec.ClusterIP, c.opts.ServiceCIDR)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("cluster API not ready: %w (last: %v)", err, last)
	}
	return nil
}

// Clientset returns a client for the cluster (after Create).
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err)
	}
	rc.QPS, rc.Burst = 200, 400
	return kubernetes.NewForConfig(rc)
}

func (c *Cluster) failWithLogs(ctx context.Context, cause error) error {
	dir := filepath.Join(c.opts.RunDir, "logs")
	files, err := c.ExportLogs(context.WithoutCancel(ctx), dir)
	if err != nil {
		return fmt.Errorf("%w (exporting logs to %s also failed: %v)", cause, dir, err)
	}
	if len(files) == 0 {
		return fmt.Errorf("%w (no component logs found)", cause)
	}
	return fmt.Errorf("%w; component logs: %s", cause, strings.Join(files, ", "))
}

// ExportLogs copies every component's log (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok-controller, audit) to dir and returns the files written. Only kwok and kind
// clusters have logs to export.
func (c *Cluster) ExportLogs(ctx context.Context, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	switch c.opts.Provider {
	case ProviderKwok:
		src := filepath.Join(c.kwokWorkdir(), "clusters", c.opts.Name, "logs")
		entries, err := os.ReadDir(src)
		if err != nil {
			return nil, fmt.Errorf("kwok logs: %w", err)
		}
		var out []string
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			dst := filepath.Join(dir, e.Name())
			if err := copyFile(filepath.Join(src, e.Name()), dst); err != nil {
				return out, err
			}
			out = append(out, dst)
		}
		sort.Strings(out)
		return out, nil
	case ProviderKind:
		if err := c.provider.ExportLogs(ctx, dir); err != nil {
			return nil, err
		}
		var out []string
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		return out, err
	}
	return nil, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// Destroy deletes a cluster the suite created (never an existing one).
func (c *Cluster) Destroy(ctx context.Context) error {
	if !c.created {
		return nil
	}
	c.created = false
	t0 := time.Now()
	err := c.inKwokWorkdir(func() error { return c.provider.Destroy(context.WithoutCancel(ctx)) })
	if err != nil {
		return fmt.Errorf("delete %s cluster %q: %w", c.opts.Provider, c.opts.Name, err)
	}
	c.opts.Logf("cluster: %s cluster %q deleted in %s", c.opts.Provider, c.opts.Name, time.Since(t0).Round(100*time.Millisecond))
	return nil
}

var metaGet = metav1.GetOptions{}
