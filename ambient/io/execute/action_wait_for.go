package execute

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var waitForAction = action{
	interests: func(st *plan.Step) []interest { return checkInterests(st.WaitFor.Check) },
	phase:     "waiting",
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.waitFor(ctx, r, st, rec, st.WaitFor)
	},
	journal: journalLooks,
	backup:  usesNoBackup,
}

func (e *engine) waitFor(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, w *plan.WaitFor) (outcome, error) {
	if r.dry {
		return finished("would wait until " + w.Check.Description), nil
	}
	ok, reasons, err := e.checkAll(ctx, r, st, []plan.Check{w.Check})
	if err != nil {
		return outcome{}, err
	}
	if ok {
		return finished("holds: " + w.Check.Description), nil
	}
	timeout := e.opts.VerifyTimeout
	if w.TimeoutSeconds > 0 {
		timeout = time.Duration(w.TimeoutSeconds) * time.Second
	}
	if waited := e.clock.Now().Sub(rec.AttemptStarted); waited > timeout {
		return outcome{}, fmt.Errorf("%w: waited %s for %q: %s", ErrTimeout, timeout, w.Check.Description, strings.Join(reasons, "; "))
	}
	return outcome{progress: "waiting: " + strings.Join(reasons, "; ")}, nil
}
