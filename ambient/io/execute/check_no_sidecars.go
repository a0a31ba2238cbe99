package execute

import (
	"context"
	"fmt"
	"sort"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkNoSidecars: no pod of the namespace, terminating ones included, runs an injected sidecar
// (one LIST of the namespace's pods).
func checkNoSidecars(cp *checkPass, ctx context.Context, c plan.Check, _ plan.NoSidecarsArgs) (bool, string, error) {
	ns := c.Object.Name
	pods, err := cp.e.namespacePods(ctx, ns)
	if err != nil {
		return false, "", err
	}
	var bad []string
	for i := range pods {
		p := &pods[i]
		if finishedPod(p) || !hasSidecar(p) {
			continue
		}
		what := p.Name
		if p.DeletionTimestamp != nil {
			what += " (terminating)"
		}
		bad = append(bad, what)
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return false, fmt.Sprintf("%d pods of namespace %s still run sidecars: %s", len(bad), ns, plan.ListSome(bad, 8)), nil
	}
	return true, "", nil
}
