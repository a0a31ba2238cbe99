package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var approvalAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		return e.approval(ctx, r, st)
	},
	// Approvals are recorded at once: nobody is asked twice.
	journal: journalAtOnce,
	backup:  usesNoBackup,
}

func (e *engine) approval(ctx context.Context, r *run, st *plan.Step) (outcome, error) {
	if r.dry {
		return finished("would ask for approval: " + st.Approval.Message), nil
	}
	if e.opts.Approve == nil {
		e.emit(e.stepEvent(r, st, EventApprovalNeeded, st.Approval.Message))
		return outcome{}, fmt.Errorf("%w: %s; run Apply again with Options.Approve set to approve it (the journal resumes here)", ErrApprovalRequired, st.Approval.Message)
	}
	e.emit(e.stepEvent(r, st, EventApprovalNeeded, st.Approval.Message))
	ok, err := e.opts.Approve(ctx, *st)
	if err != nil {
		return outcome{}, fmt.Errorf("ask for approval: %w", err)
	}
	if !ok {
		return outcome{}, fmt.Errorf("%w: approval was refused: %s; run Apply again to ask again", ErrApprovalRequired, st.Approval.Message)
	}
	return finished("approved: " + st.Approval.Message), nil
}
