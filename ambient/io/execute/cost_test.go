package execute_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// The executor's cost per node (issue 12): API requests of a node-by-node and of a blue-green
// ztunnel replacement on a synthetic mesh, counted by the world call by call and attributed to the
// step they were made for. Counts are deterministic, so the ceilings below are real tests, not
// timings.

// costNodes is how many nodes the cost tests add to the demo mesh's 14: 100, or 25 with -short. The
// per-node counts are the same at both sizes (8.28 and 8.35 node by node, 4.90 and 4.96 blue-green),
// which is what the ceilings hold; the world's controllers cost more than linearly in the nodes.
func costNodes() int {
	if testing.Short() {
		return 25
	}
	return 100
}

// The ceilings of API requests per node beyond evictions: everything the node's own steps and the
// batch health gates cost (lease and journal included), divided by the nodes. Issue 12 asks for at
// most 10; each ceiling sits just above what the executor makes today, so a change that adds a
// request per node fails.
const (
	maxNodeByNodeRequestsPerNode = 9
	maxBlueGreenRequestsPerNode  = 5.5
)

// scaledDemoWorld is the demo world with extra nodes in pool general, each running one pod of the
// ambient Deployment catalog/fleet besides the node agents the DaemonSets place there.
func scaledDemoWorld(t *testing.T, extra int) *world {
	t.Helper()
	ctx := context.Background()
	w := demoWorld(t)
	for i := range extra {
		name := fmt.Sprintf("ip-10-0-9-%d.ec2.internal", i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "general", "kubernetes.io/arch": "amd64",
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "us-east-1a"}}}
		if err := w.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fleet-7c9d5f8b6d-%05d", i), Namespace: "catalog",
			Labels:          map[string]string{"app": "fleet", "pod-template-hash": "7c9d5f8b6d"},
			Annotations:     map[string]string{mesh.AnnotationRedirection: "enabled"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "fleet-7c9d5f8b6d", UID: "rs-fleet", Controller: ptr.To(true)}}},
			Spec:   corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "fleet", Image: "registry.example.com/shop/fleet:1.0"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		if err := w.Base.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SynthesizeDeployments(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// stepCost counts the requests made for each step: every call since the previous step finished (or
// was skipped) is the finishing step's, so precondition checks, lease renewals between steps and
// journal writes count too.
type stepCost struct {
	w      *world
	last   map[string]int
	byStep map[string]map[string]int
}

func newStepCost(w *world) *stepCost {
	return &stepCost{w: w, last: w.allCalls(), byStep: map[string]map[string]int{}}
}

// allCalls merges Calls and Bookkeeping.
func (w *world) allCalls() map[string]int {
	out := w.Calls()
	for k, v := range w.Bookkeeping() {
		out[k] += v
	}
	return out
}

func (c *stepCost) observe(ev execute.Event) {
	if ev.Type != execute.EventStepFinished && ev.Type != execute.EventStepSkipped {
		return
	}
	now := c.w.allCalls()
	d := c.byStep[ev.StepID]
	if d == nil {
		d = map[string]int{}
		c.byStep[ev.StepID] = d
	}
	for k, v := range now {
		if n := v - c.last[k]; n > 0 {
			d[k] += n
		}
	}
	c.last = now
}

// costReport sums the costs of some steps by call.
type costReport struct {
	steps int
	calls map[string]int
}

func (c *stepCost) sum(match func(id string) bool) costReport {
	r := costReport{calls: map[string]int{}}
	for id, d := range c.byStep {
		if !match(id) {
			continue
		}
		r.steps++
		for k, v := range d {
			r.calls[k] += v
		}
	}
	return r
}

func (r costReport) total(except ...string) int {
	n := 0
	for k, v := range r.calls {
		if !containsString(except, k) {
			n += v
		}
	}
	return n
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r costReport) lines(nodes int) string {
	keys := make([]string, 0, len(r.calls))
	for k := range r.calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("    %-28s %6d  %6.2f/node", k, r.calls[k], float64(r.calls[k])/float64(nodes)))
	}
	return strings.Join(out, "\n")
}

const evictions = "create Pod/eviction"

// reportCost logs the per-node, gate and whole-run costs and checks the ceiling: requests per node
// beyond evictions, counting the node steps, the batch gates, and every other step of the run
// (whole-mesh steps, lease and journal) spread over the nodes.
func reportCost(t *testing.T, name string, ceiling float64, c *stepCost, nodes int, nodeStep, gateStep func(string) bool) {
	t.Helper()
	node := c.sum(nodeStep)
	gates := c.sum(gateStep)
	rest := c.sum(func(id string) bool { return !nodeStep(id) && !gateStep(id) })
	all := c.sum(func(string) bool { return true })
	per := func(r costReport) float64 { return float64(r.total(evictions)) / float64(nodes) }
	t.Logf("%s: %d nodes", name, nodes)
	t.Logf("  node steps (%d): %.2f requests per node beyond evictions (%d evictions)\n%s", node.steps, per(node), node.calls[evictions], node.lines(nodes))
	t.Logf("  batch health gates (%d): %.2f per node\n%s", gates.steps, per(gates), gates.lines(nodes))
	t.Logf("  the other steps (%d, whole-mesh): %.2f per node\n%s", rest.steps, per(rest), rest.lines(nodes))
	t.Logf("  whole run: %d requests, %.2f per node beyond evictions", all.total(), per(all))
	if got := per(node) + per(gates); got > ceiling {
		t.Errorf("%s: %.2f requests per node in the node steps and gates beyond evictions; the ceiling is %g", name, got, ceiling)
	}
}

