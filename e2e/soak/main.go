//go:build e2e

// Command soak runs upgrade → rollback cycles on a kwok cluster (hack/soak.sh; a script, not CI) and
// checks that nothing leaks and that the executor's memory stays flat.
//
// It sets up the e2e environment (harness: kwok cluster, real Istio 1.30.3 charts, fake istiod and
// CNI, fixtures), records the state a run may leave behind, then -cycles times, in this one process
// and with one executor (execute.New with the Helm SDK adapter, as e2e/internal/upgrade does):
// observe.Live, ambient.PlanUpgrade to 1.31.4 (revisioned, ztunnel node by node in batches), Apply
// up to the step before the first one the plan holds back (the removal of 1-30-3, which the
// fixtures still use), then RollbackTo the first step, and waits for Istio's DaemonSets and
// Deployments to run what they were rolled back to. After each cycle it compares the cluster with
// the recorded state (webhook configurations, Services, Leases and their holders, journals other
// than those of the plans it applied, node labels, taints and cordons, Helm releases) and prints
// one line with the process's RSS and Go heap. It exits 1 when something leaked or a cycle failed.
//
//	soak -cycles 20 -out DIR
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/helmsdk"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/upgrade"
)

const (
	targetVersion  = "1.31.4"
	targetRevision = "1-31-4"
)

func main() {
	cycles := flag.Int("cycles", 20, "upgrade → rollback cycles")
	out := flag.String("out", "", "folder for the plans and the per-cycle results (default the harness's run folder)")
	flag.Parse()
	h, err := harness.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		h.Logf("soak: received %s: tearing down", s)
		h.Teardown()
		os.Exit(130)
	}()
	code := 0
	if err := run(h, *cycles, *out); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		code = 1
	}
	h.Teardown()
	h.Done(code)
	os.Exit(code)
}

