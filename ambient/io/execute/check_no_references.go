package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
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
	refs := cp.e.opts.Gates.References
	if refs == nil {
		return false, "", fmt.Errorf("%w: the check needs to know what refers to a revision; pass execute.Options.Gates (ambient.Gates())", ErrNoGate)
	}
	what = append(what, refs(s, rev)...)
	if len(what) > 0 {
		return false, fmt.Sprintf("revision %s is still referred to: %s", rev, plan.ListSome(what, 8)), nil
	}
	return true, "", nil
}
