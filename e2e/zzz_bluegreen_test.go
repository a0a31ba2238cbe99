//go:build e2e

package e2e

// This file sorts after zz_upgrade_test.go: TestBlueGreenZtunnel starts from the mesh TestUpgrade
// leaves (1.31.4, revision 1-31-4) and replaces its ztunnel.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fixtures"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
	"github.com/ambientkit/ambientkit/e2e/internal/kwokstages"
	"github.com/ambientkit/ambientkit/e2e/internal/upgrade"
	"github.com/ambientkit/ambientkit/ztunnel"
	"github.com/google/go-cmp/cmp"
)

// The blue-green the feature carries out.
const (
	// bgGreenPerPool is how many green nodes the test, standing in for Karpenter, launches per
	// NodePool once the plan has labelled its template green.
	bgGreenPerPool = 12
	// bgFleet is the ambient namespace the feature fills the nodes with.
	bgFleet = "fleet"
	// bgFleetGrace is the fleet's termination grace period in seconds, which its pods honour.
	bgFleetGrace = 3
	// bgGreenNamespace and bgGreen name the green ztunnel the plan derives.
	bgGreenNamespace = "ztunnel-green"
	bgGreen          = "ztunnel-green"
)

// The size of the blue-green: E2E_BLUEGREEN_NODES blue nodes (default 64, what CI runs; 200 is the
// seed runbook's scale, about 4 minutes), drained in batches of an eighth of them (8; 25 at 200),
// the first apply process killed at the drain three tenths of the way (19; 60 at 200).
var (
	// bgBlueNodes is how many nodes run blue when the operation starts (the suites' 24 and the rest
	// added here, in the same two pools).
	bgBlueNodes, bgNodesErr = blueGreenNodes()
	// bgBatch is the blue-green batch size: nodes drained between two health gates.
	bgBatch = max(4, bgBlueNodes/8)
	// bgKillAtDrain: the first apply process is killed while this drain (1-based) is in progress.
	bgKillAtDrain = bgBlueNodes * 3 / 10
)