func run(h *harness.Harness, cycles int, out string) error {
	ctx := context.Background()
	cfg := envconf.New()
	for _, f := range []func(context.Context, *envconf.Config) (context.Context, error){h.CreateCluster, h.InstallIstio, h.CreateFixtures} {
		var err error
		if ctx, err = f(ctx, cfg); err != nil {
			return err
		}
	}
	if out == "" {
		out = h.Cluster.RunDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	sk, closeLog, err := newSoak(h, out, cycles)
	if err != nil {
		return err
	}
	defer closeLog()
	c := h.Client
	if sk.before, err = capture(ctx, c); err != nil {
		return err
	}
	h.Logf("soak: start state: %s", sk.before.summary())
	for i := 1; i <= cycles; i++ {
		stop, err := sk.cycle(ctx, i)
		if err != nil {
			return err
		}
		if stop {
			break
		}
	}
	final, err := capture(ctx, c)
	if err != nil {
		return err
	}
	fmt.Printf("soak: end state: %s\n", final.summary())
	if len(sk.failures) > 0 {
		return fmt.Errorf("%d problems:\n  %s", len(sk.failures), strings.Join(sk.failures, "\n  "))
	}
	return nil
}

// soak is one soak run: the executor, the upgrade it plans each cycle and what it found so far.
type soak struct {
	h       *harness.Harness
	c       client.Client
	out     string
	cycles  int
	live    func(context.Context) (*mesh.Snapshot, error)
	ex      *execute.Executor
	options ambient.UpgradeOptions
	journal *execute.ConfigMapJournal
	before  *state
	// ownJournals: the executor keeps each plan's journal as the record of its run (rolled back
	// steps included): journals of the plans this soak applied are expected, any other one is a leak.
	ownJournals map[string]bool
	failures    []string
	rss0        int64
}

// newSoak builds the executor (real Helm SDK, live observation, a log file in out) and the options
// every cycle plans with.
func newSoak(h *harness.Harness, out string, cycles int) (*soak, func(), error) {
	paths, err := h.Helm.StampCharts(filepath.Join(out, "charts-"+targetVersion), targetVersion)
	if err != nil {
		return nil, nil, err
	}
	c := h.Client
	dc, err := discovery.NewDiscoveryClientForConfig(h.RestConfig)
	if err != nil {
		return nil, nil, err
	}
	live := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Live(ctx, c, observe.Options{ServerVersion: dc})
	}
	helm, err := helmsdk.New(helmsdk.Options{
		Config:           h.RestConfig,
		RepositoryCache:  filepath.Join(out, "helm", "repository"),
		RepositoryConfig: filepath.Join(out, "helm", "repositories.yaml"),
		RegistryConfig:   filepath.Join(out, "helm", "registry.json"),
	})
	if err != nil {
		return nil, nil, err
	}
	logf, err := os.Create(filepath.Join(out, "executor.log"))
	if err != nil {
		return nil, nil, err
	}
	ex, err := execute.New(c, execute.Options{Gates: ambient.Gates(),
		Helm:          helm,
		Snapshot:      live,
		Identity:      "soak",
		PollInterval:  500 * time.Millisecond,
		VerifyTimeout: 3 * time.Minute,
		Probes:        map[string]execute.Probe{"mesh-health": upgrade.MeshHealth(live)},
		Approve:       func(context.Context, plan.Step) (bool, error) { return true, nil },
		Logger:        slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		return nil, nil, err
	}
	next := charts.Istio{Namespace: harness.IstioNamespace, Revision: targetRevision, Version: targetVersion, Hub: harness.IstioHub,
		GatewayNamespace: harness.GatewayNamespace, GatewayRelease: harness.GatewayRelease}
	target := mesh.MustParseVersion(targetVersion)
	options := ambient.UpgradeOptions{
		Target:  target,
		Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 4},
		Charts:  ambient.ChartSource{Paths: paths},
		Values: map[string]map[string]any{
			"istiod":  {"global": map[string]any{"hub": next.Hub, "tag": next.Version}},
			"cni":     next.CNIValues(),
			"ztunnel": {"hub": next.Hub, "tag": next.Version, "global": map[string]any{"hub": next.Hub, "tag": next.Version}},
			"gateway": next.GatewayValues(),
		},
		Today: time.Now(),
	}

	sk := &soak{h: h, c: c, out: out, cycles: cycles, live: live, ex: ex, options: options,
		journal: &execute.ConfigMapJournal{Client: c, Namespace: harness.IstioNamespace}, ownJournals: map[string]bool{}}
	return sk, func() { logf.Close() }, nil
}

