//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/helmsdk"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fakecni"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/kwokstages"
	"github.com/ambientkit/ambientkit/e2e/internal/upgrade"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// connect reads a kubeconfig and refuses an API server that is not on a loopback address.
func connect(kubeconfig string) (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(rc.Host)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("the API server %s is not on a loopback address; the bench only runs against a local kwok cluster", rc.Host)
	}
	return rc, nil
}

// fakesCmd runs the fake istiod (injection and validation on loopback) and the fake istio-cni agent
// (it enrols the pods the drains recreate in ambient namespaces) until SIGTERM or SIGINT.
func fakesCmd(args []string) error {
	fs := flag.NewFlagSet("fakes", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig of the kwok cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rc, err := connect(*kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "[fakes] "+format+"\n", a...) }
	fake, err := fakeistiod.Start(ctx, fakeistiod.Options{Client: cs, IstioNamespace: harness.IstioNamespace, Logf: logf})
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = fake.Sync(sctx)
	cancel()
	if err != nil {
		fake.Stop()
		return err
	}
	cni := fakecni.New(cs, 3*time.Second)
	cni.Start(ctx)
	fmt.Println("ready") // the script waits for this line
	<-ctx.Done()
	cni.Stop()
	fake.Stop()
	logf("istio-cni: %d pods enrolled", cni.Patched())
	logf("%d webhook calls, %d failed, %d non-loopback", len(fake.Calls()), len(fake.Failures()), len(fake.NonLoopback()))
	if len(fake.Failures()) > 0 || len(fake.NonLoopback()) > 0 {
		return fmt.Errorf("fake istiod: %d failed webhook calls, %d from or to a non-loopback address", len(fake.Failures()), len(fake.NonLoopback()))
	}
	return nil
}

type runOpts struct {
	kubeconfig, strategy, out, target string
	batch, green                      int
	settle, poll                      time.Duration
	timeout                           time.Duration
	ztunnelReady                      time.Duration
	graceAll                          bool
}

func runCmd(args []string) error {
	var o runOpts
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "admin kubeconfig of the kwok cluster")
	fs.StringVar(&o.strategy, "strategy", "node-by-node", "node-by-node or blue-green")
	fs.StringVar(&o.out, "out", "", "folder for the plan, the events, the logs and the report")
	fs.StringVar(&o.target, "target", "1.30.4", "ztunnel version to move to (charts stamped from the installed sources)")
	fs.IntVar(&o.batch, "batch", 10, "nodes per batch (one health gate each)")
	fs.IntVar(&o.green, "green-nodes", 10, "blue-green: green nodes per pool to create once green is installed")
	fs.DurationVar(&o.settle, "settle", time.Second, "settle time of every health gate (the planner says 30s)")
	fs.DurationVar(&o.poll, "poll", 500*time.Millisecond, "executor poll interval")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Hour, "bound for the whole Apply")
	fs.DurationVar(&o.ztunnelReady, "ztunnel-ready", 0, "how long a new ztunnel pod takes to turn Ready on this cluster (the kwok stages' delay), for the limit model")
	fs.BoolVar(&o.graceAll, "grace-all", false, "every pod honours its grace period on this cluster (kwok stages' realistic mode); else only pods annotated "+kwokstages.AnnotationTiming+"="+kwokstages.TimingRealistic)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.kubeconfig == "" || o.out == "" {
		return errors.New("run: -kubeconfig and -out are required")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	return run(o)
}