// blueGreenNodes reads E2E_BLUEGREEN_NODES: from 48 (twice the suites' nodes, so that the batches
// and the kill fall where they should) to 200 (the added blue nodes' pod ranges, 127.64.30.0/24 up, must
// stay below green's, from 127.64.210; growBlue skips 200). TestBlueGreenZtunnel fails on any other
// value, naming it.
func blueGreenNodes() (int, error) {
	v := os.Getenv("E2E_BLUEGREEN_NODES")
	if v == "" {
		return 64, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 48 || n > 200 {
		return 64, fmt.Errorf("E2E_BLUEGREEN_NODES=%q: want a whole number of blue nodes from 48 to 200", v)
	}
	return n, nil
}

var nodePoolGVK = map[string]string{"apiVersion": "karpenter.sh/v1", "kind": "NodePool"}

// TestBlueGreenZtunnel replaces the ztunnel of a mesh of bgBlueNodes nodes by node pool through the public API
// (observe.Live, ztunnel.BlueGreenZtunnel, execute.Apply in a child process): blue is pinned off green
// nodes, istiod trusts both, green is installed in its own namespace, both Karpenter NodePools are
// labelled green and the test launches their green nodes as Karpenter would, workloads move off the
// cordoned blue nodes in batches (a long-running Job waited for until it finishes), blue is removed
// and istiod trusts green alone. The apply process is SIGKILLed mid-migration and a fresh one resumes
// from the journal; meanwhile a blue node is removed and a green one added. A watcher asserts from
// every event that no node with ambient pods lacks a ready ztunnel, no node runs two, no budget is
// violated, and istiod trusts every ztunnel that runs.
func TestBlueGreenZtunnel(t *testing.T) {
	if bgNodesErr != nil {
		t.Fatal(bgNodesErr)
	}
	switch {
	case !h.Cluster.Owned() && os.Getenv("E2E_UPGRADE_EXISTING") != "1":
		failCannotRun(t, "TestBlueGreenZtunnel drains every node; on an existing cluster it runs only with E2E_UPGRADE_EXISTING=1")
	case !h.Opts.FakeNodes:
		have := 0
		for _, names := range h.Nodes {
			have += len(names)
		}
		failCannotRun(t, fmt.Sprintf("TestBlueGreenZtunnel adds %d blue and %d green nodes; it needs kwok nodes (E2E_FAKE_NODES=on)", max(0, bgBlueNodes-have), 2*bgGreenPerPool))
	}
	live := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
	}
	bg := &blueGreenRun{upgradeRun: &upgradeRun{t0: time.Now()}}

	f := features.New(fmt.Sprintf("blue-green ztunnel by node pool on %d nodes in batches of %d, killed at drain %d and resumed", bgBlueNodes, bgBatch, bgKillAtDrain)).
		WithLabel("feature", "bluegreen").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			t1 := time.Now()
			if err := installNodePools(ctx); err != nil {
				t.Fatal(err)
			}
			if err := bg.growBlue(ctx); err != nil {
				t.Fatal(err)
			}
			bg.timing("nodes", t1)
			t1 = time.Now()
			if err := createFleet(ctx, bgBlueNodes); err != nil {
				t.Fatal(err)
			}
			bg.timing("fleet", t1)
			w, err := upgrade.StartWatcherWith(ctx, h.Clientset, upgrade.Options{
				ZtunnelNamespaces: []string{harness.IstioNamespace, bgGreenNamespace}, Trust: harness.IstioNamespace})
			if err != nil {
				t.Fatal(err)
			}
			bg.watcher = w

			t1 = time.Now()
			createAccount(ctx, t) // the ServiceAccount the plan runs as; its namespace is in the snapshot
			snap, err := live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Green runs the next patch of the control plane's release: after TestUpgrade 1.31.5,
			// beside istiod 1.31.4 (a patch ahead is within the version rule), alone 1.30.4.
			if len(snap.Revisions) == 0 || len(snap.Ztunnels) != 1 {
				t.Fatalf("want one istiod revision and one ztunnel to start from, found %v and %d ztunnels", snap.RevisionNames(), len(snap.Ztunnels))
			}
			cp := snap.Revisions[len(snap.Revisions)-1].Version
			bg.version = mesh.Version{Major: cp.Major, Minor: cp.Minor, Patch: cp.Patch + 1}
			bg.chartDir = filepath.Join(h.Cluster.RunDir(), "charts-"+bg.version.String())
			paths, err := h.Helm.StampCharts(bg.chartDir, bg.version.String())
			if err != nil {
				t.Fatal(err)
			}
			// Pinning blue and widening istiod's trust upgrade those releases at their running
			// version: that version's charts, by chart@version.
			running, err := h.Helm.StampCharts(filepath.Join(h.Cluster.RunDir(), "charts-running-"+cp.String()), cp.String())
			if err != nil {
				t.Fatal(err)
			}
			for chart, dir := range running {
				paths[chart+"@"+cp.String()] = dir
			}
			if len(snap.NodePools) != 2 {
				t.Fatalf("observation found NodePools %v, want general and batch", snap.NodePools)
			}
			makePlan := func(snap *mesh.Snapshot) *plan.Plan {
				t.Helper()
				p, err := ztunnel.BlueGreenZtunnel(snap, ztunnel.BlueGreenOptions{
					Target: bg.version,
					Strategy: ztunnel.BlueGreen{BatchSize: bgBatch, LocalStorage: ztunnel.LocalStorageEvict,
						Capacity: ztunnel.GreenCapacity{NodePools: []string{harness.PoolGeneral, harness.PoolBatch}}},
					Charts: ambient.ChartSource{Paths: paths},
					Values: map[string]map[string]any{bgGreen: {"tag": bg.version.String(), "global": map[string]any{"tag": bg.version.String()}}},
				})
				if err != nil {
					t.Fatalf("BlueGreenZtunnel: %v", err)
				}
				if !p.Runnable() {
					t.Fatalf("the blue-green plan is not runnable: stopping findings %v", plan.Stopping(p.Findings))
				}
				if settle, shorten := upgradeSettle(t); shorten {
					for i := range p.Steps {
						if g := p.Steps[i].HealthGate; g != nil {
							g.SettleSeconds = int64(settle / time.Second)
						}
					}
				}
				return p
			}
			p := makePlan(snap)
			logFindings(t, p)
			bg.timing("plan", t1)
			// As in TestUpgrade, the apply processes run as a ServiceAccount bound to exactly the
			// rules this plan derives. Green's namespace does not exist yet and its Role needs it:
			// the RBAC creates it, which changes the cluster the plan was made from, so, as a person
			// would, the test plans again and derives the RBAC again (the backup Secret is named for
			// the plan). The new plan is the same steps, except that the namespace steps (green's, the probe's) no longer
			// deletes on rollback a namespace the plan did not create.
			if first := grantDerivedRBAC(ctx, t, p, snap); len(first.created) == 0 {
				t.Fatalf("the RBAC created no namespace; want %s, which the plan installs green into", bgGreenNamespace)
			}
			if snap, err = live(ctx); err != nil {
				t.Fatal(err)
			}
			again := makePlan(snap)
			first := slices.Clone(p.Steps)
			for i := range first {
				if first[i].ID == "ztunnel/bluegreen/namespace" || first[i].ID == "ztunnel/bluegreen/probe/namespace" {
					first[i].Rollback = nil
				}
			}
			if d := cmp.Diff(first, again.Steps); d != "" {
				t.Fatalf("planned again after the RBAC created green's namespace, the steps differ (-first +again):\n%s", d)
			}
			if bg.rbac = grantDerivedRBAC(ctx, t, again, snap); len(bg.rbac.created) > 0 {
				t.Fatalf("the RBAC of the second plan creates %v again", bg.rbac.created)
			}
			cannotEscalate(ctx, t, bg.rbac)
			p = again
			bg.save(t, p, "bluegreen.plan.yaml")
			for _, s := range p.Steps {
				if s.Drain != nil {
					bg.drainOrder = append(bg.drainOrder, s.Drain.Node)
					if !s.Drain.KeepJobs {
						bg.churnVictim = s.Drain.Node // the last drained node without a Job: the Job's wait is tested apart
					}
				}
			}
			return ctx
		}).
		Assess("the plan is applied by a process killed mid-migration and resumed by another", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			t1 := time.Now()
			karp := startKarpenter(ctx)
			first := bg.start(t, 1, false)
			first.killWhen = func(l upgrade.Line, inProgress map[string]bool, drainsStarted int) bool {
				bg.onLine(ctx, l)
				return l.Type == string(execute.EventStepProgress) && l.Kind == string(plan.KindDrain) && inProgress[l.StepID] &&
					drainsStarted >= bgKillAtDrain
			}
			err := first.wait()
			bg.timing("apply-until-kill", t1)
			first.requireKilled(t, err)
			bg.killedStep = first.killedBy.StepID
			t.Logf("SIGKILL during %s (%s), %d steps finished", first.killedBy.StepID, first.killedBy.Message, first.finished())

			t2 := time.Now()
			second := bg.start(t, 2, true)
			second.killWhen = func(l upgrade.Line, _ map[string]bool, _ int) bool { bg.onLine(ctx, l); return false }
			if err := second.wait(); err != nil {
				t.Fatalf("the resumed apply failed: %v; its last lines:\n%s", err, second.tail(20))
			}
			bg.timing("apply-resumed", t2)
			if exit, ok := second.last(upgrade.LineExit); !ok || exit.Err != "" || !exit.Resumed {
				t.Errorf("resumed run exit line %+v, want resumed and no error", exit)
			}
			for id := range first.stepsWith(string(execute.EventStepFinished)) {
				if second.stepsWith(string(execute.EventStepStarted))[id] {
					t.Errorf("step %s ran again after the resume", id)
				}
			}
			if !second.stepsWith(string(execute.EventStepFinished))[bg.killedStep] {
				t.Errorf("the killed step %s did not finish in the resumed run", bg.killedStep)
			}
			if err := bg.churnErr(); err != nil {
				t.Errorf("node churn: %v", err)
			}
			if n := first.count(string(execute.EventNodeGone)) + second.count(string(execute.EventNodeGone)); n < 1 {
				t.Errorf("%d NodeGone events, want at least one for %s", n, bg.gone)
			}
			rec, err := (&execute.ConfigMapJournal{Client: h.Client, Namespace: harness.IstioNamespace}).Load(ctx, bg.hash)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range bg.plan.Steps {
				if st := rec.Steps[s.ID]; st == nil || st.Status != execute.StatusDone {
					t.Errorf("journal: step %s is %+v, want done", s.ID, st)
				}
			}
			launched, held, err := karp.stop()
			if err != nil {
				t.Errorf("the Karpenter stand-in: %v", err)
			}
			t.Logf("Karpenter stand-in launched %v; blue nodes held (karpenter.sh/do-not-disrupt) when their NodePool turned green: %v", launched, held)
			for pool, ok := range held {
				if !ok {
					t.Errorf("NodePool %s turned green while some of its blue nodes were not held from drift", pool)
				}
			}
			if len(bg.jobsWaited) == 0 {
				t.Errorf("no drain waited for a running Job; Job %s/reindex should have held one", bgFleet)
			}
			t.Logf("drains that waited for Jobs: %v", bg.jobsWaited)
			bg.reportRequests(t)
			return ctx
		}).
		Assess("no ambient node lacked a ztunnel or ran two, no budget was violated, istiod trusted every running ztunnel", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := bg.watcher.Report()
			t.Logf("watcher: %s", r.Summary())
			for _, g := range r.Gaps {
				t.Errorf("ztunnel gap: %s, during step %s", g, bg.stepAt(g.Start))
			}
			for _, d := range r.Doubles {
				t.Errorf("two ztunnels: %s, during step %s", d, bg.stepAt(d.Start))
			}
			for _, v := range r.PDBViolations {
				t.Errorf("PDB violated: %s", v)
			}
			for _, g := range r.TrustGaps {
				t.Errorf("trust gap: %s, during step %s", g, bg.stepAt(g.Start))
			}
			green := bgGreenNamespace + "/" + bgGreen
			if d := cmpStrings([]string{harness.IstioNamespace + "/ztunnel", green}, r.RunningAccounts); d != "" {
				t.Errorf("ztunnel accounts seen running: %s", d)
			}
			for name, trusted := range r.TrustedAtEnd {
				if d := cmpStrings([]string{green}, trusted); d != "" {
					t.Errorf("istiod %s trusts at the end: %s", name, d)
				}
			}
			if len(r.AmbientNodes) < bgBlueNodes/2 {
				t.Errorf("the watcher saw ambient pods on %d nodes; the fleet should spread over most of the %d", len(r.AmbientNodes), bgBlueNodes)
			}
			return ctx
		}).
		Assess("the nodes of a batch drained at the same time, never more of them than the batch", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			checkConcurrentDrains(t, bg.watcher.Report(), bgBatch, map[string]bool{bg.gone: true})
			return ctx
		}).
		Assess("one ztunnel is left, green, on the green nodes; the blue nodes are empty and can go", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s, err := live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			bg.checkDone(t, s)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, p := range bg.runs {
				p.stop()
			}
			if bg.watcher != nil {
				bg.watcher.Stop()
			}
			bg.timing("total", bg.t0)
			h.Logf("bluegreen: timings %s", strings.Join(bg.timings, " "))
			return ctx
		})
	testenv.Test(t, f.Feature())
}

