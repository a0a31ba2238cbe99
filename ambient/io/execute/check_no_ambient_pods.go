package execute

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkNoAmbientPods: no pod ambient captures runs on a node with the selector's labels (one LIST
// of the nodes, one of the namespaces, one paged LIST of pods). DaemonSet and mirror pods count: a
// drain leaves them on the node, and their traffic still goes through its ztunnel (the blue-green's
// blue uninstall waits on this); only finished pods do not.
func checkNoAmbientPods(cp *checkPass, ctx context.Context, _ plan.Check, a plan.NoAmbientPodsArgs) (bool, string, error) {
	e := cp.e
	sel, err := labels.Parse(a.Selector)
	if err != nil {
		return false, "", fmt.Errorf("selector %q: %w; fix the plan", a.Selector, err)
	}
	var nodes corev1.NodeList
	if err := e.list(ctx, "nodes "+a.Selector, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, "", err
	}
	on := map[string]bool{}
	for _, n := range nodes.Items {
		on[n.Name] = true
	}
	if len(on) == 0 {
		return true, "", nil
	}
	ambientNS, err := e.ambientNamespaces(ctx)
	if err != nil {
		return false, "", err
	}
	var left []string
	err = e.eachPod(ctx, func(p *corev1.Pod) {
		if on[p.Spec.NodeName] && !finishedPod(p) && ambientCaptured(p, ambientNS) {
			left = append(left, fmt.Sprintf("%s/%s on %s", p.Namespace, p.Name, p.Spec.NodeName))
		}
	})
	if err != nil {
		return false, "", err
	}
	if len(left) > 0 {
		sort.Strings(left)
		return false, fmt.Sprintf("%s still run on nodes labelled %s: %s", plural(len(left), "ambient pod", "ambient pods"), a.Selector, plan.ListSome(left, 8)), nil
	}
	return true, "", nil
}