// cycle plans, applies up to the first held step, rolls back and compares the cluster with the
// state it started from; stop says the next cycle would start from a half-changed cluster.
func (sk *soak) cycle(ctx context.Context, i int) (stop bool, _ error) {
	c, live, ex, options, out, cycles, journal := sk.c, sk.live, sk.ex, sk.options, sk.out, sk.cycles, sk.journal
	t0 := time.Now()
	snap, err := live(ctx)
	if err != nil {
		return false, fmt.Errorf("cycle %d: observe: %w", i, err)
	}
	p, err := ambient.PlanUpgrade(snap, options)
	if err != nil && !errors.Is(err, ambient.ErrBlocked) {
		return false, fmt.Errorf("cycle %d: plan: %w", i, err)
	}
	if p == nil || len(p.Steps) == 0 {
		sk.blocked(i, p, err)
		return true, nil
	}
	// Health gates settle 3 s instead of the planned 30–60 (the probe reads readiness).
	for k := range p.Steps {
		if g := p.Steps[k].HealthGate; g != nil {
			g.SettleSeconds = 3
		}
	}
	hash, err := execute.PlanHash(p)
	if err != nil {
		return false, err
	}
	until, held := untilBeforeHeld(p)
	note := ""
	// A plan made from the state a rollback restored can be the very plan of the previous cycle;
	// its journal says its steps were rolled back, and Apply refuses it (ErrRolledBack). Count it.
	if rec, err := journal.Load(ctx, hash); err == nil && rec != nil {
		note = " (same plan as an earlier cycle: its journal is deleted first)"
		var cm corev1.ConfigMap
		cm.Namespace, cm.Name = harness.IstioNamespace, journal.Name(hash)
		if err := c.Delete(ctx, &cm); err != nil {
			return false, fmt.Errorf("cycle %d: delete journal %s: %w", i, cm.Name, err)
		}
	}
	sk.ownJournals[harness.IstioNamespace+"/"+journal.Name(hash)] = true
	if b, err := plan.EncodeYAML(p); err == nil {
		_ = os.WriteFile(filepath.Join(out, fmt.Sprintf("cycle-%02d.plan.yaml", i)), b, 0o644)
	}
	t1 := time.Now()
	res, err := ex.Apply(ctx, p, execute.ApplyOptions{Until: until})
	applyD := time.Since(t1)
	applied := 0
	if res != nil {
		for _, s := range res.Steps {
			if s.Status == execute.StatusDone && !s.Skipped {
				applied++
			}
		}
	}
	if err != nil {
		sk.failures = append(sk.failures, fmt.Sprintf("cycle %d: apply: %v", i, err))
	}
	t2 := time.Now()
	rb, rbErr := ex.RollbackTo(ctx, p, p.Steps[0].ID)
	rollbackD := time.Since(t2)
	if rbErr != nil {
		sk.failures = append(sk.failures, fmt.Sprintf("cycle %d: rollback: %v", i, rbErr))
	}
	// A rollback does not wait for what it rolled back to run again (DaemonSets and Deployments
	// rolling back to 1.30.3); the next cycle must observe a settled mesh, as an operator would.
	t3 := time.Now()
	if err := settle(ctx, c, 3*time.Minute); err != nil {
		sk.failures = append(sk.failures, fmt.Sprintf("cycle %d: after the rollback: %v", i, err))
	}
	settleD := time.Since(t3)
	after, err := capture(ctx, c)
	if err != nil {
		return false, err
	}
	leaks := sk.before.diff(after, sk.ownJournals)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := vmRSS()
	if i == 1 {
		sk.rss0 = rss
	}
	leakText := "no leaks"
	if len(leaks) > 0 {
		leakText = "LEAKS: " + strings.Join(leaks, "; ")
		sk.failures = append(sk.failures, fmt.Sprintf("cycle %d: %s", i, leakText))
	}
	fmt.Printf("soak cycle %2d/%d: plan %d steps (%s), applied %d steps up to %s in %s%s, rolled back %d in %s, settled in %s; %s (%d journals, of %d plans); RSS %.1f MiB (%+.1f since cycle 1), Go heap %.1f MiB, goroutines %d; cycle %s\n",
		i, cycles, len(p.Steps), hash[7:19], applied, until, applyD.Round(100*time.Millisecond), note, len(rb), rollbackD.Round(100*time.Millisecond), settleD.Round(100*time.Millisecond),
		leakText, len(after.journals), len(sk.ownJournals), float64(rss)/1024, float64(rss-sk.rss0)/1024, float64(ms.HeapInuse)/(1<<20), runtime.NumGoroutine(), time.Since(t0).Round(100*time.Millisecond))
	if held != "" && i == 1 {
		fmt.Printf("soak: each cycle stops before %s\n", held)
	}
	if err != nil || rbErr != nil {
		return true, nil // the next cycle would start from a cluster this one left half-changed
	}
	return false, nil
}

// blocked records a cycle whose upgrade is blocked: findings block the whole upgrade, so the cycles
// before left the cluster other than they found it, in a way the state comparison does not see.
// It keeps the plan and says why.
func (sk *soak) blocked(i int, p *plan.Plan, err error) {
	// Findings block the whole upgrade: the cycles before left the cluster other than they
	// found it, in a way the state comparison does not see. Keep the plan, say why, stop.
	var why []string
	if p != nil {
		if b, err := plan.EncodeYAML(p); err == nil {
			_ = os.WriteFile(filepath.Join(sk.out, fmt.Sprintf("cycle-%02d.plan.yaml", i)), b, 0o644)
		}
		for _, f := range p.Findings {
			if f.Severity != plan.Info {
				why = append(why, fmt.Sprintf("%s %s: %.300s", f.Code, f.Object, f.Message))
			}
		}
	}
	fmt.Printf("soak cycle %2d/%d: the upgrade is blocked, no steps planned (%v): %s\n", i, sk.cycles, err, strings.Join(why, "; "))
	sk.failures = append(sk.failures, fmt.Sprintf("cycle %d: the upgrade is blocked after %d cycles: %v", i, i-1, err))
}

