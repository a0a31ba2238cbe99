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

// checkNodesReady: at least Min (default 1) ready nodes carry the selector's labels (one LIST).
func checkNodesReady(cp *checkPass, ctx context.Context, _ plan.Check, a plan.NodesReadyArgs) (bool, string, error) {
	sel, err := labels.Parse(a.Selector)
	if err != nil {
		return false, "", fmt.Errorf("selector %q: %w; fix the plan", a.Selector, err)
	}
	var nodes corev1.NodeList
	if err := cp.e.list(ctx, "nodes "+a.Selector, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, "", err
	}
	min := max(1, a.Min)
	var ready, notReady []string
	for i := range nodes.Items {
		if nodeReady(&nodes.Items[i]) {
			ready = append(ready, nodes.Items[i].Name)
		} else {
			notReady = append(notReady, nodes.Items[i].Name)
		}
	}
	if len(ready) >= min {
		return true, "", nil
	}
	sort.Strings(notReady)
	return false, fmt.Sprintf("%d of %d ready nodes labelled %s (not ready yet: %s)", len(ready), min, a.Selector, orNone(notReady)), nil
}