// blueGreenRun is what the feature shares between its steps.
type blueGreenRun struct {
	*upgradeRun
	version    mesh.Version // green's
	blue       []string     // the nodes blue runs on when the plan is made
	drainOrder []string
	// churnVictim is the blue node consolidated away during the run.
	churnVictim string

	mu         sync.Mutex
	jobsWaited []string
	churned    bool
	gone       string
	churnDone  chan error
}

func (bg *blueGreenRun) start(t *testing.T, n int, resume bool) *applyProcess {
	t.Helper()
	p := startApply(t, bg.upgradeRun, n, resume)
	return p
}

// growBlue adds kwok nodes to the two pools until bgBlueNodes run blue, and waits until every one
// runs a ready ztunnel and istio-cni.
func (bg *blueGreenRun) growBlue(ctx context.Context) error {
	cs := h.Clientset
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	have := 0
	for _, names := range h.Nodes {
		have += len(names)
	}
	pools := []string{harness.PoolGeneral, harness.PoolBatch}
	global := 30 // pod CIDRs 127.64.<global>.0/24: the suites use 0–23, node churn 200
	for i := 0; have < bgBlueNodes; i++ {
		pool := pools[i%2]
		if global == 200 {
			global++
		}
		n := cluster.FakeNode(pool, 100+i, global, info.GitVersion)
		global++
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("add node %s: %w", n.Name, err)
		}
		h.Nodes[pool] = append(h.Nodes[pool], n.Name)
		have++
	}
	for _, ds := range []string{"istio-cni-node", "ztunnel"} {
		if err := waitDaemonSetOn(ctx, harness.IstioNamespace, ds, have, 5*time.Minute); err != nil {
			return err
		}
	}
	for _, names := range h.Nodes {
		bg.blue = append(bg.blue, names...)
	}
	sort.Strings(bg.blue)
	return nil
}

