package execute

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// unit runs one bounded unit of a step on the lane and records the outcome. When the step is in
// progress, r.waiting says what it waits for.
func (e *engine) unit(ctx context.Context, r *run, st *plan.Step, checkDeps bool) (StepResult, error) {
	sr := StepResult{StepID: st.ID, Kind: st.Kind()}
	if err := ctx.Err(); err != nil {
		return sr, interrupted(st, err)
	}
	r.justSaw, r.waiting, r.view, r.proof = unitView{}, nil, unitHold{}, nil
	r.lastPods, r.nodePods = r.nodePods, podsView{}
	clear(r.touched) // the last unit published them
	rec := r.own(st.ID)
	defer r.publish()
	if done, err := e.settled(r, st, rec, &sr); done || err != nil {
		return sr, err
	}
	if checkDeps && !r.dry {
		for _, d := range st.DependsOn {
			if s := r.status(d); s != StatusDone {
				return sr, stepErr(st.ID, fmt.Errorf("depends on step %q, which is %s; run it first", d, s))
			}
		}
	}
	if st.Blocked != "" {
		return sr, stepErr(st.ID, fmt.Errorf("%w: %s; re-plan once it is resolved", ErrStepBlocked, st.Blocked))
	}
	if r.dry {
		return e.dryStep(ctx, r, st)
	}
	r.proof = r.hub.proof(r) // before arm forgets what woke the lane
	r.hub.arm(ctx, r, stepInterests(st))
	if err := e.pickUp(ctx, r, st, rec); err != nil {
		return sr, err
	}
	justActed := false
	if rec.Phase == phaseAct {
		acted, err := e.actUnit(ctx, r, st, rec, &sr)
		if err != nil || !acted {
			return sr, err
		}
		justActed = true
	}
	return e.verifyUnit(ctx, r, st, rec, sr, justActed)
}

func interrupted(st *plan.Step, err error) error {
	return stepErr(st.ID, fmt.Errorf("interrupted (the journal resumes it): %w", err))
}

// settled answers for a step the journal has done (skipped) or rolled back (refused).
func (e *engine) settled(r *run, st *plan.Step, rec *StepRecord, sr *StepResult) (bool, error) {
	switch rec.Status {
	case StatusDone:
		sr.Status, sr.Skipped, sr.Message, sr.Changes = StatusDone, true, rec.Message, rec.Changes
		if !r.picked[st.ID] {
			r.picked[st.ID] = true
			e.emit(e.stepEvent(r, st, EventStepSkipped, "done in an earlier run"))
		}
		return true, nil
	case StatusRolledBack:
		return true, stepErr(st.ID, fmt.Errorf("%w at %s; the steps after it assumed it: re-plan from a fresh snapshot", ErrRolledBack, rec.Finished.UTC().Format(time.RFC3339)))
	}
	return false, nil
}

// pickUp starts a step the lane has not picked up in this run: its preconditions on a first start,
// its timers, StepStarted.
func (e *engine) pickUp(ctx context.Context, r *run, st *plan.Step, rec *StepRecord) error {
	if r.picked[st.ID] {
		return nil
	}
	r.picked[st.ID] = true
	now := e.clock.Now()
	// A Step call that continues an in-progress step keeps its timers; an Apply that picks a step up
	// (fresh or resumed) starts them again.
	continuing := r.stepMode && rec.Status == StatusInProgress
	if rec.Phase == "" {
		ok, reasons, err := e.checkAll(ctx, r, st, st.Preconditions)
		if err != nil {
			return e.fail(ctx, r, st, rec, err)
		}
		if !ok {
			return e.fail(ctx, r, st, rec, fmt.Errorf("%w (nothing was done): %s", ErrPrecondition, strings.Join(reasons, "; ")))
		}
		rec.Phase = phaseAct
		rec.Started = now
	}
	if continuing {
		return nil
	}
	if rec.Phase == phaseVerify {
		rec.VerifyStarted = now
	}
	rec.Status, rec.AttemptStarted, rec.Message = StatusInProgress, now, ""
	// Record that the action began, so a resumed run does not re-check preconditions the partial
	// action may have changed (actions that need more record their own intent before they act; a step
	// without preconditions is simply run again), and so the next Step call continues the same attempt.
	if (writes(st) && len(st.Preconditions) > 0) || r.stepMode {
		if err := e.save(ctx, r); err != nil {
			return stepErr(st.ID, err)
		}
	}
	e.emit(e.stepEvent(r, st, EventStepStarted, st.Description))
	e.log.Info("step started", "step", st.ID, "kind", st.Kind(), "node", r.node)
	return nil
}

