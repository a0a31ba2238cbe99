package execute

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkNodeAgentAbsent: no pod of the DaemonSet is on the node (or on any node) any more, not even
// terminating: the next node agent may start there without two running at once, or the agent's
// account can stop being trusted.
func checkNodeAgentAbsent(cp *checkPass, ctx context.Context, c plan.Check, a plan.NodeAgentAbsentArgs) (bool, string, error) {
	var pods corev1.PodList
	opts := []client.ListOption{client.InNamespace(c.Object.Namespace)}
	what := "pods of DaemonSet " + c.Object.String()
	if a.Node != "" {
		opts = append(opts, client.MatchingFields{"spec.nodeName": a.Node})
		what = "pods on node " + a.Node
	}
	if err := cp.e.list(ctx, what, &pods, opts...); err != nil {
		return false, "", err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ctl := metav1.GetControllerOf(p); ctl != nil && ctl.Kind == "DaemonSet" && ctl.Name == c.Object.Name {
			state := "running"
			if p.DeletionTimestamp != nil {
				state = "terminating"
			}
			return false, fmt.Sprintf("pod %s/%s of DaemonSet %s is still on node %s (%s)", p.Namespace, p.Name, c.Object.Name, p.Spec.NodeName, state), nil
		}
	}
	return true, "", nil
}
