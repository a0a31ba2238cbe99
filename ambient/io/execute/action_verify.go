package execute

import (
	"context"
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var verifyAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		return e.verify(ctx, r, st, st.Verify)
	},
	journal: journalLooks,
	backup:  usesNoBackup,
}

func (e *engine) verify(ctx context.Context, r *run, st *plan.Step, v *plan.Verification) (outcome, error) {
	if r.dry {
		var what []string
		for _, c := range v.Checks {
			what = append(what, c.Description)
		}
		return finished("would verify: " + strings.Join(what, "; ")), nil
	}
	ok, reasons, err := e.checkAll(ctx, r, st, v.Checks)
	if err != nil {
		return outcome{}, err
	}
	if !ok {
		return outcome{}, fmt.Errorf("%w: %s", ErrVerification, strings.Join(reasons, "; "))
	}
	return finished(fmt.Sprintf("verified %s", plural(len(v.Checks), "check", "checks"))), nil
}