// waitDaemonSetOn polls until the DaemonSet has at least n ready, up-to-date pods and no other.
func waitDaemonSetOn(ctx context.Context, ns, name string, n int, timeout time.Duration) error {
	var why string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ds, err := h.Clientset.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		s := ds.Status
		why = fmt.Sprintf("desired %d, ready %d, updated %d", s.DesiredNumberScheduled, s.NumberReady, s.UpdatedNumberScheduled)
		return int(s.DesiredNumberScheduled) >= n && s.NumberReady == s.DesiredNumberScheduled && s.UpdatedNumberScheduled == s.DesiredNumberScheduled, nil
	})
	if err != nil {
		return fmt.Errorf("DaemonSet %s/%s on %d nodes: %s: %w", ns, name, n, why, err)
	}
	return nil
}

// installNodePools serves karpenter.sh/v1 NodePools (the CRD with a schema that keeps every field)
// and creates one per pool, as a cluster running Karpenter has them.
func installNodePools(ctx context.Context) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "nodepools.karpenter.sh"},
		"spec": map[string]any{"group": "karpenter.sh", "scope": "Cluster",
			"names": map[string]any{"kind": "NodePool", "listKind": "NodePoolList", "plural": "nodepools", "singular": "nodepool"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}
	if err := h.Applier.Apply(ctx, crd); err != nil {
		return fmt.Errorf("NodePool CRD: %w", err)
	}
	if err := h.Applier.WaitCRDsEstablished(ctx, []string{"nodepools.karpenter.sh"}, time.Minute); err != nil {
		return err
	}
	for _, pool := range []string{harness.PoolGeneral, harness.PoolBatch} {
		np := &unstructured.Unstructured{Object: map[string]any{"apiVersion": nodePoolGVK["apiVersion"], "kind": nodePoolGVK["kind"],
			"metadata": map[string]any{"name": pool},
			"spec": map[string]any{
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "platform"}},
					"spec": map[string]any{"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}},
				"limits": map[string]any{"cpu": "2000"}}}}
		if err := h.Applier.Apply(ctx, np); err != nil {
			return fmt.Errorf("NodePool %s: %w", pool, err)
		}
	}
	return nil
}

