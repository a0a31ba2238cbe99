package execute

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/plan"
)

// checkNodeAgentAbsent: no pod of the DaemonSet is on the node any more, not even terminating: the
// next node agent may start there without two running at once.
func checkNodeAgentAbsent(cp *checkPass, ctx context.Context, c plan.Check, a plan.NodeAgentAbsentArgs) (bool, string, error) {
	var pods corev1.PodList
	if err := cp.e.list(ctx, "pods on node "+a.Node, &pods, client.InNamespace(c.Object.Namespace), client.MatchingFields{"spec.nodeName": a.Node}); err != nil {
		return false, "", err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ctl := metav1.GetControllerOf(p); ctl != nil && ctl.Kind == "DaemonSet" && ctl.Name == c.Object.Name {
			state := "running"
			if p.DeletionTimestamp != nil {
				state = "terminating"
			}
			return false, fmt.Sprintf("pod %s/%s of DaemonSet %s is still on node %s (%s)", p.Namespace, p.Name, c.Object.Name, a.Node, state), nil
		}
	}
	return true, "", nil
}
