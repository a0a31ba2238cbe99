package execute

import (
	"context"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeSchedulable reads the node, or takes it from the response of the step's own cordon or uncordon
// in this unit.
func (e *engine) nodeSchedulable(ctx context.Context, r *run, st *plan.Step, node string) (bool, string, error) {
	n, ok := r.seen(st, node)
	if !ok {
		n = &corev1.Node{}
		found, err := e.get(ctx, client.ObjectKey{Name: node}, n)
		if err != nil || !found {
			return false, "node " + node + " does not exist", err
		}
	}
	if n.Spec.Unschedulable {
		return false, "node " + node + " is cordoned", nil
	}
	return true, "", nil
}

// checkNodeSchedulable holds for a node that is gone: there is nothing left to uncordon.
func checkNodeSchedulable(cp *checkPass, ctx context.Context, c plan.Check, a plan.NodeSchedulableArgs) (bool, string, error) {
	node := nodeOf(c, a.Node)
	ok, why, err := cp.e.nodeSchedulable(ctx, cp.r, cp.st, node)
	if err != nil || ok {
		return ok, why, err
	}
	if gone, err := cp.e.nodeGone(ctx, cp.r, cp.st, node); err != nil || gone {
		return err == nil, "", err
	}
	return false, why, nil
}