// createFleet fills the nodes with an ambient namespace: a Deployment of one pod per node (spread,
// not forced) under a budget of 10%, and a StatefulSet of three under a budget of one.
func createFleet(ctx context.Context, replicas int) error {
	cs := h.Clientset
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bgFleet, Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	image := h.Opts.AppImage
	if image == "" {
		image = fixtures.DefaultAppImage
	}
	// Evicted pods stay Terminating for their grace period, as a kubelet keeps them (kwokstages), so
	// a node drains for as long as its slowest pod and the nodes of a batch drain at the same time.
	tmpl := func(app string) corev1.PodTemplateSpec {
		labels := map[string]string{"app": app}
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels,
			Annotations: map[string]string{kwokstages.AnnotationTiming: kwokstages.TimingRealistic}},
			Spec: corev1.PodSpec{
				Containers:                    []corev1.Container{{Name: "app", Image: image}},
				TerminationGracePeriodSeconds: ptr.To(int64(bgFleetGrace)),
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
					WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
			}}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: bgFleet},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: tmpl("web")}}
	if _, err := cs.AppsV1().Deployments(bgFleet).Create(ctx, dep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: bgFleet},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Name: "tcp", Port: 5432}}}}
	if _, err := cs.CoreV1().Services(bgFleet).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: bgFleet},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(3)), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			PodManagementPolicy: appsv1.ParallelPodManagement, Template: tmpl("db")}}
	if _, err := cs.AppsV1().StatefulSets(bgFleet).Create(ctx, ss, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	tenPercent, one := intstr.FromString("10%"), intstr.FromInt32(1)
	for name, maxUnavailable := range map[string]*intstr.IntOrString{"web": &tenPercent, "db": &one} {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: bgFleet},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: maxUnavailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
		if _, err := cs.PolicyV1().PodDisruptionBudgets(bgFleet).Create(ctx, pdb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	// A long-running Job: drains wait for it (the plan's default) until it finishes.
	jt := tmpl("reindex")
	jt.Annotations = map[string]string{fixtures.AnnotationRunForever: "true"}
	jt.Spec.RestartPolicy = corev1.RestartPolicyNever
	jt.Spec.TopologySpreadConstraints = nil
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "reindex", Namespace: bgFleet},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(int32(1)), Completions: ptr.To(int32(1)), BackoffLimit: ptr.To(int32(0)), Template: jt}}
	if _, err := cs.BatchV1().Jobs(bgFleet).Create(ctx, job, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := kube.WaitDeployment(ctx, cs, bgFleet, "web", 5*time.Minute); err != nil {
		return err
	}
	if err := kube.WaitStatefulSet(ctx, cs, bgFleet, "db", 5*time.Minute); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := cs.BatchV1().Jobs(bgFleet).Get(ctx, "reindex", metav1.GetOptions{})
		return err == nil && ptr.Deref(j.Status.Ready, 0) == 1, nil
	}); err != nil {
		return err
	}
	// A real istio-cni annotates a pod while its sandbox is made, before it runs; the fake CNI does
	// it after the pod exists, and on a loaded machine that lags. Plan only a captured fleet.
	var last int
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(bgFleet).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		last = 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Annotations[mesh.AnnotationRedirection] != "enabled" {
				last++
			}
		}
		return last == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d running pods of namespace %s are still not captured by the fake CNI: %w", last, bgFleet, err)
	}
	return nil
}

