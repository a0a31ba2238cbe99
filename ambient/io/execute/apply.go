package execute

import (
	"context"
	"fmt"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// apply is Executor.Apply.
func (e *engine) apply(ctx context.Context, p *plan.Plan, ao ApplyOptions) (*Result, error) {
	if err := admit(p, e.opts.Gates, ao.Until, false); err != nil {
		return nil, err
	}
	if err := e.preflight(ctx, p); err != nil {
		return nil, err
	}
	r, err := e.begin(ctx, p, ao.Resume)
	if err != nil {
		return nil, err
	}
	e.watch(ctx, r)
	defer r.end(ctx)
	res := &Result{PlanHash: r.hash, Resumed: !r.fresh, DryRun: r.dry}
	e.emitFirst(r)
	// A run that is stopped records the completions the journal does not hold yet, so the next run
	// repeats fewer steps (one prompt attempt; the next run repeats them safely otherwise).
	stopped := func(err error) (*Result, error) {
		if ctx.Err() != nil {
			if ferr := e.flush(ctx, r); ferr != nil {
				e.log.Warn("could not record the finished steps while stopping; the next run repeats them", "error", ferr)
			}
		}
		return res, err
	}
	last := len(p.Steps) - 1
	if ao.Until != "" {
		last = r.index[ao.Until]
	}
	for i := 0; i <= last; {
		st := &p.Steps[i]
		if err := r.lease.renew(ctx); err != nil {
			return stopped(stepErr(st.ID, err))
		}
		if st.Wave != nil && !r.dry {
			end := waveEnd(p, i)
			srs, nodes, err := e.runWave(ctx, r, i, end, last)
			res.Steps = append(res.Steps, srs...)
			if err != nil {
				res.Nodes = nodes
				return stopped(err)
			}
			i = end
			continue
		}
		sr, err := e.runToEnd(ctx, r, st, true)
		res.Steps = append(res.Steps, sr)
		if err != nil {
			return stopped(err)
		}
		i++
	}
	if err := e.flush(ctx, r); err != nil {
		return res, err
	}
	res.Done = true
	done := fmt.Sprintf("plan %q applied", p.Metadata.Name)
	if e.opts.DryRun {
		done = fmt.Sprintf("plan %q dry-run to its end: nothing was changed", p.Metadata.Name)
	}
	e.emit(Event{Type: EventRunFinished, Total: len(p.Steps), Message: done})
	return res, nil
}

// emitFirst reports the start of an Apply: a fresh run, or a resumed one with the steps done.
func (e *engine) emitFirst(r *run) {
	p := r.p
	first := Event{Type: EventRunStarted, Total: len(p.Steps), Message: fmt.Sprintf("applying plan %q (%d steps)", p.Metadata.Name, len(p.Steps))}
	if !r.fresh {
		done := 0
		for _, s := range p.Steps {
			if r.status(s.ID) == StatusDone {
				done++
			}
		}
		first.Type, first.Done, first.Of = EventRunResumed, done, len(p.Steps)
		first.Message = fmt.Sprintf("resuming plan %q from its journal: %d of %d steps done", p.Metadata.Name, done, len(p.Steps))
	}
	e.emit(first)
	e.log.Info(first.Message, "plan", r.hash, "dryRun", r.dry)
}

// runToEnd repeats units of a step on the lane until it is done or fails, waiting between units for
// what the step waits on (or its poll interval) and renewing the Lease.
func (e *engine) runToEnd(ctx context.Context, r *run, st *plan.Step, checkDeps bool) (StepResult, error) {
	for {
		sr, err := e.unit(ctx, r, st, checkDeps)
		if err != nil || sr.Status != StatusInProgress {
			r.hub.forget(r)
			return sr, err
		}
		if err := e.waitLane(ctx, r, e.wakeAt(r, sr)); err != nil {
			r.hub.forget(r)
			return sr, stepErr(st.ID, err)
		}
	}
}

// wakeAt is when a lane whose step is in progress looks again at the latest: once its wait is
// registered with the watches, watchResync from now (an event it waits for wakes it sooner), else
// after its unit's RetryAfter or the poll interval; never later than a deadline its step named.
func (e *engine) wakeAt(r *run, sr StepResult) time.Time {
	now := e.clock.Now()
	d := sr.RetryAfter
	if d <= 0 {
		d = e.opts.PollInterval
	}
	if w := r.waiting; r.hub.settle(r, w) {
		d = max(sr.RetryAfter, watchResync)
	}
	at := now.Add(d)
	if w := r.waiting; w != nil && !w.deadline.IsZero() && w.deadline.Before(at) {
		at = w.deadline
	}
	return at
}

// waitLane sleeps on the Clock until at, or until an event the lane waits for, renewing the Lease at
// least every third of its duration.
func (e *engine) waitLane(ctx context.Context, r *run, at time.Time) error {
	for {
		if err := r.lease.renew(ctx); err != nil {
			return err
		}
		r.hub.sync()
		if r.hub.woken(r) {
			return nil
		}
		d := at.Sub(e.clock.Now())
		if d <= 0 {
			return nil
		}
		if err := e.sleepOrWake(ctx, r, min(d, e.opts.LeaseDuration/3)); err != nil {
			return err
		}
	}
}

// sleepOrWake waits d on the Clock, or until the hub wakes a lane, or until ctx is done.
func (e *engine) sleepOrWake(ctx context.Context, r *run, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err // a done context wins over a timer that fired at the same time
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-e.clock.After(d):
	case <-r.hub.wakeChan():
	}
	return nil
}

