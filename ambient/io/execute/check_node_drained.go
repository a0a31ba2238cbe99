package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func (e *engine) nodeDrained(ctx context.Context, r *run, node string, ambientOnly bool) (bool, string, error) {
	var pods corev1.PodList
	if err := e.list(ctx, "pods on node "+node, &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return false, "", err
	}
	var ambientNS map[string]bool
	if ambientOnly {
		var err error
		if ambientNS, err = e.ambientNamespacesFor(ctx, r); err != nil {
			return false, "", err
		}
	}
	var left []string
	for i := range pods.Items {
		if ambientOnly && !ambientCaptured(&pods.Items[i], ambientNS) {
			continue
		}
		if !stays(&pods.Items[i]) {
			left = append(left, pods.Items[i].Namespace+"/"+pods.Items[i].Name)
		}
	}
	if len(left) > 0 {
		return false, fmt.Sprintf("%s besides DaemonSet pods still on node %s: %s", plural(len(left), "pod", "pods"), node, plan.ListSome(left, 8)), nil
	}
	return true, "", nil
}

// checkNodeDrained holds for a node that is gone: nothing runs on it any more.
func checkNodeDrained(cp *checkPass, ctx context.Context, c plan.Check, a plan.NodeDrainedArgs) (bool, string, error) {
	node := nodeOf(c, a.Node)
	if v := cp.r.justSaw; v.step == cp.st.ID && v.drained == node && v.ambient == a.AmbientOnly {
		return true, "", nil // the step's drain found no pod left just now, by the same rules
	}
	ok, why, err := cp.e.nodeDrained(ctx, cp.r, node, a.AmbientOnly)
	if err != nil || ok {
		return ok, why, err
	}
	if gone, err := cp.e.nodeGone(ctx, cp.r, cp.st, node); err != nil || gone {
		return err == nil, "", err
	}
	return false, why, nil
}