// TestNodeByNodeRequestsPerNode applies ambient.PlanUpgrade's node-by-node plan to the
// scaled demo world and counts the API requests of each node's steps (cordon, drain, replace, wait,
// uncordon) and of the batch health gates.
func TestNodeByNodeRequestsPerNode(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	w := scaledDemoWorld(t, costNodes())
	snap, err := w.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: mesh.MustParseVersion(toV), Today: t0,
		Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 5}, Waive: []plan.Code{plan.CodeNamespaceSidecarAndAmbient}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Runnable() {
		t.Fatalf("not runnable: %v", plan.Stopping(p.Findings))
	}
	w.ResetCounts()
	c := newStepCost(w)
	journal := w.Journal()
	if _, err := w.Executor(func(o *execute.Options) { o.Observer, o.Journal = c.observe, journal }).Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := len(snap.Nodes)
	reportCost(t, "node by node", maxNodeByNodeRequestsPerNode, c, nodes,
		func(id string) bool { return strings.HasPrefix(id, "ztunnel/node/") },
		func(id string) bool { return strings.HasPrefix(id, "ztunnel/batch/") })
	checkUpgraded(t, w, "1-30-3", map[string]bool{"ip-10-0-1-18.ec2.internal": true})
}

// TestBlueGreenRequestsPerNode applies ztunnel.BlueGreenZtunnel's plan to the scaled
// demo world, green nodes arriving once green is installed, and counts the API requests of each blue
// node's steps (cordon, drain with its WorkloadsReady postcondition) and of the batch health gates.
func TestBlueGreenRequestsPerNode(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	w := scaledDemoWorld(t, costNodes())
	p := blueGreenPlan(t, w, ztunnel.BlueGreen{BatchSize: 5, Capacity: ztunnel.GreenCapacity{Nodes: 4}})
	ctx := context.Background()
	w.ResetCounts()
	c := newStepCost(w)
	added := false
	observer := func(ev execute.Event) {
		c.observe(ev)
		if ev.Type == execute.EventStepFinished && ev.StepID == "ztunnel/bluegreen/install-green" && !added {
			added = true
			for i := range 4 {
				if err := w.AddNode(ctx, greenNode(fmt.Sprintf("green-%d", i))); err != nil {
					t.Error(err)
				}
			}
		}
		if ev.Type == execute.EventStepProgress && strings.Contains(ev.Message, "Job pod") {
			if _, err := w.FinishJobs(ctx, strings.TrimPrefix(ev.StepID, "ztunnel/bluegreen/drain/")); err != nil {
				t.Error(err)
			}
		}
	}
	journal := w.Journal()
	if _, err := w.Executor(func(o *execute.Options) { o.Observer, o.Journal = observer, journal }).Apply(ctx, p, execute.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	blue := map[string]bool{}
	for _, st := range p.Steps {
		if st.Drain != nil {
			blue[st.Drain.Node] = true
		}
	}
	reportCost(t, "blue-green", maxBlueGreenRequestsPerNode, c, len(blue),
		func(id string) bool {
			return strings.HasPrefix(id, "ztunnel/bluegreen/cordon/") || strings.HasPrefix(id, "ztunnel/bluegreen/drain/")
		},
		func(id string) bool { return strings.HasPrefix(id, "ztunnel/bluegreen/batch/") })
	checkBlueGreenDone(t, w)
}

// TestReplaceAfterDrainNeverDeletesAReplacement: a node's ztunnel pod is deleted from the drain's
// LIST, not a new one. When the pod is replaced between the drain and the deletion (here the world's
// DaemonSet recreates it, already at the new version, right after the drain finishes), the deletion
// of the recorded UID finds it gone and leaves the replacement running.
func TestReplaceAfterDrainNeverDeletesAReplacement(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	ctx := context.Background()
	w := scaledDemoWorld(t, 2)
	snap, err := w.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: mesh.MustParseVersion(toV), Today: t0,
		Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 5}, Waive: []plan.Code{plan.CodeNamespaceSidecarAndAmbient}})
	if err != nil {
		t.Fatal(err)
	}
	const node = "ip-10-0-9-1.ec2.internal"
	ztunnelPods := func() map[string]bool {
		var pods corev1.PodList
		if err := w.Base.List(ctx, &pods, client.InNamespace("istio-system"), client.MatchingLabels{"app": "ztunnel"}); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
				out[p.Name] = true
			}
		}
		return out
	}
	var replacement, replaceMsg string
	observer := func(ev execute.Event) {
		switch {
		case ev.Type == execute.EventStepFinished && ev.StepID == "ztunnel/node/"+node+"/drain":
			before := ztunnelPods()
			for name := range before {
				// Through the world's client, so its DaemonSet recreates the pod at its template.
				if err := w.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: name}}); err != nil {
					t.Error(err)
				}
			}
			for name := range ztunnelPods() {
				if !before[name] {
					replacement = name
				}
			}
		case ev.Type == execute.EventStepFinished && ev.StepID == "ztunnel/node/"+node+"/replace":
			replaceMsg = strings.Join(ev.Changes, "; ")
			if !ztunnelPods()[replacement] {
				t.Errorf("the replace step deleted %s, which replaced the pod the drain listed", replacement)
			}
		}
	}
	if _, err := w.Executor(func(o *execute.Options) { o.Observer = observer }).Apply(ctx, p, execute.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if replacement == "" || replaceMsg == "" {
		t.Fatalf("the test did not run as meant: replacement %q, replace step %q", replacement, replaceMsg)
	}
	if !strings.Contains(replaceMsg, "already gone") {
		t.Errorf("replace step: %q, want the listed pod found already gone", replaceMsg)
	}
	if !ztunnelPods()[replacement] {
		t.Errorf("%s is gone after the run", replacement)
	}
}