// onLine plays, from the apply processes' lines, what the cluster around the run does: when the
// first drain starts, a blue node the plan has not reached is consolidated away and a green node
// joins; when a drain waits for running Jobs, they finish (their pods lose the annotation that keeps
// them running on kwok, and kwok completes them).
func (bg *blueGreenRun) onLine(ctx context.Context, l upgrade.Line) {
	if l.Kind != string(plan.KindDrain) {
		return
	}
	if l.Type == string(execute.EventStepStarted) {
		bg.mu.Lock()
		start := !bg.churned
		bg.churned = true
		bg.mu.Unlock()
		if start {
			bg.gone = bg.churnVictim
			bg.churnDone = make(chan error, 1)
			go func() { bg.churnDone <- churnBlueGreen(ctx, bg.gone) }()
		}
	}
	if l.Type == string(execute.EventStepProgress) && strings.Contains(l.Message, "Job pod") {
		node := strings.TrimPrefix(l.StepID, "ztunnel/bluegreen/drain/")
		bg.mu.Lock()
		seen := false
		for _, n := range bg.jobsWaited {
			seen = seen || n == node
		}
		if !seen {
			bg.jobsWaited = append(bg.jobsWaited, node)
		}
		bg.mu.Unlock()
		if !seen {
			go finishJobPods(ctx, node)
		}
	}
}

func (bg *blueGreenRun) churnErr() error {
	if bg.churnDone == nil {
		return errors.New("the churn never started (no drain began)")
	}
	select {
	case err := <-bg.churnDone:
		bg.churnDone <- err
		return err
	case <-time.After(3 * time.Minute):
		return errors.New("the churn did not finish within 3 minutes")
	}
}

// churnBlueGreen consolidates a blue node away (cordon, evict, delete) and adds a node to a green
// pool, as Karpenter would during a long move.
func churnBlueGreen(ctx context.Context, gone string) error {
	cs := h.Clientset
	if err := kube.Cordon(ctx, cs, gone, true); err != nil {
		return err
	}
	if err := kube.EvictAll(ctx, cs, gone, 3*time.Minute); err != nil {
		return err
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete node %s: %w", gone, err)
	}
	if err := kube.DeletePodsOn(ctx, cs, gone); err != nil {
		return err
	}
	_, err := launchGreen(ctx, harness.PoolGeneral, 1, 250)
	return err
}

// finishJobPods lets the running Job pods on a node complete.
func finishJobPods(ctx context.Context, node string) {
	pods, err := h.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		h.Logf("bluegreen: list pods on %s: %v", node, err)
		return
	}
	body := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, fixtures.AnnotationRunForever))
	for _, p := range pods.Items {
		if c := metav1.GetControllerOf(&p); c == nil || c.Kind != "Job" {
			continue
		}
		if _, err := h.Clientset.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
			h.Logf("bluegreen: finish Job pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
}

// karpenter stands in for Karpenter: once a NodePool's template carries the green label, it launches
// bgGreenPerPool nodes of that pool with the template's labels, and records whether every blue node
// the pool launched was held (karpenter.sh/do-not-disrupt) at that moment.
type karpenter struct {
	cancel   context.CancelFunc
	done     chan error
	mu       sync.Mutex
	launched map[string][]string
	held     map[string]bool
}

func startKarpenter(ctx context.Context) *karpenter {
	ctx, cancel := context.WithCancel(ctx)
	k := &karpenter{cancel: cancel, done: make(chan error, 1), launched: map[string][]string{}, held: map[string]bool{}}
	go func() { k.done <- k.run(ctx) }()
	return k
}

func (k *karpenter) run(ctx context.Context) error {
	next := 210 // pod CIDRs of green nodes: 127.64.210.0/24 on
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(300 * time.Millisecond):
		}
		var l unstructured.UnstructuredList
		l.SetAPIVersion(nodePoolGVK["apiVersion"])
		l.SetKind("NodePoolList")
		if err := h.Client.List(ctx, &l); err != nil {
			continue
		}
		for _, np := range l.Items {
			pool := np.GetName()
			labels, _, _ := unstructured.NestedStringMap(np.Object, "spec", "template", "metadata", "labels")
			k.mu.Lock()
			done := k.launched[pool] != nil
			k.mu.Unlock()
			if done || labels[ztunnel.DefaultColourLabel] != "green" {
				continue
			}
			held, err := poolHeld(ctx, pool)
			if err != nil {
				return err
			}
			names, err := launchGreen(ctx, pool, bgGreenPerPool, next, labels)
			if err != nil {
				return err
			}
			next += bgGreenPerPool
			k.mu.Lock()
			k.launched[pool], k.held[pool] = names, held
			k.mu.Unlock()
		}
	}
}

