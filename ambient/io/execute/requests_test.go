package execute_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeByNodePlan is only the ztunnel node-by-node part of an upgrade: per node cordon, drain,
// replace, wait, uncordon and a health gate (batch size 1), with ztunnel already at 1.31.4 and
// OnDelete.
func nodeByNodePlan(w *world) *plan.Plan {
	p := plan.New(plan.Metadata{Name: "ztunnel node by node", Operation: "upgrade", Fingerprint: w.Model.Fingerprint()})
	last := ""
	add := func(st plan.Step) {
		if last != "" {
			st.DependsOn = []string{last}
		}
		if st.Risk == "" {
			st.Risk = plan.RiskLow
		}
		p.Steps = append(p.Steps, st)
		last = st.ID
	}
	for i, n := range w.Model.Nodes {
		addNodeSteps(add, n.Name, i+1)
	}
	return p
}

// onDeleteWorld is the upgrade world with ztunnel already upgraded to the target at updateStrategy
// OnDelete, as a node-by-node plan's first step leaves it.
func onDeleteWorld(t *testing.T, nodes int) *world {
	t.Helper()
	w := upgradeWorld(t, nodes)
	if _, err := w.Helm.Upgrade(context.Background(), execute.HelmRequest{Release: "ztunnel", Namespace: "istio-system", Chart: chart("ztunnel", toV),
		Values: map[string]any{"updateStrategy": map[string]any{"type": "OnDelete"}}}); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNodeByNodeZtunnelAPIRequestsPerNode(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	const nodes = 50
	w := onDeleteWorld(t, nodes)
	ctx := context.Background()
	p := nodeByNodePlan(w)
	w.ResetCounts()
	// The journal is kept in memory and its writes counted: each would be one server-side apply of the
	// journal ConfigMap, which the fake client serves slowly.
	journal := &execute.MemoryJournal{}
	res, err := w.Executor(func(o *execute.Options) { o.Journal = journal }).Apply(ctx, p, execute.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done {
		t.Fatal("not done")
	}
	cluster, book := w.CallCount()
	byCall := map[string]int{}
	for k, v := range w.Calls() {
		byCall[k] = v
	}
	bookCalls := map[string]int{}
	for k, v := range w.Bookkeeping() {
		bookCalls[k] = v
	}
	var lines []string
	for k, v := range byCall {
		lines = append(lines, fmt.Sprintf("%-32s %5d  %.2f/node", k, v, float64(v)/nodes))
	}
	sort.Strings(lines)
	var blines []string
	for k, v := range bookCalls {
		blines = append(blines, fmt.Sprintf("%-32s %5d  %.2f/node", k, v, float64(v)/nodes))
	}
	sort.Strings(blines)
	t.Logf("%d nodes, %d steps, %d workload pods evicted (one PDB-protected pod refused twice)", nodes, len(p.Steps), nodes+2)
	t.Logf("cluster requests: %d = %.2f per node\n%s", cluster, float64(cluster)/nodes, strings.Join(lines, "\n"))
	t.Logf("journal writes (one apply of the journal ConfigMap each): %d = %.2f per node", journal.Saves, float64(journal.Saves)/nodes)
	t.Logf("lock requests: %d = %.2f per node\n%s", book, float64(book)/nodes, strings.Join(blines, "\n"))
	t.Logf("clock: %s waited in %d waits", w.Clock.Slept, w.Clock.Waits)
	// A regression guard, not a timing: every node costs a handful of requests, never a list per pod
	// or per namespace.
	if per := float64(cluster) / nodes; per > 15 {
		t.Errorf("%.1f cluster requests per node; expected about 10", per)
	}
	if n := byCall["list Pod"]; n > 6*nodes {
		t.Errorf("%d pod LISTs for %d nodes", n, nodes)
	}
}

// nodeByNodeWaves is nodeByNodePlan with the nodes in waves of batch (plan.Step.Wave).
func nodeByNodeWaves(w *world, batch int) *plan.Plan {
	p := plan.New(plan.Metadata{Name: "ztunnel node by node in waves", Operation: "upgrade", Fingerprint: w.Model.Fingerprint()})
	add := func(st plan.Step) {
		if st.Risk == "" {
			st.Risk = plan.RiskLow
		}
		p.Steps = append(p.Steps, st)
	}
	before := ""
	for i := 0; i < len(w.Model.Nodes); i += batch {
		var nodes []string
		for _, n := range w.Model.Nodes[i:min(i+batch, len(w.Model.Nodes))] {
			nodes = append(nodes, n.Name)
		}
		before = addWaveSteps(add, before, nodes, i/batch+1)
	}
	return p
}

// TestAWaveOfTenCostsAtMostTenRequestsPerNodeBeyondEvictions counts every request a node-by-node
// run in waves of 10 makes of the cluster, watches and the LISTs that start them included: waits
// wake on watches, so concurrent nodes do not multiply the polls.
func TestAWaveOfTenCostsAtMostTenRequestsPerNodeBeyondEvictions(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	const nodes = 50
	w := onDeleteWorld(t, nodes)
	ctx := context.Background()
	p := nodeByNodeWaves(w, 10)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	w.ResetCounts()
	uw := newUnitWatch()
	res, err := w.Executor(func(o *execute.Options) { o.Journal, o.Observer = &execute.MemoryJournal{}, uw.observe }).Apply(ctx, p, execute.ApplyOptions{})
	if err != nil || !res.Done {
		t.Fatalf("Apply: %v", err)
	}
	cluster, _ := w.CallCount()
	evictions := 0
	var lines []string
	for k, v := range w.Calls() {
		if strings.Contains(k, "eviction") {
			evictions += v
		}
		lines = append(lines, fmt.Sprintf("%-32s %5d  %.2f/node", k, v, float64(v)/nodes))
	}
	sort.Strings(lines)
	per := float64(cluster-evictions) / nodes
	t.Logf("%d nodes in waves of 10 (at most %d draining at once): %d requests, %d of them evictions: %.2f per node beyond evictions\n%s",
		nodes, uw.maxDraining, cluster, evictions, per, strings.Join(lines, "\n"))
	if uw.maxDraining != 10 {
		t.Errorf("at most %d nodes drained at once; want 10", uw.maxDraining)
	}
	if per > 10 {
		t.Errorf("%.2f requests per node beyond evictions; the budget is 10", per)
	}
}

// TestAWaitForANewZtunnelTakesTheWatchEventThatShowsItReadyForALook: each node's new ztunnel
// starts unready and turns Ready a moment after the wait first looks (SlowNodeAgents). The wait
// LISTs the node's pods once; what wakes it, the watch event of the pod turning Ready, is the pod as
// a second LIST would show it, so it finishes without one.
func TestAWaitForANewZtunnelTakesTheWatchEventThatShowsItReadyForALook(t *testing.T) {
	const nodes = 6
	w := onDeleteWorld(t, nodes)
	w.SlowNodeAgents()
	p := nodeByNodePlan(w)
	c := newStepCost(w)
	if _, err := w.Executor(func(o *execute.Options) { o.Observer, o.Journal = c.observe, &execute.MemoryJournal{} }).Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	waits := c.sum(func(id string) bool { return strings.HasSuffix(id, "/wait") })
	if waits.steps != nodes {
		t.Fatalf("%d wait steps finished; want %d", waits.steps, nodes)
	}
	if got := waits.calls["list Pod"]; got != nodes {
		t.Errorf("the waits for the new ztunnels listed pods %d times over %d nodes; want one look each, the watch event doing the rest\n%s", got, nodes, waits.lines(nodes))
	}
	var pods corev1.PodList
	if err := w.Base.List(context.Background(), &pods, client.InNamespace("istio-system"), client.MatchingLabels{"app": "ztunnel"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if img := p.Spec.Containers[0].Image; !strings.Contains(img, ":"+toV) || !executetest.PodReady(&p) {
			t.Errorf("ztunnel pod %s on %s runs %s, ready=%v; want %s, ready", p.Name, p.Spec.NodeName, img, executetest.PodReady(&p), toV)
		}
	}
}
