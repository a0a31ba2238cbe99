//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/davecgh/go-spew/spew"

	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fakecni"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
	"github.com/ambientkit/ambientkit/e2e/internal/kwokstages"
)

// Labels and names the bench uses.
const (
	labelBench    = "scalebench.ambientkit.io/bench"
	labelClass    = "scalebench.ambientkit.io/class"
	labelWave     = "scalebench.ambientkit.io/wave"
	nsPrefix      = "bench-"
	readerNS      = "kube-system"
	readerPrefix  = "scalebench-"
	appImage      = "registry.k8s.io/pause:3.10"
	tokenDuration = 6 * time.Hour
	// SetupUserAgent marks setup's own requests through the readers' kubeconfigs.
	SetupUserAgent = "ambientkit-scalebench-setup"
)

// Readers are the measured tools; each gets its own ServiceAccount and kubeconfig.
var Readers = []string{"ambientkit", "istioctl", "floor"}

// ReaderUser is the audit user name of a reader.
func ReaderUser(name string) string {
	return "system:serviceaccount:" + readerNS + ":" + readerPrefix + name
}

// Namespace classes, by index modulo 10: half ambient, four tenths sidecar (two through the
// prod-stable tag, one through the revision label, one through istio-injection=enabled, i.e. the
// default tag), one tenth outside the mesh.
type nsClass struct {
	name   string
	labels map[string]string
	mode   string // ambient, sidecar, none
}

func classOf(i int) nsClass {
	switch i % 10 {
	case 0, 1, 2, 3, 4:
		return nsClass{"ambient", map[string]string{"istio.io/dataplane-mode": "ambient"}, "ambient"}
	case 5, 6:
		return nsClass{"sidecar-tag", map[string]string{"istio.io/rev": harness.TagProdStable}, "sidecar"}
	case 7:
		return nsClass{"sidecar-rev", map[string]string{"istio.io/rev": harness.Revision}, "sidecar"}
	case 8:
		return nsClass{"sidecar-default", map[string]string{"istio-injection": "enabled"}, "sidecar"}
	default:
		return nsClass{"none", map[string]string{}, "none"}
	}
}

// SetupResult is what setup created, written to setup.json.
type SetupResult struct {
	Nodes           int               `json:"nodes"`
	Namespaces      int               `json:"namespaces"`
	NamespaceClass  map[string]int    `json:"namespaceClasses"`
	Deployments     int               `json:"deployments"`
	Services        int               `json:"services"`
	PDBs            int               `json:"pdbs"`
	Policies        int               `json:"policies"`
	Waypoints       int               `json:"waypoints"`
	AppPods         int               `json:"appPods"`
	StatefulSetPods int               `json:"statefulSetPods,omitempty"`
	PodsInCluster   int               `json:"podsInCluster"`
	PodsRunning     int               `json:"podsRunning"`
	SidecarPods     int               `json:"sidecarPods"`
	AmbientEnrolled int               `json:"ambientEnrolled"`
	WebhookCalls    int               `json:"webhookCalls"`
	WebhookFailures int               `json:"webhookFailures"`
	NonLoopback     int               `json:"webhookNonLoopback"`
	Timings         []Timing          `json:"timings"`
	Kubeconfigs     map[string]string `json:"kubeconfigs"`
}

// Timing is one timed setup step.
type Timing struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

type setup struct {
	kubeconfig string
	out        string
	nodes      int
	namespaces int
	replicas   int
	depsPerNS  int
	direct     bool
	waypoints  int
	timeout    time.Duration
	workers    int
	waveNS     int
	// Real timing (hack/executor-bench.sh): the fleet's pods honour their grace periods on kwok
	// (annotation kwokstages.AnnotationTiming), a StatefulSet with a budget joins the fleet.
	podGrace    time.Duration
	realistic   bool
	stsReplicas int
	stsGrace    time.Duration

	rc     *rest.Config
	cs     *kubernetes.Clientset
	ap     *kube.Applier
	t0     time.Time
	res    SetupResult
	pools  map[string][]string // pool → node names
	hashes map[string]depHash  // Deployment name → its template and pod-template-hash (direct pods)
}

func (s *setup) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[scalebench %7.1fs] %s\n", time.Since(s.t0).Seconds(), fmt.Sprintf(format, args...))
}

func (s *setup) timed(name string, f func() error) error {
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	s.res.Timings = append(s.res.Timings, Timing{Name: name, Seconds: d.Round(100 * time.Millisecond).Seconds()})
	if err != nil {
		s.logf("%s FAILED after %s: %v", name, d.Round(time.Millisecond), err)
		return fmt.Errorf("%s: %w", name, err)
	}
	s.logf("%s done in %s", name, d.Round(time.Millisecond))
	return nil
}

