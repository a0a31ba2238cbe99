package execute_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func newNode(name, pool string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/os": "linux", "karpenter.sh/nodepool": pool, "kubernetes.io/hostname": name}}}
}

// drainOrder returns the nodes the plan drains, in order.
func drainOrder(p *plan.Plan) []string {
	var out []string
	for _, st := range p.Steps {
		if st.Drain != nil {
			out = append(out, st.Drain.Node)
		}
	}
	return out
}

// TestNodesThatComeAndGoBetweenPlanningAndApplyingDoNotMakeThePlanStale: an autoscaler adds and
// removes nodes all the time; the plan's fingerprint does not cover the node list.
func TestNodesThatComeAndGoBetweenPlanningAndApplyingDoNotMakeThePlanStale(t *testing.T) {
	ctx := context.Background()
	w := demoWorld(t)
	p := demoPlan(t, w)
	order := drainOrder(p)
	if err := w.DeleteNode(ctx, order[len(order)-1]); err != nil {
		t.Fatal(err)
	}
	if err := w.AddNode(ctx, newNode("ip-10-0-9-1.ec2.internal", "general")); err != nil {
		t.Fatal(err)
	}
	res, err := w.Executor().Apply(ctx, p, execute.ApplyOptions{Until: "prechecks"})
	if errors.Is(err, execute.ErrPlanStale) {
		t.Fatalf("node churn made the plan stale: %v", err)
	}
	if err != nil || len(res.Steps) != 1 {
		t.Fatalf("Apply until prechecks: %v, %d steps", err, len(res.Steps))
	}
}

// TestANodeRemovedAndANodeAddedDuringANodeByNodeRunDoNotStopIt removes a node the plan has not
// drained yet and adds one while the first node drains: the removed node's steps are skipped with a
// NodeGone event, the new node gets its ztunnel from the DaemonSet's new template and the last step
// verifies it, and the mesh ends upgraded on the real objects.
func TestANodeRemovedAndANodeAddedDuringANodeByNodeRunDoNotStopIt(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	ctx := context.Background()
	w := demoWorld(t)
	p := demoPlan(t, w)
	order := drainOrder(p)
	first, gone, added := order[0], order[len(order)-1], "ip-10-0-9-1.ec2.internal"
	before, err := w.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cordoned := map[string]bool{}
	for _, n := range before.Nodes {
		if n.Name != gone {
			cordoned[n.Name] = n.Unschedulable
		}
	}
	var goneEvents []execute.Event
	var churnErr error
	e := w.Executor(func(o *execute.Options) {
		o.Observer = func(ev execute.Event) {
			switch {
			case ev.Type == execute.EventStepStarted && ev.StepID == "ztunnel/node/"+first+"/drain":
				churnErr = errors.Join(churnErr, w.DeleteNode(ctx, gone), w.AddNode(ctx, newNode(added, "general")))
			case ev.Type == execute.EventNodeGone:
				goneEvents = append(goneEvents, ev)
			}
		}
	})
	res, err := e.Apply(ctx, p, execute.ApplyOptions{})
	if churnErr != nil {
		t.Fatal(churnErr)
	}
	if err != nil {
		t.Fatalf("Apply with a node removed and one added mid-run: %v", err)
	}
	if len(goneEvents) != 1 || goneEvents[0].Node != gone {
		t.Errorf("NodeGone events %+v; want one for %s", goneEvents, gone)
	}
	skipped := 0
	for _, sr := range res.Steps {
		if strings.HasPrefix(sr.StepID, "ztunnel/node/"+gone+"/") && strings.Contains(sr.Message, "is gone") {
			skipped++
		}
	}
	if skipped == 0 {
		t.Errorf("no step of %s says it was skipped because the node is gone", gone)
	}
	cordoned[added] = false
	checkUpgraded(t, w, "1-30-3", cordoned)
}
