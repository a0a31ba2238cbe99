package execute

import (
	"context"
	"fmt"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var healthGateAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.healthGate(ctx, r, st, rec, st.HealthGate)
	},
	journal: journalLooks,
	backup:  usesNoBackup,
}

func (e *engine) healthGate(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, g *plan.HealthGate) (outcome, error) {
	probe, ok := e.opts.Probes[g.Probe]
	if !ok {
		return outcome{}, fmt.Errorf("no probe named %q is registered; add it to Options.Probes (it answers for %q)", g.Probe, g.Scope)
	}
	if r.dry {
		return finished(fmt.Sprintf("would wait %ds, then ask probe %q about %s", g.SettleSeconds, g.Probe, g.Scope)), nil
	}
	base := rec.AttemptStarted
	for _, d := range st.DependsOn {
		if dr := r.record(d); dr != nil && dr.Finished.After(base) {
			base = dr.Finished
		}
	}
	if until := base.Add(time.Duration(g.SettleSeconds) * time.Second); e.clock.Now().Before(until) {
		left := until.Sub(e.clock.Now())
		return outcome{progress: fmt.Sprintf("settling %s before asking probe %q about %s", left.Round(time.Second), g.Probe, g.Scope), retryAfter: left}, nil
	}
	var healthy bool
	var reason string
	delay := e.opts.RetryBackoff
	for attempt := 1; ; attempt++ {
		var err error
		healthy, reason, err = probe(ctx, g.Scope)
		if err == nil {
			break
		}
		if ctx.Err() != nil || attempt >= e.opts.MaxAttempts {
			return outcome{}, fmt.Errorf("probe %q about %s failed (attempt %d): %w", g.Probe, g.Scope, attempt, err)
		}
		if err := sleep(ctx, e.clock, delay); err != nil {
			return outcome{}, err
		}
		delay = min(delay*2, maxRetryBackoff)
	}
	if healthy {
		return finished(fmt.Sprintf("probe %q says %s is healthy", g.Probe, g.Scope)), nil
	}
	prev := r.rollbackCandidate(st)
	offer := "no earlier step has a rollback; fix the cause and run Apply again to ask the probe again"
	ev := e.stepEvent(r, st, EventGateUnhealthy, fmt.Sprintf("probe %q says %s is unhealthy: %s", g.Probe, g.Scope, reason))
	if prev != nil {
		ev.Rollback = prev.ID
		offer = fmt.Sprintf("roll back step %q with Executor.Rollback (%s), or fix the cause and run Apply again to ask the probe again", prev.ID, prev.Rollback.Description)
	}
	e.emit(ev)
	return outcome{}, fmt.Errorf("%w: probe %q says %s is unhealthy: %s; %s", ErrUnhealthy, g.Probe, g.Scope, reason, offer)
}

// rollbackCandidate is the nearest step before st, following DependsOn, that is done and has a rollback.
func (r *run) rollbackCandidate(st *plan.Step) *plan.Step {
	seen := map[string]bool{}
	queue := append([]string(nil), st.DependsOn...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		s, ok := r.p.Step(id)
		if !ok {
			continue
		}
		if s.Rollback != nil && r.status(id) == StatusDone {
			return s
		}
		queue = append(queue, s.DependsOn...)
	}
	return nil
}