func setupCmd(args []string) error {
	s := &setup{t0: time.Now()}
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "admin kubeconfig of the kwok cluster")
	fs.StringVar(&s.out, "out", "", "folder for setup.json and the readers' kubeconfigs")
	fs.IntVar(&s.nodes, "nodes", 1000, "kwok nodes (split over the pools general and batch)")
	fs.IntVar(&s.namespaces, "namespaces", 500, "application namespaces")
	fs.IntVar(&s.replicas, "replicas", 10, "pods per Deployment")
	fs.BoolVar(&s.direct, "direct-pods", true, "create the Deployments' pods bound to nodes, for their ReplicaSets to adopt (false: through the ReplicaSet controller and the scheduler)")
	fs.IntVar(&s.depsPerNS, "deployments-per-namespace", 4, "Deployments per namespace")
	fs.IntVar(&s.waypoints, "waypoints", 5, "waypoint Gateways (in ambient namespaces)")
	fs.DurationVar(&s.timeout, "timeout", 30*time.Minute, "bound for each wait")
	fs.IntVar(&s.workers, "workers", 16, "parallel API writers")
	fs.IntVar(&s.waveNS, "wave-namespaces", 100, "create Deployments this many namespaces at a time, waiting for their pods before the next wave (0: all at once)")
	fs.DurationVar(&s.podGrace, "pod-grace", 5*time.Second, "terminationGracePeriodSeconds of the Deployments' pods (whole seconds)")
	fs.BoolVar(&s.realistic, "realistic-timing", false, "annotate the fleet's pod templates "+kwokstages.AnnotationTiming+"="+kwokstages.TimingRealistic+": on kwok they stay Terminating for their grace period")
	fs.IntVar(&s.stsReplicas, "statefulset-replicas", 0, "add StatefulSet "+stsName+" (in the first namespace, ambient) with this many pods on distinct nodes and a budget of maxUnavailable 1 (0: none)")
	fs.DurationVar(&s.stsGrace, "statefulset-grace", 60*time.Second, "terminationGracePeriodSeconds of the StatefulSet's pods (whole seconds)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if s.kubeconfig == "" || s.out == "" {
		return errors.New("setup: -kubeconfig and -out are required")
	}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	if err := s.connect(); err != nil {
		return err
	}
	err := s.run(ctx)
	b, _ := json.MarshalIndent(s.res, "", "  ")
	if werr := os.WriteFile(filepath.Join(s.out, "setup.json"), b, 0o644); werr != nil && err == nil {
		err = werr
	}
	return err
}

func (s *setup) connect() error {
	rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		return err
	}
	u, err := url.Parse(rc.Host)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("the API server %s is not on a loopback address; the bench only runs against a local kwok cluster", rc.Host)
	}
	rc.QPS, rc.Burst = 1000, 2000
	s.rc = rc
	if s.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	s.ap, err = kube.NewApplier(rc, "ambientkit-scalebench")
	return err
}