func run(o runOpts) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	bc, err := connectBench(o.kubeconfig)
	if err != nil {
		return err
	}
	rc, counter, c, dc, cs, sv := bc.rc, bc.counter, bc.c, bc.dc, bc.cs, bc.sv
	live := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Live(ctx, c, observe.Options{ServerVersion: dc})
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "[executorbench] "+format+"\n", a...) }

	p, err := prepare(ctx, o, live)
	if err != nil {
		return err
	}

	events, err := os.Create(filepath.Join(o.out, "events.jsonl"))
	if err != nil {
		return err
	}
	defer events.Close()
	att := newAttribution(counter)
	times := newStepTimes()
	var mu sync.Mutex
	greenDone := false
	var greenErr error
	observer := func(ev execute.Event) {
		att.observe(ev)
		times.observe(ev)
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(map[string]any{"type": ev.Type, "time": ev.Time, "step": ev.StepID, "message": ev.Message, "requests": counter.total()})
		_, _ = events.Write(append(b, '\n'))
		if ev.Type == execute.EventStepFinished && strings.HasSuffix(ev.StepID, "/install-green") && !greenDone {
			greenDone = true
			greenErr = addGreenNodes(ctx, cs, o.green, sv.GitVersion)
			logf("green nodes: %d per pool created (%v)", o.green, greenErr)
		}
	}
	ex, closeLogs, err := benchExecutor(c, rc, o, live, observer)
	if err != nil {
		return err
	}
	defer closeLogs()
	// The budgets and a watch on every pod, through the bench's own client: the model's input and
	// the drains' overlap come from what the cluster did, not from what the executor says.
	budgets, err := listBudgets(ctx, cs)
	if err != nil {
		return err
	}
	pw, err := startPodWatcher(o.kubeconfig, filepath.Join(o.out, "watch.log"))
	if err != nil {
		return err
	}
	before := counter.snapshot()
	cpu0, wall0 := processCPU(), time.Now()
	res, err := ex.Apply(ctx, p, execute.ApplyOptions{})
	cpu, wall := processCPU()-cpu0, time.Since(wall0)
	seen, werr := pw.evicted()
	if werr != nil && err == nil {
		err = werr
	}
	if b, jerr := json.MarshalIndent(seen.Pods, "", "  "); jerr == nil {
		_ = os.WriteFile(filepath.Join(o.out, "evicted.json"), b, 0o644)
	}
	if b, jerr := json.MarshalIndent(seen.Returns, "", "  "); jerr == nil {
		_ = os.WriteFile(filepath.Join(o.out, "budget-returns.json"), b, 0o644)
	}
	if greenErr != nil {
		return fmt.Errorf("add green nodes: %w", greenErr)
	}
	if err != nil {
		reached := 0
		if res != nil {
			reached = len(res.Steps)
		}
		return fmt.Errorf("apply (%d steps reached): %w", reached, err)
	}
	rep := att.report(o.strategy, p, before, counter.snapshot(), cpu, wall)
	rep.Timing = timing(p, times, seen, budgets, o.ztunnelReady, o.strategy == "node-by-node", o.graceAll)
	rep.Timing.Estimate = planEstimate(p, o.ztunnelReady)
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(o.out, "report-"+o.strategy+".json"), b, 0o644); err != nil {
		return err
	}
	fmt.Print(rep.text())
	return nil
}

// benchClients are the bench's clients: the executor's (counted, through rc) and the bench's own.
type benchClients struct {
	rc      *rest.Config
	counter *counter
	c       client.Client
	dc      discovery.DiscoveryInterface
	cs      kubernetes.Interface
	sv      *version.Info
}

// connectBench makes the clients: the executor's requests are counted, the bench's own (green
// nodes, budgets) go through an uncounted copy of the configuration.
func connectBench(kubeconfig string) (*benchClients, error) {
	rc, err := connect(kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 500, 1000
	admin := rest.CopyConfig(rc) // the bench's own requests (green nodes) are not the executor's
	counter := newCounter()
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, c: counter} })
	c, err := client.NewWithWatch(rc, client.Options{Scheme: observe.Scheme()})
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, err
	}
	return &benchClients{rc: rc, counter: counter, c: c, dc: dc, cs: cs, sv: sv}, nil
}