// actUnit runs one unit of the step's action. It reports whether the action finished (the step then
// verifies); otherwise sr says the step is in progress, or the error why it failed.
func (e *engine) actUnit(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, sr *StepResult) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, interrupted(st, err)
	}
	if !journalOf(st).recordsItself {
		if err := e.recordBefore(ctx, r, st); err != nil {
			return false, stepErr(st.ID, err)
		}
	}
	out, err := e.act(ctx, r, st, rec)
	r.doneActing()
	if err != nil {
		return false, e.fail(ctx, r, st, rec, err)
	}
	sr.Done, sr.Of, sr.Held = out.done, out.of, out.held
	sr.Objects = objectsOf(st, out)
	if !out.finished {
		sr.Status, sr.Message, sr.RetryAfter = StatusInProgress, out.progress, out.retryAfter
		if out.progress != "" && out.progress != rec.Message {
			rec.Message = out.progress
			ev := e.stepEvent(r, st, EventStepProgress, out.progress)
			ev.Done, ev.Of = out.done, out.of // Node stays empty: "node n/N drained" progress names it
			e.emit(ev)
		}
		return false, nil
	}
	rec.Changes = append(rec.Changes, out.changes...)
	rec.Phase, rec.VerifyStarted = phaseVerify, e.clock.Now()
	return true, nil
}

// verifyUnit checks the step's postconditions and finishes the step once they hold.
func (e *engine) verifyUnit(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, sr StepResult, justActed bool) (StepResult, error) {
	ok, reasons, err := e.checkAll(ctx, r, st, st.Postconditions)
	if err != nil {
		return sr, e.fail(ctx, r, st, rec, err)
	}
	if !ok {
		if justActed { // the action is done: record it before waiting for the verification
			if j := journalOf(st); !r.stepMode && j.later {
				err = e.later(ctx, r, st, j) // a resumed run repeats the action, which finds its work done
			} else {
				err = e.save(ctx, r)
			}
			if err != nil {
				return sr, stepErr(st.ID, err)
			}
		}
		if e.clock.Now().Sub(rec.VerifyStarted) > e.opts.VerifyTimeout {
			return sr, e.fail(ctx, r, st, rec, fmt.Errorf("%w after %s: %s", ErrVerification, e.opts.VerifyTimeout, strings.Join(reasons, "; ")))
		}
		r.waitUntil(rec.VerifyStarted.Add(e.opts.VerifyTimeout + time.Millisecond))
		sr.Status, sr.Message = StatusInProgress, "verifying: "+strings.Join(reasons, "; ")
		if sr.Message != rec.Message {
			rec.Message = sr.Message
			e.emit(e.stepEvent(r, st, EventStepProgress, sr.Message))
		}
		return sr, nil
	}
	return e.finish(ctx, r, st, rec, sr)
}

// finish records a step done and reports it.
func (e *engine) finish(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, sr StepResult) (StepResult, error) {
	rec.Status, rec.Finished, rec.Message = StatusDone, e.clock.Now(), summary(rec.Changes)
	sr.Status, sr.Message, sr.Changes = StatusDone, rec.Message, rec.Changes
	rec.compact()
	var err error
	if j := journalOf(st); !r.stepMode && j.later {
		err = e.later(ctx, r, st, j)
	} else {
		err = e.save(ctx, r)
	}
	if err != nil {
		return sr, stepErr(st.ID, err)
	}
	ev := e.stepEvent(r, st, EventStepFinished, st.Description)
	ev.Changes = sr.Changes
	e.emit(ev)
	e.nodeProgress(r, st)
	e.log.Info("step finished", "step", st.ID, "kind", st.Kind(), "changes", len(rec.Changes))
	return sr, nil
}

// writes reports whether the step's action changes the cluster (or the backup store).
func writes(st *plan.Step) bool { return !st.Kind().ReadOnly() }

// nodeProgress reports node counters for steps that count nodes ("node 37/120 drained").
func (e *engine) nodeProgress(r *run, st *plan.Step) {
	n, ok := r.counted[st.ID]
	if !ok {
		return
	}
	a := actions[st.Kind()]
	node := st.Node()
	ev := e.stepEvent(r, st, EventStepProgress, fmt.Sprintf("node %d/%d %s (%s)", n, r.totals[a.counts], a.counts, node))
	ev.Done, ev.Of, ev.Node = n, r.totals[a.counts], node
	e.emit(ev)
}

func summary(changes []string) string {
	switch len(changes) {
	case 0:
		return "done"
	case 1:
		return changes[0]
	}
	return fmt.Sprintf("%s (and %d more changes)", changes[0], len(changes)-1)
}

// fail records a failed step. A cancelled context is not a failure of the step: the journal keeps it
// in progress, and the next run resumes it.
func (e *engine) fail(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, err error) error {
	if ctx.Err() != nil {
		return interrupted(st, ctx.Err())
	}
	rec.Status, rec.Message = StatusFailed, err.Error()
	if serr := e.save(ctx, r); serr != nil {
		e.log.Error("could not record the failure in the journal", "step", st.ID, "error", serr)
	}
	ev := e.stepEvent(r, st, EventStepFailed, err.Error())
	ev.Err, ev.Node = err, r.node
	e.emit(ev)
	e.log.Error("step failed", "step", st.ID, "kind", st.Kind(), "error", err)
	return stepErr(st.ID, err)
}