// settle waits until every DaemonSet and Deployment in Istio's and the gateway's namespaces has
// rolled out its current template: observed, updated and available everywhere, nothing extra.
func settle(ctx context.Context, c client.Client, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var pending []string
		for _, ns := range []string{harness.IstioNamespace, harness.GatewayNamespace} {
			var dss appsv1.DaemonSetList
			if err := c.List(ctx, &dss, client.InNamespace(ns)); err != nil {
				return false, nil
			}
			for _, d := range dss.Items {
				st := d.Status
				if st.ObservedGeneration < d.Generation || st.UpdatedNumberScheduled != st.DesiredNumberScheduled ||
					st.NumberAvailable != st.DesiredNumberScheduled || st.CurrentNumberScheduled != st.DesiredNumberScheduled {
					pending = append(pending, fmt.Sprintf("DaemonSet %s/%s: %d of %d updated, %d available", ns, d.Name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberAvailable))
				}
			}
			var deps appsv1.DeploymentList
			if err := c.List(ctx, &deps, client.InNamespace(ns)); err != nil {
				return false, nil
			}
			for _, d := range deps.Items {
				st, want := d.Status, ptr.Deref(d.Spec.Replicas, 1)
				if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.AvailableReplicas != want || st.Replicas != want {
					pending = append(pending, fmt.Sprintf("Deployment %s/%s: %d of %d updated, %d available, %d in all", ns, d.Name, st.UpdatedReplicas, want, st.AvailableReplicas, st.Replicas))
				}
			}
		}
		last = strings.Join(pending, "; ")
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("not settled after %s: %s", timeout, last)
	}
	return nil
}

// untilBeforeHeld returns the last step before the first step the plan holds back (Blocked), and
// a description of that step; the last step and "" when none is held back.
func untilBeforeHeld(p *plan.Plan) (string, string) {
	for i, s := range p.Steps {
		if s.Blocked != "" && i > 0 {
			why := s.Blocked
			if len(why) > 120 {
				why = why[:120] + " …"
			}
			return p.Steps[i-1].ID, fmt.Sprintf("step %s (held back: %s)", s.ID, why)
		}
	}
	return p.Steps[len(p.Steps)-1].ID, ""
}

// state is what a run may leave behind.
type state struct {
	webhooks map[string]string // kind/name → webhooks without caBundle, as JSON
	services map[string]string // namespace/name → type and selector
	leases   map[string]string // namespace/name → holder
	journals map[string]bool   // ConfigMap names
	nodes    map[string]string // name → labels, taints and unschedulable, as JSON
	releases map[string]string // namespace/name → deployed chart version (Helm storage Secrets)
}