func (s *setup) run(ctx context.Context) error {
	if err := s.timed("nodes", func() error {
		var err error
		s.pools, err = s.createNodes(ctx)
		return err
	}); err != nil {
		return err
	}
	// A cluster grown by a second run keeps the installation of the first.
	installed := false
	if _, err := s.cs.AppsV1().Deployments(harness.IstioNamespace).Get(ctx, "istiod-"+harness.Revision, metav1.GetOptions{}); err == nil {
		installed = true
		s.logf("istio: installed by an earlier run; kept as it is")
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if err := s.timed("gateway-api-crds", func() error {
		if installed {
			return nil
		}
		v, err := charts.InstallGatewayAPICRDs(ctx, s.ap, s.timeout)
		s.logf("gateway api: standard CRDs %s", v)
		return err
	}); err != nil {
		return err
	}
	var fake *fakeistiod.Server
	if err := s.timed("fake-istiod", func() error {
		var err error
		fake, err = fakeistiod.Start(ctx, fakeistiod.Options{Client: s.cs, IstioNamespace: harness.IstioNamespace, Logf: s.logf})
		return err
	}); err != nil {
		return err
	}
	defer fake.Stop()
	ist := charts.Istio{
		Namespace: harness.IstioNamespace, Revision: harness.Revision, Version: harness.IstioVersion, Hub: harness.IstioHub,
		Tags:             []string{"default", harness.TagProdStable},
		GatewayNamespace: harness.GatewayNamespace, GatewayRelease: harness.GatewayRelease,
		Timeout: s.timeout,
	}
	if err := s.timed("istio", func() error {
		if installed {
			return nil
		}
		dir, err := charts.IstioChartsDir(ctx)
		if err != nil {
			return err
		}
		h := &charts.Helm{Kubeconfig: s.kubeconfig, CacheDir: filepath.Join(s.out, "helm-cache"), ChartsDir: dir,
			ReleaseVersion: harness.IstioVersion, Logf: s.logf}
		_, err = charts.InstallIstio(ctx, h, s.cs, s.ap, ist, func(ctx context.Context, step string) error {
			sctx, cancel := context.WithTimeout(ctx, s.timeout)
			defer cancel()
			return fake.Sync(sctx)
		})
		return err
	}); err != nil {
		return err
	}
	if err := s.timed("workloads", func() error {
		sctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		if err := fake.Sync(sctx); err != nil {
			return err
		}
		return s.createWorkloads(ctx)
	}); err != nil {
		return err
	}
	if err := s.timed("pods-running", func() error { return s.waitPods(ctx, "", s.res.AppPods) }); err != nil {
		return err
	}
	if s.stsReplicas > 0 {
		if err := s.timed("statefulset", func() error { return s.createStatefulSet(ctx) }); err != nil {
			return err
		}
	}
	calls := fake.Calls()
	s.res.WebhookCalls = len(calls)
	s.res.WebhookFailures = len(fake.Failures())
	s.res.NonLoopback = len(fake.NonLoopback())
	if s.res.WebhookFailures > 0 || s.res.NonLoopback > 0 {
		return fmt.Errorf("fake istiod: %d failed webhook calls, %d from or to a non-loopback address", s.res.WebhookFailures, s.res.NonLoopback)
	}
	if err := s.timed("ambient-enrolment", func() error { return s.enrolAmbient(ctx) }); err != nil {
		return err
	}
	if err := s.timed("count", func() error { return s.count(ctx) }); err != nil {
		return err
	}
	return s.timed("readers", func() error { return s.readers(ctx) })
}

// parallel runs f(0..n-1) on s.workers goroutines and returns the first error.
func (s *setup) parallel(n int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < s.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// createNodes creates the kwok nodes as the harness does (cluster.FakeNode: loopback InternalIP),
// with a pod CIDR that stays valid past 256 nodes (127.64.0.0/10 in /24s), and waits until Ready.
func (s *setup) createNodes(ctx context.Context) (map[string][]string, error) {
	v, err := s.cs.Discovery().ServerVersion()
	if err != nil {
		return nil, err
	}
	type nd struct {
		pool        string
		idx, global int
	}
	var all []nd
	pools := map[string][]string{}
	names := []string{harness.PoolGeneral, harness.PoolBatch}
	for g := 0; g < s.nodes; g++ {
		p := names[g%2]
		all = append(all, nd{p, len(pools[p]), g})
		pools[p] = append(pools[p], fmt.Sprintf("%s-%d", p, len(pools[p])))
	}
	existing, err := s.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	had := map[string]bool{}
	for _, n := range existing.Items {
		had[n.Name] = true
	}
	var missing []nd
	for _, n := range all {
		if !had[fmt.Sprintf("%s-%d", n.pool, n.idx)] {
			missing = append(missing, n)
		}
	}
	all = missing
	err = s.parallel(len(all), func(i int) error {
		n := cluster.FakeNode(all[i].pool, all[i].idx, all[i].global, v.GitVersion)
		g := all[i].global
		cidr := fmt.Sprintf("127.%d.%d.0/24", 64+g/256, g%256)
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
		_, err := s.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ready := 0
	err = wait.PollUntilContextTimeout(ctx, time.Second, s.timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := s.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= s.nodes, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%d of %d nodes Ready: %w", ready, s.nodes, err)
	}
	s.res.Nodes = ready
	s.logf("nodes: %d Ready (%s %d, %s %d)", ready, harness.PoolGeneral, len(pools[harness.PoolGeneral]), harness.PoolBatch, len(pools[harness.PoolBatch]))
	return pools, nil
}

type depSpec struct {
	ns, name, pool string
	nsIndex, index int // namespace index, Deployment index in it
	replicas       int
	pdb            bool
	wave           int
	grace          time.Duration
	realistic      bool
}

func nsName(i int) string { return fmt.Sprintf("%s%04d", nsPrefix, i) }

// createWorkloads creates what is missing of -namespaces namespaces with their Deployments, Services,
// PDBs and policies: a cluster filled by an earlier run with fewer namespaces grows, and what it
// has is left alone.
func (s *setup) createWorkloads(ctx context.Context) error {
	s.res.NamespaceClass = map[string]int{}
	hadNS, err := s.createNamespaces(ctx)
	if err != nil {
		return err
	}
	existingDeps, err := s.cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: labelBench + "=true"})
	if err != nil {
		return err
	}
	hadDep := map[string]bool{}
	for _, d := range existingDeps.Items {
		hadDep[d.Namespace+"/"+d.Name] = true
	}
	deps, waveTotal := s.deploymentSpecs(hadDep)
	if err := s.createDeploymentWaves(ctx, deps, waveTotal); err != nil {
		return err
	}
	return s.createPolicies(ctx, hadNS)
}

// createNamespaces creates the namespaces an earlier run did not, and returns those it had.
func (s *setup) createNamespaces(ctx context.Context) (map[string]bool, error) {
	existingNS, err := s.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: labelBench + "=true"})
	if err != nil {
		return nil, err
	}
	hadNS := map[string]bool{}
	for _, n := range existingNS.Items {
		hadNS[n.Name] = true
	}
	// Namespaces first (sidecar namespaces' pods need their labels at admission).
	var newNS []int
	for i := 0; i < s.namespaces; i++ {
		if !hadNS[nsName(i)] {
			newNS = append(newNS, i)
		}
	}
	err = s.parallel(len(newNS), func(k int) error {
		i := newNS[k]
		c := classOf(i)
		labels := map[string]string{labelBench: "true", labelClass: c.name}
		for k, v := range c.labels {
			labels[k] = v
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: labels}}
		return s.create(ctx, "namespace "+ns.Name, func() error {
			_, err := s.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	for i := 0; i < s.namespaces; i++ {
		s.res.NamespaceClass[classOf(i).name]++
	}
	s.res.Namespaces = s.namespaces
	s.logf("namespaces: %d %v (%d new)", s.namespaces, s.res.NamespaceClass, len(newNS))

	return hadNS, nil
}

// deploymentSpecs lists every Deployment of the size (and counts them all in the result), and
// returns those an earlier run did not create with each wave's pods in all.
func (s *setup) deploymentSpecs(hadDep map[string]bool) ([]depSpec, map[int]int) {
	// Deployments of -replicas pods each; the first Deployment of each namespace gets a PDB.
	var deps []depSpec
	// waveTotal is every Deployment's pods of each wave, the earlier runs' too: a wave can span two
	// sizes (100 namespaces a wave, 250 namespaces at 500 nodes), and its selector matches them all.
	waveTotal := map[int]int{}
	for i := 0; i < s.namespaces; i++ {
		for d := 0; d < s.depsPerNS; d++ {
			pool := harness.PoolGeneral
			if d%2 == 1 {
				pool = harness.PoolBatch
			}
			wave := 0
			if s.waveNS > 0 {
				wave = i / s.waveNS
			}
			ds := depSpec{ns: nsName(i), name: fmt.Sprintf("app-%d", d), nsIndex: i, index: d, pool: pool, replicas: s.replicas, pdb: d == 0, wave: wave,
				grace: s.podGrace, realistic: s.realistic}
			s.res.AppPods += ds.replicas
			waveTotal[wave] += ds.replicas
			s.res.Deployments++
			s.res.Services++
			if ds.pdb {
				s.res.PDBs++
			}
			if !hadDep[ds.ns+"/"+ds.name] {
				deps = append(deps, ds)
			}
		}
	}
	return deps, waveTotal
}

// createDeploymentWaves creates the new Deployments wave by wave.
func (s *setup) createDeploymentWaves(ctx context.Context, deps []depSpec, waveTotal map[int]int) error {
	if s.direct && len(deps) > 0 {
		if err := s.templateHashes(ctx, deps); err != nil {
			return err
		}
	}
	// In waves: a 2-core API server that gets 20,000 pods at once times requests out. Two waves are in
	// flight at most: wave k is created once wave k-2's pods run, so the API server is never idle
	// waiting for the tail of a wave.
	type waveRef struct {
		id, pods int
	}
	var pending []waveRef
	created := 0
	for start := 0; start < len(deps); {
		end := start
		wantPods := 0
		for end < len(deps) && deps[end].wave == deps[start].wave {
			wantPods += deps[end].replicas
			end++
		}
		wave := deps[start:end:end]
		if len(pending) == 2 {
			w := pending[0]
			pending = pending[1:]
			if err := s.waitPods(ctx, fmt.Sprintf("%s=%d", labelWave, w.id), w.pods); err != nil {
				return fmt.Errorf("wave %d: %w", w.id, err)
			}
			s.logf("wave %d: %d pods running", w.id, w.pods)
		}
		if s.direct {
			if err := s.createPods(ctx, wave); err != nil {
				return err
			}
		}
		if err := s.parallel(len(wave), func(i int) error { return s.createDeployment(ctx, wave[i]) }); err != nil {
			return err
		}
		created += wantPods
		s.logf("wave %d: %d Deployments created (%d of %d new pods so far)", deps[start].wave, len(wave), created, len(deps)*s.replicas)
		pending = append(pending, waveRef{deps[start].wave, waveTotal[deps[start].wave]})
		start = end
	}
	s.logf("workloads: %d Deployments (%d pods), %d Services, %d PDBs (%d Deployments new)", s.res.Deployments, s.res.AppPods, s.res.Services, s.res.PDBs, len(deps))

	return nil
}

// createPolicies applies the policies and waypoints of the new namespaces.
func (s *setup) createPolicies(ctx context.Context, hadNS map[string]bool) error {
	// Policies: an L4 AuthorizationPolicy per ambient namespace, a namespace-wide PeerAuthentication
	// per sidecar namespace, a mesh-wide STRICT PeerAuthentication; a few waypoints. Only the new
	// namespaces' (and the mesh-wide one the first time) are applied.
	var objs []*unstructured.Unstructured
	add := func(o *unstructured.Unstructured, ns string) {
		if ns == harness.IstioNamespace && len(hadNS) == 0 || !hadNS[ns] && ns != harness.IstioNamespace {
			objs = append(objs, o)
		}
	}
	add(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication",
		"metadata": map[string]any{"name": "default", "namespace": harness.IstioNamespace},
		"spec":     map[string]any{"mtls": map[string]any{"mode": "STRICT"}},
	}}, harness.IstioNamespace)
	policies, waypoints := 1, 0
	for i := 0; i < s.namespaces; i++ {
		ns := nsName(i)
		switch classOf(i).mode {
		case "ambient":
			policies++
			add(&unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
				"metadata": map[string]any{"name": "allow-same-namespace", "namespace": ns},
				"spec": map[string]any{"action": "ALLOW", "rules": []any{map[string]any{
					"from": []any{map[string]any{"source": map[string]any{"namespaces": []any{ns}}}}}}},
			}}, ns)
			if waypoints < s.waypoints {
				waypoints++
				add(&unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
					"metadata": map[string]any{"name": "waypoint", "namespace": ns, "labels": map[string]any{"istio.io/waypoint-for": "service"}},
					"spec": map[string]any{"gatewayClassName": "istio-waypoint", "listeners": []any{map[string]any{
						"name": "mesh", "port": int64(15008), "protocol": "HBONE"}}},
				}}, ns)
			}
		case "sidecar":
			policies++
			add(&unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication",
				"metadata": map[string]any{"name": "default", "namespace": ns},
				"spec":     map[string]any{"mtls": map[string]any{"mode": "STRICT"}},
			}}, ns)
		}
	}
	err := s.parallel(len(objs), func(i int) error {
		return s.create(ctx, "apply "+objs[i].GetKind()+" "+objs[i].GetNamespace()+"/"+objs[i].GetName(), func() error { return s.ap.Apply(ctx, objs[i]) })
	})
	if err != nil {
		return err
	}
	s.res.Policies = policies
	s.res.Waypoints = waypoints
	s.logf("policies: %d, waypoints: %d (%d objects applied now)", policies, waypoints, len(objs))
	return nil
}

