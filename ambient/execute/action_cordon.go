package execute

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var cordonAction = action{
	run: func(e *Executor, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		return e.setUnschedulable(ctx, r, st, st.Cordon.Node, true)
	},
	node:    func(st *plan.Step) string { return st.Cordon.Node },
	objects: func(st *plan.Step) []mesh.ObjectRef { return nodeRef(st.Cordon.Node) },
}

func (e *Executor) setUnschedulable(ctx context.Context, r *run, st *plan.Step, node string, want bool) (outcome, error) {
	verb := map[bool]string{true: "cordoned", false: "uncordoned"}[want]
	var change string
	err := e.retry(ctx, verb+" node "+node, func(ctx context.Context) error {
		var n corev1.Node
		if err := e.c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return err
		}
		if n.Spec.Unschedulable == want {
			change = fmt.Sprintf("node %s is already %s", node, verb)
			return nil
		}
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": want}})
		var opts []client.PatchOption
		change = verb + " node " + node
		if r.dry {
			opts = append(opts, client.DryRunAll)
			change = "would have " + change
		}
		return e.c.Patch(ctx, &n, client.RawPatch(types.MergePatchType, body), opts...)
	})
	if apierrors.IsNotFound(err) {
		e.markGone(r, st, node)
		return skippedGone(node), nil
	}
	if err != nil {
		return outcome{}, fmt.Errorf("set node %s unschedulable=%v: %w", node, want, err)
	}
	return finished(change), nil
}
