package execute

import (
	"context"
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkWorkloadsReady: every listed Deployment and StatefulSet has all its replicas updated, ready
// and available (the pods a drain evicted run again elsewhere); other kinds are not followed. A
// drain's postcondition reads them from the run's watch, which keeps them: a drain writes no
// workload, so the watch has nothing of the executor's own to catch up with, and a wave of drains
// costs no GET per workload and node.
func checkWorkloadsReady(cp *checkPass, ctx context.Context, _ plan.Check, a plan.WorkloadsReadyArgs) (bool, string, error) {
	var from *run
	if cp.st.Drain != nil {
		from = cp.r
	}
	var waiting []string
	for _, w := range a.Workloads {
		parts := strings.SplitN(w, "/", 3)
		if len(parts) != 3 {
			return false, "", fmt.Errorf("workload %q is not Kind/namespace/name; fix the plan", w)
		}
		ref := mesh.ObjectRef{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
		if ref.Kind != "Deployment" && ref.Kind != "StatefulSet" {
			continue
		}
		ok, why, err := cp.e.rolloutDone(ctx, from, ref)
		if err != nil {
			return false, "", err
		}
		if !ok {
			waiting = append(waiting, why)
		}
	}
	if len(waiting) > 0 {
		return false, plan.ListSome(waiting, 6), nil
	}
	return true, "", nil
}