// deployment is the Deployment of d.
func deployment(d depSpec) *appsv1.Deployment {
	labels := map[string]string{"app": d.name, labelBench: "true", labelWave: fmt.Sprint(d.wave)}
	podLabels := map[string]string{"app": d.name, "version": "v1"}
	var podAnnotations map[string]string
	if d.realistic {
		podAnnotations = map[string]string{kwokstages.AnnotationTiming: kwokstages.TimingRealistic}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(d.replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{cluster.PoolLabel: d.pool},
					Containers: []corev1.Container{{
						Name: "app", Image: appImage,
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
						}},
					}},
					TerminationGracePeriodSeconds: ptr.To(int64(d.grace / time.Second)),
				},
			},
		},
	}
}

func (s *setup) createDeployment(ctx context.Context, d depSpec) error {
	dep := deployment(d)
	labels := dep.Labels
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": d.name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	where := d.ns + "/" + d.name
	if err := s.create(ctx, "Service "+where, func() error {
		_, err := s.cs.CoreV1().Services(d.ns).Create(ctx, svc, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := s.create(ctx, "Deployment "+where, func() error {
		_, err := s.cs.AppsV1().Deployments(d.ns).Create(ctx, dep, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	// The budget last: before the ReplicaSet adopts them, its pods have no controller, and the
	// disruption controller would warn about every one.
	if d.pdb {
		one := intstr.FromInt32(1)
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns, Labels: labels},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: &one,
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.name}},
			},
		}
		if err := s.create(ctx, "PodDisruptionBudget "+where, func() error {
			_, err := s.cs.PolicyV1().PodDisruptionBudgets(d.ns).Create(ctx, pdb, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// stsName is the StatefulSet of -statefulset-replicas.
const stsName = "ledger"

// createStatefulSet adds StatefulSet ledger to the first namespace (ambient: both ztunnel plans drain
// it): -statefulset-replicas pods of -statefulset-grace, one per node of the general pool (a required
// anti-affinity), created by the StatefulSet controller and placed by the scheduler, and a budget of
// maxUnavailable 1. The StatefulSet recreates an evicted pod only once the old one is gone, so on kwok
// with real timing its budget lets one pod terminate at a time: the drains that meet it serialise.
func (s *setup) createStatefulSet(ctx context.Context) error {
	ns := nsName(0)
	labels := map[string]string{"app": stsName, labelBench: "true"}
	podLabels := map[string]string{"app": stsName, "version": "v1"}
	var podAnnotations map[string]string
	if s.realistic {
		podAnnotations = map[string]string{kwokstages.AnnotationTiming: kwokstages.TimingRealistic}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: stsName, Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": stsName},
			Ports: []corev1.ServicePort{{Name: "tcp", Port: 5432, TargetPort: intstr.FromInt32(5432)}}},
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: stsName, Namespace: ns, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(int32(s.stsReplicas)),
			ServiceName:         stsName,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": stsName}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{cluster.PoolLabel: harness.PoolGeneral},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": stsName}},
							TopologyKey:   "kubernetes.io/hostname",
						}},
					}},
					Containers: []corev1.Container{{
						Name: "db", Image: appImage,
						Ports: []corev1.ContainerPort{{Name: "tcp", ContainerPort: 5432}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
						}},
					}},
					TerminationGracePeriodSeconds: ptr.To(int64(s.stsGrace / time.Second)),
				},
			},
		},
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: stsName, Namespace: ns, Labels: labels},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": stsName}}},
	}
	where := ns + "/" + stsName
	if err := s.create(ctx, "Service "+where, func() error {
		_, err := s.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := s.create(ctx, "StatefulSet "+where, func() error {
		_, err := s.cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := s.create(ctx, "PodDisruptionBudget "+where, func() error {
		_, err := s.cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := kube.WaitStatefulSet(ctx, s.cs, ns, stsName, s.timeout); err != nil {
		return err
	}
	// The budget's status counts the pods once the disruption controller saw them ready.
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, s.timeout, true, func(ctx context.Context) (bool, error) {
		p, err := s.cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, stsName, metav1.GetOptions{})
		return err == nil && p.Status.CurrentHealthy == int32(s.stsReplicas) && p.Status.DisruptionsAllowed == 1, nil
	})
	if err != nil {
		return fmt.Errorf("budget %s: not %d healthy pods with one disruption allowed: %w", where, s.stsReplicas, err)
	}
	s.res.StatefulSetPods = s.stsReplicas
	s.res.PDBs++
	s.logf("statefulset: %s with %d pods (grace %s) and a budget of maxUnavailable 1", where, s.stsReplicas, s.stsGrace)
	return nil
}

// Direct pods (-direct-pods, the default). A Deployment's pods normally come from the ReplicaSet
// controller and the scheduler: on 2 cores that path starts about 70 pods a second, and slows as
// nodes are added (every pod is scored against the nodes, bound, and the controllers write an Event
// for each). Setup instead creates each Deployment's pods itself, already bound to a node of the
// Deployment's pool (spread evenly), labelled with the pod-template-hash the Deployment controller
// will compute, before it creates the Deployment. The Deployment controller then creates the
// ReplicaSet, whose controller adopts the pods (the orphans match its selector) and creates none.
// The pods are those the controllers would have made (same template, owner, labels and injection by
// the fake istiod); ambient pods carry the redirection annotation from the start instead of getting
// it from a later patch, and no PodScheduled condition is set (nothing here reads it).

// templateHashes fills s.hashes: the pod-template-hash of every Deployment shape among deps (the
// template does not depend on the namespace), from the template as the API server stores it (a
// server-side dry run) hashed as the Deployment controller hashes it. A probe Deployment checks the
// hash against the controller's own first.
func (s *setup) templateHashes(ctx context.Context, deps []depSpec) error {
	if s.hashes == nil {
		s.hashes = map[string]depHash{}
	}
	pc, err := kubernetes.NewForConfig(protobufConfig(s.rc))
	if err != nil {
		return err
	}
	stored := func(d depSpec) (*appsv1.Deployment, error) {
		return pc.AppsV1().Deployments(d.ns).Create(ctx, deployment(d), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	if err := s.probeHash(ctx, pc); err != nil {
		return err
	}
	for _, d := range deps {
		if _, ok := s.hashes[d.name]; ok {
			continue
		}
		dep, err := stored(d)
		if err != nil {
			return fmt.Errorf("dry-run Deployment %s/%s: %w", d.ns, d.name, err)
		}
		s.hashes[d.name] = depHash{hash: podTemplateHash(&dep.Spec.Template), template: dep.Spec.Template}
	}
	return nil
}

type depHash struct {
	hash     string
	template corev1.PodTemplateSpec
}

// probeHash creates a Deployment of no replicas in a namespace of its own, waits for the
// controller's ReplicaSet and compares its pod-template-hash with podTemplateHash's.
func (s *setup) probeHash(ctx context.Context, pc kubernetes.Interface) error {
	ns := fmt.Sprintf("scalebench-hash-probe-%d", time.Now().Unix())
	if _, err := pc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	defer func() { _ = pc.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{}) }()
	d := depSpec{ns: ns, name: "probe", pool: harness.PoolGeneral, grace: s.podGrace, realistic: s.realistic}
	dep, err := pc.AppsV1().Deployments(ns).Create(ctx, deployment(d), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		dep, err = pc.AppsV1().Deployments(ns).Get(ctx, d.name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("hash probe: %w", err)
	}
	want := podTemplateHash(&dep.Spec.Template)
	var got string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := pc.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			return false, nil
		}
		got = l.Items[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("hash probe: no ReplicaSet for Deployment %s/%s: %w", ns, d.name, err)
	}
	if got != want {
		return fmt.Errorf("hash probe: the Deployment controller's pod-template-hash is %q, setup computes %q; run setup with -direct-pods=false", got, want)
	}
	s.logf("direct pods: pod-template-hash checked against the Deployment controller (%s)", got)
	return nil
}

// podTemplateHash is the Deployment controller's controller.ComputeHash (k8s.io/kubernetes
// pkg/controller, with pkg/util/hash.DeepHashObject) for a Deployment without collisions.
func podTemplateHash(t *corev1.PodTemplateSpec) string {
	h := fnv.New32a()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", *t)
	return utilrand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// protobufConfig copies rc to speak protobuf, as the controllers do (their decoded templates are
// what the hash is computed over).
func protobufConfig(rc *rest.Config) *rest.Config {
	c := rest.CopyConfig(rc)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return c
}

// podName is a ReplicaSet pod's name: <replicaset>-<5 characters>, here derived from the pod's
// place so that a retried setup creates the same pods.
func podName(rs string, d depSpec, j int) string {
	const alphanums = "bcdfghjklmnpqrstvwxz2456789" // the alphabet of the controllers' names
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d", d.ns, d.name, j)
	v := h.Sum32()
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = alphanums[v%uint32(len(alphanums))]
		v /= uint32(len(alphanums))
	}
	return rs + "-" + string(suffix)
}

// createPods creates the pods of a wave's Deployments (see Direct pods), spread over the nodes of
// each Deployment's pool: the k-th pod of a pool goes to node k mod pool size.
func (s *setup) createPods(ctx context.Context, deps []depSpec) error {
	var pods []*corev1.Pod
	for _, d := range deps {
		h := s.hashes[d.name]
		rs := d.name + "-" + h.hash
		nsLabels := classOf(d.nsIndex).labels
		pool := s.pools[d.pool]
		if len(pool) == 0 {
			return fmt.Errorf("pool %s has no nodes", d.pool)
		}
		for j := 0; j < d.replicas; j++ {
			labels := map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: h.hash}
			for k, v := range h.template.Labels {
				labels[k] = v
			}
			annotations := map[string]string{}
			for k, v := range h.template.Annotations {
				annotations[k] = v
			}
			// Pools take every other Deployment of a namespace (d.index/2 counts them in the pool).
			k := (d.nsIndex*((s.depsPerNS+1)/2)+d.index/2)*d.replicas + j
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName(rs, d, j), Namespace: d.ns, Labels: labels, Annotations: annotations},
				Spec:       *h.template.Spec.DeepCopy(),
			}
			p.Spec.NodeName = pool[k%len(pool)]
			if fakecni.Captured(p, nsLabels) {
				p.Annotations[fakecni.AnnotationRedirection] = "enabled"
			}
			pods = append(pods, p)
		}
	}
	var done atomic.Int64
	err := s.parallel(len(pods), func(i int) error {
		p := pods[i]
		err := s.create(ctx, "pod "+p.Namespace+"/"+p.Name, func() error {
			_, err := s.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
		if err == nil {
			done.Add(1)
		}
		return err
	})
	s.logf("direct pods: %d created for %d Deployments", done.Load(), len(deps))
	return err
}

// create runs a create call, treating AlreadyExists as done and retrying what an overloaded API
// server answers (timeouts, 429, 5xx, dropped connections) for up to five minutes.
func (s *setup) create(ctx context.Context, what string, f func() error) error {
	var err error
	backoff := time.Second
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err = f()
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if !retriable(err) || time.Now().After(deadline) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		s.logf("create %s: %v; retrying in %s", what, err, backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		if backoff < 16*time.Second {
			backoff *= 2
		}
	}
}

func retriable(err error) bool {
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	msg := err.Error()
	for _, m := range []string{"context deadline exceeded", "connection reset", "connection refused", "EOF", "http2", "TLS handshake timeout", "i/o timeout"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// waitPods waits until the bench Deployments matching selector (all when empty) report want ready
// replicas in all.
func (s *setup) waitPods(ctx context.Context, selector string, want int) error {
	sel := labelBench + "=true"
	if selector != "" {
		sel += "," + selector
	}
	last := time.Now()
	var ready, desired int
	err := wait.PollUntilContextTimeout(ctx, 3*time.Second, s.timeout, true, func(ctx context.Context) (bool, error) {
		l, err := s.cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, nil
		}
		ready, desired = 0, 0
		for _, d := range l.Items {
			desired += int(ptr.Deref(d.Spec.Replicas, 1))
			ready += int(d.Status.ReadyReplicas)
		}
		if time.Since(last) > 30*time.Second {
			s.logf("pods (%s): %d of %d ready", sel, ready, want)
			last = time.Now()
		}
		return desired == want && ready == want, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d pods ready (%s): %w", ready, want, sel, err)
	}
	return nil
}

// enrolAmbient marks captured pods as istio-cni does (fakecni.Captured decides), in parallel: the
// harness's agent patches one pod at a time, too slow for ten thousand pods.
func (s *setup) enrolAmbient(ctx context.Context) error {
	nss, err := s.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	labels := map[string]map[string]string{}
	for _, n := range nss.Items {
		labels[n.Name] = n.Labels
	}
	var todo []types.NamespacedName
	cont := ""
	for {
		l, err := s.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1000, Continue: cont})
		if err != nil {
			return err
		}
		for i := range l.Items {
			p := &l.Items[i]
			if p.Namespace == "kube-system" {
				continue
			}
			if fakecni.Captured(p, labels[p.Namespace]) && p.Annotations[fakecni.AnnotationRedirection] != "enabled" {
				todo = append(todo, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
			}
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{fakecni.AnnotationRedirection: "enabled"}}})
	var done atomic.Int64
	err = s.parallel(len(todo), func(i int) error {
		err := s.create(ctx, "(patch) pod status "+todo[i].String(), func() error {
			_, err := s.cs.CoreV1().Pods(todo[i].Namespace).Patch(ctx, todo[i].Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		if err == nil {
			done.Add(1)
		}
		return err
	})
	s.logf("ambient: %d pods enrolled", done.Load())
	return err
}

// count records what the cluster holds now.
func (s *setup) count(ctx context.Context) error {
	cont := ""
	for {
		l, err := s.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1000, Continue: cont})
		if err != nil {
			return err
		}
		for i := range l.Items {
			p := &l.Items[i]
			s.res.PodsInCluster++
			if p.Status.Phase == corev1.PodRunning {
				s.res.PodsRunning++
			}
			if _, ok := p.Annotations[fakecni.AnnotationStatus]; ok {
				s.res.SidecarPods++
			}
			if p.Annotations[fakecni.AnnotationRedirection] == "enabled" {
				s.res.AmbientEnrolled++
			}
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	s.logf("cluster: %d pods (%d Running), %d with a sidecar, %d enrolled in ambient", s.res.PodsInCluster, s.res.PodsRunning, s.res.SidecarPods, s.res.AmbientEnrolled)
	return nil
}

// readers creates one cluster-admin ServiceAccount per measured tool and writes its kubeconfig
// (a bound token), so both run with the same rights and the audit log tells them apart.
func (s *setup) readers(ctx context.Context) error {
	s.res.Kubeconfigs = map[string]string{}
	ca := s.rc.TLSClientConfig.CAData
	if len(ca) == 0 && s.rc.TLSClientConfig.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(s.rc.TLSClientConfig.CAFile); err != nil {
			return err
		}
	}
	for _, r := range Readers {
		name := readerPrefix + r
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: readerNS}}
		if _, err := s.cs.CoreV1().ServiceAccounts(readerNS).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: readerNS}},
		}
		if _, err := s.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		tr, err := s.cs.CoreV1().ServiceAccounts(readerNS).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tokenDuration.Seconds()))},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("token for %s: %w", name, err)
		}
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["kwok"] = &clientcmdapi.Cluster{Server: s.rc.Host, CertificateAuthorityData: ca}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "kwok", AuthInfo: name, Namespace: "default"}
		cfg.CurrentContext = name
		p := filepath.Join(s.out, "kubeconfig-"+r)
		if err := clientcmd.WriteToFile(*cfg, p); err != nil {
			return err
		}
		s.res.Kubeconfigs[r] = p
	}
	// Wait until each reader can read (RBAC caches the new bindings asynchronously).
	for _, r := range Readers {
		rc, err := clientcmd.BuildConfigFromFlags("", s.res.Kubeconfigs[r])
		if err != nil {
			return err
		}
		rc.UserAgent = SetupUserAgent // the report leaves these requests out
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, harness.IstioNamespace, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("reader %s cannot read the cluster: %w", r, err)
		}
	}
	names := make([]string, 0, len(s.res.Kubeconfigs))
	for k := range s.res.Kubeconfigs {
		names = append(names, k)
	}
	sort.Strings(names)
	s.logf("readers: %s (kubeconfigs in %s)", strings.Join(names, ", "), s.out)
	return nil
}