// stepOne is Executor.Step.
func (e *engine) stepOne(ctx context.Context, p *plan.Plan, stepID string) (StepResult, error) {
	if err := admit(p, e.opts.Gates, "", true); err != nil {
		return StepResult{StepID: stepID}, err
	}
	st, ok := p.Step(stepID)
	if !ok {
		return StepResult{StepID: stepID}, fmt.Errorf("plan %q has no step %q", p.Metadata.Name, stepID)
	}
	r, err := e.begin(ctx, p, false)
	if err != nil {
		return StepResult{StepID: stepID}, err
	}
	defer r.end(ctx)
	r.stepMode = true
	if st.Wave != nil && !r.dry {
		return e.stepWave(ctx, r, st)
	}
	sr, err := e.unit(ctx, r, st, true)
	r.hub.forget(r)
	return sr, err
}

// rollback is Executor.Rollback.
func (e *engine) rollback(ctx context.Context, p *plan.Plan, stepID string) (StepResult, error) {
	if err := admit(p, e.opts.Gates, "", true); err != nil {
		return StepResult{StepID: stepID}, err
	}
	st, ok := p.Step(stepID)
	if !ok {
		return StepResult{StepID: stepID}, fmt.Errorf("plan %q has no step %q", p.Metadata.Name, stepID)
	}
	if st.Rollback == nil {
		return StepResult{StepID: stepID}, fmt.Errorf("step %q has no rollback; undo it by hand (see its notes) and re-plan", stepID)
	}
	r, err := e.begin(ctx, p, true)
	if err != nil {
		return StepResult{StepID: stepID}, err
	}
	e.watch(ctx, r)
	defer r.end(ctx)
	switch r.status(stepID) {
	case StatusPending:
		return StepResult{StepID: stepID}, fmt.Errorf("step %q has not run; there is nothing to roll back", stepID)
	case StatusRolledBack:
		return StepResult{StepID: stepID, Status: StatusDone, Skipped: true, Message: "already rolled back"}, nil
	}
	rb := *st.Rollback
	r.index[rb.ID] = r.index[stepID]
	sr, err := e.runToEnd(ctx, r, &rb, false)
	if err != nil {
		return sr, err
	}
	rec := r.own(stepID)
	rec.Status = StatusRolledBack
	rec.Message = "rolled back by " + rb.ID
	rec.Finished = e.clock.Now()
	if err := e.save(ctx, r); err != nil {
		return sr, stepErr(stepID, err)
	}
	e.emit(e.stepEvent(r, st, EventRolledBack, fmt.Sprintf("step %s rolled back: %s", stepID, rb.Description)))
	return sr, nil
}
