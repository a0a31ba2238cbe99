package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/revision"
)

func checkNoReferences(cp *checkPass, ctx context.Context, _ plan.Check, a plan.NoReferencesArgs) (bool, string, error) {
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	rev := a.Revision
	var what []string
	if a.Gone {
		if r, ok := s.Revision(rev); ok {
			what = append(what, fmt.Sprintf("istiod Deployment %s/%s of revision %s still runs", r.Namespace, r.Deployment, rev))
		}
	}
	for _, ref := range revision.References(s, rev) {
		what = append(what, ref.String())
	}
	if len(what) > 0 {
		return false, fmt.Sprintf("revision %s is still referred to: %s", rev, limitList(what, 8)), nil
	}
	return true, "", nil
}