func (k *karpenter) stop() (map[string][]string, map[string]bool, error) {
	k.cancel()
	err := <-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.launched, k.held, err
}

// poolHeld reports whether every node of the pool carries karpenter.sh/do-not-disrupt=true.
func poolHeld(ctx context.Context, pool string) (bool, error) {
	nodes, err := h.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: cluster.PoolLabel + "=" + pool})
	if err != nil {
		return false, err
	}
	for _, n := range nodes.Items {
		if n.Annotations["karpenter.sh/do-not-disrupt"] != "true" {
			return false, nil
		}
	}
	return len(nodes.Items) > 0, nil
}

// launchGreen creates n kwok nodes of the pool with extra labels (the green colour among them), from
// pod CIDR index first on.
func launchGreen(ctx context.Context, pool string, n, first int, labels ...map[string]string) ([]string, error) {
	info, err := h.Clientset.Discovery().ServerVersion()
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range n {
		node := cluster.FakeNode(pool, 900+first+i, first+i, info.GitVersion)
		node.Name = fmt.Sprintf("%s-green-%d", pool, first+i)
		node.Labels["kubernetes.io/hostname"] = node.Name
		node.Labels[ztunnel.DefaultColourLabel] = "green"
		for _, l := range labels {
			for k, v := range l {
				node.Labels[k] = v
			}
		}
		if _, err := h.Clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return names, fmt.Errorf("launch green node %s: %w", node.Name, err)
		}
		names = append(names, node.Name)
	}
	return names, nil
}

// checkDone asserts the end state of the blue-green on a fresh snapshot.
func (bg *blueGreenRun) checkDone(t *testing.T, s *mesh.Snapshot) {
	t.Helper()
	if len(s.Ztunnels) != 1 {
		t.Fatalf("%d ztunnel DaemonSets, want green alone: %v", len(s.Ztunnels), s.Ztunnels)
	}
	z := s.Ztunnels[0]
	if z.Namespace != bgGreenNamespace || z.Name != bgGreen || z.ServiceAccount != bgGreen || z.Version != bg.version {
		t.Errorf("ztunnel %s/%s (account %s) at %s, want %s/%s at %s", z.Namespace, z.Name, z.ServiceAccount, z.Version, bgGreenNamespace, bgGreen, bg.version)
	}
	green := map[string]bool{}
	blue := map[string]bool{}
	for _, n := range bg.blue {
		blue[n] = true
	}
	for _, n := range s.Nodes {
		if n.Labels[ztunnel.DefaultColourLabel] == "green" {
			green[n.Name] = true
			if _, ok := mesh.ReadyAgentOn(z.Pods, n.Name); !ok {
				t.Errorf("green node %s runs no ready green ztunnel", n.Name)
			}
			continue
		}
		if !blue[n.Name] {
			t.Errorf("node %s is neither blue nor green", n.Name)
			continue
		}
		if !n.Unschedulable {
			t.Errorf("blue node %s is schedulable after the move", n.Name)
		}
		if _, has := n.Labels[ztunnel.DefaultColourLabel]; has {
			t.Errorf("blue node %s keeps label %s", n.Name, ztunnel.DefaultColourLabel)
		}
	}
	if len(green) < 2*bgGreenPerPool {
		t.Errorf("%d green nodes, want at least %d", len(green), 2*bgGreenPerPool)
	}
	for _, r := range s.Revisions {
		if d := cmpStrings([]string{bgGreenNamespace + "/" + bgGreen}, r.TrustedZtunnelAccounts); d != "" {
			t.Errorf("istiod %s trusts: %s", r.Name, d)
		}
	}
	for _, w := range s.Workloads {
		if w.Mode != mesh.ModeAmbient || w.Kind == "DaemonSet" {
			continue
		}
		for _, n := range w.Nodes {
			if !green[n] {
				t.Errorf("ambient %s still runs on blue node %s", w.Ref(), n)
			}
		}
	}
	for _, p := range s.NodePools {
		if p.Labels[ztunnel.DefaultColourLabel] != "green" {
			t.Errorf("NodePool %s template labels %v, want the green colour", p.Name, p.Labels)
		}
	}
	var nodes corev1.NodeList
	if err := h.Client.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if _, held := n.Annotations["karpenter.sh/do-not-disrupt"]; held && blue[n.Name] {
			t.Errorf("blue node %s is still held from Karpenter's disruptions", n.Name)
		}
	}
	for _, h := range s.HelmReleases {
		if h.Chart == "ztunnel" && (h.Namespace != bgGreenNamespace || h.Name != bgGreen) {
			t.Errorf("ztunnel release %s/%s is left", h.Namespace, h.Name)
		}
	}
}