func capture(ctx context.Context, c client.Client) (*state, error) {
	s := &state{webhooks: map[string]string{}, services: map[string]string{}, leases: map[string]string{},
		journals: map[string]bool{}, nodes: map[string]string{}, releases: map[string]string{}}
	var mw admissionregistrationv1.MutatingWebhookConfigurationList
	if err := c.List(ctx, &mw); err != nil {
		return nil, err
	}
	for _, w := range mw.Items {
		for k := range w.Webhooks {
			w.Webhooks[k].ClientConfig.CABundle = nil
		}
		b, _ := json.Marshal(w.Webhooks)
		s.webhooks["MutatingWebhookConfiguration/"+w.Name] = string(b)
	}
	var vw admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &vw); err != nil {
		return nil, err
	}
	for _, w := range vw.Items {
		for k := range w.Webhooks {
			w.Webhooks[k].ClientConfig.CABundle = nil
		}
		b, _ := json.Marshal(w.Webhooks)
		s.webhooks["ValidatingWebhookConfiguration/"+w.Name] = string(b)
	}
	for _, ns := range []string{harness.IstioNamespace, harness.GatewayNamespace} {
		var svcs corev1.ServiceList
		if err := c.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, v := range svcs.Items {
			b, _ := json.Marshal(v.Spec.Selector)
			s.services[ns+"/"+v.Name] = string(v.Spec.Type) + " " + string(b)
		}
		var leases coordinationv1.LeaseList
		if err := c.List(ctx, &leases, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, l := range leases.Items {
			s.leases[ns+"/"+l.Name] = ptr.Deref(l.Spec.HolderIdentity, "")
		}
		var cms corev1.ConfigMapList
		if err := c.List(ctx, &cms, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, cm := range cms.Items {
			if strings.HasPrefix(cm.Name, "ambientkit-journal-") {
				s.journals[ns+"/"+cm.Name] = true
			}
		}
		var secrets corev1.SecretList
		if err := c.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "status": "deployed"}); err != nil {
			return nil, err
		}
		for _, sec := range secrets.Items {
			s.releases[ns+"/"+sec.Labels["name"]] = "revision " + sec.Labels["version"]
		}
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		b, _ := json.Marshal(map[string]any{"labels": n.Labels, "taints": n.Spec.Taints, "unschedulable": n.Spec.Unschedulable})
		s.nodes[n.Name] = string(b)
	}
	return s, nil
}

func (s *state) summary() string {
	cordoned := 0
	for _, n := range s.nodes {
		if strings.Contains(n, `"unschedulable":true`) {
			cordoned++
		}
	}
	return fmt.Sprintf("%d webhook configurations, %d Services, %d Leases, %d journals, %d nodes (%d cordoned), Helm releases %s",
		len(s.webhooks), len(s.services), len(s.leases), len(s.journals), len(s.nodes), cordoned, keys(s.releases))
}

// diff names what after has that s had not, or has changed. A new journal is a leak unless it is
// one of own (the journals of the plans the soak applied); Helm release revisions may move on (a
// rollback is a new revision), names may not.
func (s *state) diff(after *state, own map[string]bool) []string {
	var out []string
	cmpMaps := func(what string, a, b map[string]string, values bool) {
		for _, k := range sortedKeys(b) {
			v, ok := a[k]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("new %s %s", what, k))
			case values && v != b[k]:
				out = append(out, fmt.Sprintf("%s %s changed: %.200s → %.200s", what, k, v, b[k]))
			}
		}
		for _, k := range sortedKeys(a) {
			if _, ok := b[k]; !ok {
				out = append(out, fmt.Sprintf("%s %s is gone", what, k))
			}
		}
	}
	cmpMaps("webhook configuration", s.webhooks, after.webhooks, true)
	cmpMaps("Service", s.services, after.services, true)
	// The executor's Lease stays once created; it must be released.
	for _, k := range sortedKeys(after.leases) {
		if holder := after.leases[k]; holder != "" && holder != s.leases[k] {
			out = append(out, fmt.Sprintf("Lease %s still held by %q", k, holder))
		}
		if _, ok := s.leases[k]; !ok && !strings.HasSuffix(k, "/"+execute.LockName) {
			out = append(out, "new Lease "+k)
		}
	}
	for k := range after.journals {
		if !s.journals[k] && !own[k] {
			out = append(out, "journal "+k+" left behind")
		}
	}
	cmpMaps("node", s.nodes, after.nodes, true)
	cmpMaps("Helm release", s.releases, after.releases, false)
	return out
}

func keys(m map[string]string) string { return strings.Join(sortedKeys(m), ", ") }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// vmRSS is this process's resident set size in KiB.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var v int64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "%d", &v); err == nil {
				return v
			}
		}
	}
	return -1
}