// benchExecutor is the executor under measure: the Helm SDK, live observation, a probe that is
// always healthy, every approval granted, its log in the run folder.
func benchExecutor(c client.Client, rc *rest.Config, o runOpts, live func(context.Context) (*mesh.Snapshot, error), observer func(execute.Event)) (*execute.Executor, func(), error) {
	helm, err := helmsdk.New(helmsdk.Options{Config: rc, RepositoryCache: filepath.Join(o.out, "helm", "repository"),
		RepositoryConfig: filepath.Join(o.out, "helm", "repositories.yaml"), RegistryConfig: filepath.Join(o.out, "helm", "registry.json")})
	if err != nil {
		return nil, nil, err
	}
	logs, err := os.Create(filepath.Join(o.out, "executor.log"))
	if err != nil {
		return nil, nil, err
	}
	ex, err := execute.New(c, execute.Options{Gates: ambient.Gates(),
		Helm:         helm,
		Snapshot:     live,
		Identity:     "executorbench",
		PollInterval: o.poll,
		Probes: map[string]execute.Probe{"mesh-health": func(context.Context, string) (bool, string, error) {
			return true, "", nil
		}},
		Approve:  func(context.Context, plan.Step) (bool, error) { return true, nil },
		Observer: observer,
		Logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		logs.Close()
		return nil, nil, err
	}
	return ex, func() { logs.Close() }, nil
}

// prepare stamps the charts (the running version's, and ztunnel's at the target) and plans the
// ztunnel replacement of the live cluster, health gates settled to the bench's -settle.
func prepare(ctx context.Context, o runOpts, live func(context.Context) (*mesh.Snapshot, error)) (*plan.Plan, error) {
	dir, err := charts.IstioChartsDir(ctx)
	if err != nil {
		return nil, err
	}
	h := &charts.Helm{Kubeconfig: o.kubeconfig, ChartsDir: dir, CacheDir: filepath.Join(o.out, "helm-cache"), ReleaseVersion: harness.IstioVersion}
	// The charts the installation runs (istiod's trust list is upgraded at its own version), with
	// ztunnel's at the target.
	paths, err := h.StampCharts(filepath.Join(o.out, "charts-"+harness.IstioVersion), harness.IstioVersion)
	if err != nil {
		return nil, err
	}
	next, err := h.StampCharts(filepath.Join(o.out, "charts-"+o.target), o.target)
	if err != nil {
		return nil, err
	}
	// Charts at the running version stay reachable as chart@version: pinning blue and widening
	// istiod's trust upgrade those releases at the version they run.
	for chart, dir := range paths {
		paths[chart+"@"+harness.IstioVersion] = dir
	}
	paths["ztunnel"] = next["ztunnel"]
	snap, err := live(ctx)
	if err != nil {
		return nil, err
	}
	target, err := mesh.ParseVersion(o.target)
	if err != nil {
		return nil, err
	}
	p, err := makePlan(snap, o, target, paths)
	if err != nil {
		return nil, err
	}
	for i := range p.Steps {
		if g := p.Steps[i].HealthGate; g != nil {
			g.SettleSeconds = int64(o.settle / time.Second)
		}
	}
	if b, err := plan.EncodeYAML(p); err == nil {
		_ = os.WriteFile(filepath.Join(o.out, "plan.yaml"), b, 0o644)
	}
	fmt.Fprintf(os.Stderr, "[executorbench] %s plan: %d steps over %d nodes\n", o.strategy, len(p.Steps), len(snap.Nodes))
	return p, nil
}

// makePlan plans only the ztunnel replacement, with the real planner.
func makePlan(snap *mesh.Snapshot, o runOpts, target mesh.Version, paths map[string]string) (*plan.Plan, error) {
	src := steps.ChartSource{Paths: paths}
	values := map[string]map[string]any{"ztunnel": {"hub": harness.IstioHub, "tag": target.String(),
		"global": map[string]any{"hub": harness.IstioHub, "tag": target.String()}}}
	var p *plan.Plan
	switch o.strategy {
	case "node-by-node":
		z := snap.Ztunnels
		if len(z) != 1 {
			return nil, fmt.Errorf("want one ztunnel, found %d", len(z))
		}
		p = plan.New(plan.Metadata{Name: fmt.Sprintf("ztunnel node by node %s → %s", z[0].Version, target), Operation: "upgrade",
			Fingerprint: snap.Fingerprint(), From: z[0].Version, To: target})
		b := steps.New(p, steps.Options{Charts: src, Values: values})
		if err := ztunnel.AddUpgrade(b, snap, ztunnel.UpgradeOptions{Target: target, Strategy: ztunnel.NodeByNode{BatchSize: o.batch}}); err != nil {
			return nil, err
		}
		if err := b.Err(); err != nil {
			return nil, err
		}
	case "blue-green":
		var err error
		p, err = ztunnel.BlueGreenZtunnel(snap, ztunnel.BlueGreenOptions{Target: target, Charts: src, Values: values,
			Strategy: ztunnel.BlueGreen{BatchSize: o.batch, Capacity: ztunnel.GreenCapacity{Nodes: 2 * o.green}, Pace: o.settle,
				Jobs: ztunnel.JobsEvict, LocalStorage: ztunnel.LocalStorageEvict}})
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("strategy %q is not node-by-node or blue-green", o.strategy)
	}
	if !p.Runnable() {
		return nil, fmt.Errorf("the plan is not runnable: %v", plan.Stopping(p.Findings))
	}
	return p, p.Validate()
}

// addGreenNodes creates n kwok nodes labelled green in each pool, with room for the pods the drains
// move there, and waits until they are Ready.
func addGreenNodes(ctx context.Context, cs kubernetes.Interface, n int, kubelet string) error {
	var names []string
	for pi, pool := range []string{harness.PoolGeneral, harness.PoolBatch} {
		for i := range n {
			g := 3000 + pi*n + i
			node := cluster.FakeNode(pool, i, g, kubelet)
			node.Name = fmt.Sprintf("green-%s-%d", pool, i)
			node.Labels["kubernetes.io/hostname"] = node.Name
			node.Labels[ztunnel.DefaultColourLabel] = "green"
			cidr := fmt.Sprintf("127.%d.%d.0/24", 64+g/256, g%256)
			node.Spec.PodCIDR, node.Spec.PodCIDRs = cidr, []string{cidr}
			node.Status.Addresses[0].Address = fmt.Sprintf("127.33.%d.%d", g/250, g%250+1)
			for _, l := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
				l[corev1.ResourcePods] = resource.MustParse("5000")
				l[corev1.ResourceCPU] = resource.MustParse("1000")
				l[corev1.ResourceMemory] = resource.MustParse("4Ti")
			}
			if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			names = append(names, node.Name)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for _, name := range names {
		for {
			nd, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && nodeReady(nd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("green node %s not Ready after 5m", name)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// processCPU is the CPU time (user and system) the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingTransport counts API requests by "VERB resource[/subresource]" (upgrade.RequestKey).
type countingTransport struct {
	rt http.RoundTripper
	c  *counter
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.add(upgrade.RequestKey(r.Method, r.URL.Path, r.URL.Query().Get("watch") == "true"))
	return t.rt.RoundTrip(r)
}
