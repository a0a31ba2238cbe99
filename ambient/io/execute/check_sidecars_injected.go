package execute

import (
	"context"
	"fmt"
	"sort"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkSidecarsInjected: every pod of the step's workloads (every pod of the namespace when the
// step names none) runs an injected sidecar and is not redirected to ztunnel; pods still
// terminating without one count against it (one LIST of the namespace's pods).
func checkSidecarsInjected(cp *checkPass, ctx context.Context, c plan.Check, _ plan.SidecarsInjectedArgs) (bool, string, error) {
	ns := c.Object.Name
	var workloads []mesh.ObjectRef
	if a, ok := actions[cp.st.Kind()]; ok && a.workloads != nil {
		workloads = a.workloads(cp.st)
	}
	want := map[mesh.ObjectRef]bool{}
	for _, w := range workloads {
		want[w] = true
	}
	pods, err := cp.e.namespacePods(ctx, ns)
	if err != nil {
		return false, "", err
	}
	var bad []string
	n := 0
	for i := range pods {
		p := &pods[i]
		if finishedPod(p) || gatewayPod(p) || p.Labels[mesh.LabelSidecarInject] == "false" {
			continue
		}
		if len(want) > 0 && !want[workloadOf(p)] {
			continue
		}
		n++
		switch {
		case !hasSidecar(p) && p.DeletionTimestamp != nil:
			bad = append(bad, p.Name+" (no sidecar, terminating)")
		case !hasSidecar(p):
			bad = append(bad, p.Name+" (no sidecar)")
		case p.Annotations[mesh.AnnotationRedirection] == "enabled":
			bad = append(bad, p.Name+" (redirected to ztunnel)")
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return false, fmt.Sprintf("%d of %d pods of namespace %s are not back on sidecars: %s", len(bad), n, ns, plan.ListSome(bad, 8)), nil
	}
	return true, "", nil
}
