package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func checkWorkloadsOnRevision(cp *checkPass, ctx context.Context, _ plan.Check, a plan.WorkloadsOnRevisionArgs) (bool, string, error) {
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	rev, tag := a.Revision, a.Tag
	var refs []mesh.ObjectRef
	if cp.st.Restart != nil {
		refs = cp.st.Restart.Workloads
	} else {
		for _, w := range s.Workloads {
			ns, _ := s.Namespace(w.Namespace)
			if len(w.SidecarRevisions) > 0 && (w.PodRevisionLabel == tag || (w.PodRevisionLabel == "" && ns.Labels[mesh.LabelRev] == tag)) {
				refs = append(refs, w.Ref())
			}
		}
	}
	byRef := map[mesh.ObjectRef]mesh.Workload{}
	for _, w := range s.Workloads {
		byRef[w.Ref()] = w
	}
	var bad []string
	for _, ref := range refs {
		w, ok := byRef[ref]
		if !ok {
			bad = append(bad, ref.String()+" has no pods")
			continue
		}
		if n := w.SidecarRevisions[rev]; n != w.Pods {
			bad = append(bad, fmt.Sprintf("%s: %d of %d pods injected by %s (%v)", ref, n, w.Pods, rev, w.SidecarRevisions))
		}
	}
	if len(bad) > 0 {
		return false, plan.ListSome(bad, 6), nil
	}
	return true, "", nil
}
