package execute

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var cordonAction = action{
	phase: "cordoning",
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		return e.setUnschedulable(ctx, r, st, st.Cordon.Node, true)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return nodeRef(st.Cordon.Node) },
	journal: schedulingJournal,
	backup:  usesNoBackup,
}

// schedulingJournal is the journal policy of cordons and uncordons: a repeat reads the node first. A
// cordon or uncordon of node n stays unrecorded across drains and pod deletions (they do not touch a
// node's schedulability) and across another node's cordon or uncordon.
var schedulingJournal = &journalPolicy{later: true, across: map[plan.Kind]nodeMatch{
	plan.KindDrain: anyNode, plan.KindDeletePod: anyNode,
	plan.KindCordon: otherNode, plan.KindUncordon: otherNode,
}}

// setUnschedulable cordons or uncordons a node. It reads the node first, to change nothing when it is
// already as wanted (a node cordoned before the plan, a step repeated after a crash), except on a
// first attempt for a node this run already cordoned or uncordoned itself: that node is as this run
// left it, and whatever a crashed run left unrecorded about it is behind (see journalPolicy), so
// the uncordon that follows a cordon merge-patches straight away. A retry reads first.
func (e *engine) setUnschedulable(ctx context.Context, r *run, st *plan.Step, node string, want bool) (outcome, error) {
	verb := map[bool]string{true: "cordoned", false: "uncordoned"}[want]
	var change string
	blind := !r.dry && r.scheduledByRun(node)
	attempt := 0
	err := e.retry(ctx, verb+" node "+node, func(ctx context.Context) error {
		attempt++
		var n corev1.Node
		n.Name = node
		if !blind || attempt > 1 {
			if err := e.c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
				return err
			}
			if n.Spec.Unschedulable == want {
				change = fmt.Sprintf("node %s is already %s", node, verb)
				r.saw(st, &n)
				return nil
			}
		}
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": want}})
		var opts []client.PatchOption
		change = verb + " node " + node
		if r.dry {
			opts = append(opts, client.DryRunAll)
			change = "would have " + change
		}
		if err := e.c.Patch(ctx, &n, client.RawPatch(types.MergePatchType, body), opts...); err != nil {
			return err
		}
		if !r.dry {
			r.saw(st, &n) // the patch's response: the node as it is now
		}
		return nil
	})
	if apierrors.IsNotFound(err) {
		e.markGone(r, st, node)
		return skippedGone(node), nil
	}
	if err != nil {
		return outcome{}, fmt.Errorf("set node %s unschedulable=%v: %w", node, want, err)
	}
	if !r.dry {
		r.markScheduled(node)
	}
	return finished(change), nil
}