// reportRequests logs the API requests the per-node steps made (cordon and drain), per node,
// evictions apart.
func (bg *blueGreenRun) reportRequests(t *testing.T) {
	t.Helper()
	perNode := map[string]int64{}
	evictions := map[string]int64{}
	total := map[string]int64{}
	for _, p := range bg.runs {
		for _, l := range p.snapshot() {
			if l.Type != string(execute.EventStepFinished) {
				continue
			}
			for k, v := range l.StepRequests {
				total[k] += v
			}
			for _, prefix := range []string{"ztunnel/bluegreen/cordon/", "ztunnel/bluegreen/drain/"} {
				node, ok := strings.CutPrefix(l.StepID, prefix)
				if !ok || node == nodeOfStep(bg.killedStep) {
					continue
				}
				for k, v := range l.StepRequests {
					if k == "CREATE pods/eviction" {
						evictions[node] += v
						continue
					}
					perNode[node] += v
				}
			}
		}
	}
	var counts []int64
	for _, v := range perNode {
		counts = append(counts, v)
	}
	var ev int64
	for _, v := range evictions {
		ev += v
	}
	t.Logf("API requests per blue node in its cordon and drain steps, evictions apart (the killed drain left out): %s; %d evictions in all", stats(counts), ev)
	var parts []string
	for _, k := range upgrade.SortedKeys(total) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, total[k]))
	}
	t.Logf("API requests inside steps, whole plan: %s", strings.Join(parts, " "))
}

func nodeOfStep(stepID string) string {
	if i := strings.LastIndex(stepID, "/"); i >= 0 {
		return stepID[i+1:]
	}
	return stepID
}

// cmpStrings returns "" when got holds exactly want (in any order), else a description.
func cmpStrings(want, got []string) string {
	w, g := append([]string(nil), want...), append([]string(nil), got...)
	sort.Strings(w)
	sort.Strings(g)
	if strings.Join(w, ",") == strings.Join(g, ",") {
		return ""
	}
	b, _ := json.Marshal(map[string][]string{"want": w, "got": g})
	return string(b)
}

// checkConcurrentDrains asserts, from the drains the watcher saw (a node drains from its first
// eviction to its last evicted pod gone), that the executor drained the nodes of a batch at the same
// time and never more than batch of them: at least half a batch at one instant (a node of the batch
// may have no pod to evict, or wait on a budget while the others drain), never more than batch.
// except are nodes drained by someone else (the churn's consolidation).
func checkConcurrentDrains(t *testing.T, r upgrade.Report, batch int, except map[string]bool) {
	t.Helper()
	most, at := r.MostDraining(except)
	drained := 0
	for _, d := range r.Drains {
		if !except[d.Node] {
			drained++
		}
	}
	t.Logf("%d node drains seen; at most %d nodes drained at one instant (batch %d): %v", drained, most, batch, at)
	if most > batch {
		t.Errorf("%d nodes drained at the same time, more than the batch of %d: %v", most, batch, at)
	}
	if most < (batch+1)/2 {
		t.Errorf("at most %d nodes drained at the same time; a batch of %d should drain its nodes at once", most, batch)
	}
}
