package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// A wave's node units run at the same time (plan.WaveUnit): every unit on a lane of its own, up to
// Options.MaxNodesAtOnce of them at once (the whole wave by default), each unit's steps one after
// another. The run passes over the wave in rounds: each round runs one unit of the current step of
// every unit that is ready (just started, its step just finished, an event it waits for came, or its
// wait is over), all of them at once, then sleeps until the next unit is ready. The first round runs
// the first step of every unit started together (the cordons), so no unit's drain moves pods onto a
// node of the wave that is about to be cordoned. PodDisruptionBudgets hold across the wave as a
// whole: the API server refuses an eviction (429) that its budget does not allow, whichever unit
// asks, and that unit waits for the budget to allow one again.
//
// When a unit fails, no unit starts any more and no unit runs another round: the units of that round
// end their unit of work, so each node stands at a step the journal records (in progress, with its
// intent, or done), never between an action and its record. The run then fails with a *WaveError
// saying where each node stands (Result.Nodes too); Apply resumes exactly those units, and
// RollbackTo the wave's first step undoes what each node did.

// unitState is where a wave unit stands in the run.
type unitState int

const (
	unitPending unitState = iota
	unitRunning
	unitDone
	unitFailed
)

// waveUnit is one node's unit of a wave.
type waveUnit struct {
	node  string
	steps []*plan.Step
	// next is the index of the unit's current step; results its steps' last results.
	next    int
	results map[string]StepResult
	lane    *run
	state   unitState
	wakeAt  time.Time
	// since is when its current step began in this run.
	since time.Time
}

// wave is one wave of a plan, as a run drives it.
type wave struct {
	id         string
	start, end int // its steps in the plan, [start, end)
	units      []*waveUnit
	limit      int
	// err is the first failure; stopped is set once a unit failed.
	err     error
	stopped bool
	// number and of are the wave's position among the plan's waves; settle the health gate's wait
	// after it.
	number, of int
	settle     time.Duration
	// took are the durations of the steps finished in this run, by kind, for the ETA.
	mu      sync.Mutex
	took    map[plan.Kind][]time.Duration
	lastMsg string
}

// waveEnd returns the end of the wave that starts at step i: the first step after it of another
// wave or of none.
func waveEnd(p *plan.Plan, i int) int {
	id := p.Steps[i].Wave.ID
	j := i
	for j < len(p.Steps) && p.Steps[j].Wave != nil && p.Steps[j].Wave.ID == id {
		j++
	}
	return j
}

// newWave builds the wave of steps [start, end), up to step last: its units in the order their
// first steps come, each started, done or pending as the journal has it.
func (e *engine) newWave(r *run, start, end, last int) *wave {
	p := r.p
	w := &wave{id: p.Steps[start].Wave.ID, start: start, end: end, took: map[plan.Kind][]time.Duration{}}
	byNode := map[string]*waveUnit{}
	for i := start; i < end && i <= last; i++ {
		st := &p.Steps[i]
		u, ok := byNode[st.Wave.Node]
		if !ok {
			u = &waveUnit{node: st.Wave.Node, lane: r.lane(st.Wave.Node), results: map[string]StepResult{}}
			byNode[u.node] = u
			w.units = append(w.units, u)
		}
		u.steps = append(u.steps, st)
	}
	for _, u := range w.units {
		for u.next < len(u.steps) && r.status(u.steps[u.next].ID) == StatusDone {
			u.next++
		}
		switch {
		case u.next == len(u.steps):
			u.next, u.state = 0, unitRunning // passes over its steps, reporting them skipped
		case u.next > 0 || r.status(u.steps[u.next].ID) != StatusPending:
			u.state = unitRunning
		}
		u.next = 0
	}
	w.limit = len(w.units)
	if m := e.opts.MaxNodesAtOnce; m > 0 && m < w.limit {
		w.limit = m
	}
	seen := map[string]bool{}
	for i := range p.Steps {
		if wu := p.Steps[i].Wave; wu != nil && !seen[wu.ID] {
			seen[wu.ID] = true
			if wu.ID == w.id {
				w.number = len(seen)
			}
		}
	}
	w.of = len(seen)
	if end < len(p.Steps) && p.Steps[end].HealthGate != nil {
		w.settle = time.Duration(p.Steps[end].HealthGate.SettleSeconds) * time.Second
	}
	return w
}

// runWave drives the wave of steps [start, end) to its end (up to step last), and returns its steps'
// results in plan order; when it stopped, where each node stands and a *WaveError.
func (e *engine) runWave(ctx context.Context, r *run, start, end, last int) ([]StepResult, []NodeState, error) {
	w := e.newWave(r, start, end, last)
	e.driveWave(ctx, r, w)
	var srs []StepResult
	for i := start; i < end && i <= last; i++ {
		for _, u := range w.units {
			if sr, ok := u.results[r.p.Steps[i].ID]; ok {
				srs = append(srs, sr)
			}
		}
	}
	if w.err == nil {
		return srs, nil, nil
	}
	if ferr := e.flush(ctx, r); ferr != nil {
		e.log.Warn("could not record where the wave's nodes stand; the next run repeats their last steps", "wave", w.id, "error", ferr)
	}
	nodes := w.nodeStates(r)
	return srs, nodes, &WaveError{Wave: w.id, Nodes: nodes, Err: w.err}
}

// driveWave runs rounds until every unit is done or the wave stopped.
func (e *engine) driveWave(ctx context.Context, r *run, w *wave) {
	for !w.stopped {
		if err := r.lease.renew(ctx); err != nil {
			w.fail(stepErr(w.units[0].steps[0].ID, err))
			return
		}
		now := e.clock.Now()
		w.startUnits(now)
		r.hub.sync()
		ready := w.ready(r, now)
		if len(ready) == 0 {
			if !w.running() {
				return
			}
			if err := e.sleepWave(ctx, r, w); err != nil {
				w.fail(stepErr(w.units[0].steps[0].ID, fmt.Errorf("interrupted (the journal resumes it): %w", err)))
				return
			}
			continue
		}
		e.round(ctx, w, ready)
		e.waveProgress(r, w)
	}
}

// startUnits starts pending units while fewer than the wave's limit run.
func (w *wave) startUnits(now time.Time) {
	if w.stopped {
		return
	}
	running := 0
	for _, u := range w.units {
		if u.state == unitRunning {
			running++
			if u.since.IsZero() {
				u.since = now
			}
		}
	}
	for _, u := range w.units {
		if running >= w.limit {
			return
		}
		if u.state == unitPending {
			u.state, u.wakeAt, u.since = unitRunning, now, now
			running++
		}
	}
}

// ready returns the running units whose wait is over or whom an event woke.
func (w *wave) ready(r *run, now time.Time) []*waveUnit {
	var out []*waveUnit
	for _, u := range w.units {
		if u.state == unitRunning && (!now.Before(u.wakeAt) || r.hub.woken(u.lane)) {
			out = append(out, u)
		}
	}
	return out
}

func (w *wave) running() bool {
	for _, u := range w.units {
		if u.state == unitRunning {
			return true
		}
	}
	return false
}

// sleepWave waits until the next unit's wait is over or an event wakes one.
func (e *engine) sleepWave(ctx context.Context, r *run, w *wave) error {
	var next time.Time
	for _, u := range w.units {
		if u.state == unitRunning && (next.IsZero() || u.wakeAt.Before(next)) {
			next = u.wakeAt
		}
	}
	d := next.Sub(e.clock.Now())
	if d <= 0 {
		return nil
	}
	return e.sleepOrWake(ctx, r, min(d, e.opts.LeaseDuration/3))
}

// round runs one unit of work of every ready unit, all at once.
func (e *engine) round(ctx context.Context, w *wave, ready []*waveUnit) {
	if len(ready) == 1 {
		e.pass(ctx, w, ready[0])
		return
	}
	var wg sync.WaitGroup
	for _, u := range ready {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.pass(ctx, w, u)
		}()
	}
	wg.Wait()
}

// pass runs one unit of the unit's current step (passing over steps done in an earlier run), and
// says when the unit is ready again.
func (e *engine) pass(ctx context.Context, w *wave, u *waveUnit) {
	r := u.lane
	for {
		st := u.steps[u.next]
		sr, err := e.unit(ctx, r, st, true)
		u.results[st.ID] = sr
		if err != nil {
			r.hub.forget(r)
			u.state = unitFailed
			w.fail(err)
			return
		}
		if sr.Status != StatusDone {
			u.wakeAt = e.wakeAt(r, sr)
			return
		}
		r.hub.forget(r)
		now := e.clock.Now()
		if !sr.Skipped {
			w.took1(st.Kind(), now.Sub(u.since))
		}
		u.next++
		u.since = now
		if u.next == len(u.steps) {
			u.state = unitDone
			return
		}
		if !sr.Skipped {
			u.wakeAt = now
			return
		}
	}
}

// fail stops the wave at its first failure.
func (w *wave) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	w.stopped = true
}

func (w *wave) took1(k plan.Kind, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.took[k] = append(w.took[k], d)
}

// NodeState is where one node of a wave stands when the run stopped in the wave.
type NodeState struct {
	// Wave and Node name the unit.
	Wave, Node string
	// Status is StatusDone (every step of the node is done), StatusFailed, StatusInProgress (a step
	// started and did not finish) or StatusPending (the node's unit had not started).
	Status StepStatus
	// Step is the step the node stands at: its failed or in-progress step, or its first step; ""
	// when it is done. Message is that step's last progress or error.
	Step, Message string
}

// WaveError is the error of a run that stopped in a wave: the first failure, and where every node of
// the wave stands. Unwrap gives the failure (a *StepError).
type WaveError struct {
	Wave  string
	Nodes []NodeState
	Err   error
}

// Error names the failure, then each node's state.
func (e *WaveError) Error() string {
	var parts []string
	for _, n := range e.Nodes {
		s := fmt.Sprintf("%s %s", n.Node, n.Status)
		if n.Step != "" && n.Status != StatusPending {
			s += " at " + n.Step
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%v; wave %s stopped, its nodes: %s (the journal resumes each)", e.Err, e.Wave, strings.Join(parts, ", "))
}

// Unwrap returns the failure.
func (e *WaveError) Unwrap() error { return e.Err }

// nodeStates says where each unit stands, by the journal.
func (w *wave) nodeStates(r *run) []NodeState {
	out := make([]NodeState, 0, len(w.units))
	for _, u := range w.units {
		ns := NodeState{Wave: w.id, Node: u.node, Status: StatusDone}
		for _, st := range u.steps {
			s := r.status(st.ID)
			if s == StatusDone {
				continue
			}
			ns.Step = st.ID
			if rec := r.record(st.ID); rec != nil {
				ns.Message = rec.Message
			}
			ns.Status = s
			if s == StatusPending && st != u.steps[0] {
				ns.Status = StatusInProgress // between two steps
			}
			break
		}
		out = append(out, ns)
	}
	return out
}

// stepWave is a Step call on a step of a wave: one round over every running unit of the wave (see
// Executor.Step).
func (e *engine) stepWave(ctx context.Context, r *run, st *plan.Step) (StepResult, error) {
	start := r.index[st.ID]
	for start > 0 && r.p.Steps[start-1].Wave != nil && r.p.Steps[start-1].Wave.ID == st.Wave.ID {
		start--
	}
	w := e.newWave(r, start, waveEnd(r.p, start), len(r.p.Steps)-1)
	var mine *waveUnit
	for _, u := range w.units {
		if u.node == st.Wave.Node {
			mine = u
		}
		for u.next < len(u.steps)-1 && r.status(u.steps[u.next].ID) == StatusDone {
			u.next++
		}
	}
	if mine == nil || r.status(st.ID) == StatusDone || mine.steps[mine.next] != st {
		lane := r.lane(st.Wave.Node)
		sr, err := e.unit(ctx, lane, st, true)
		r.hub.forget(lane)
		return sr, err
	}
	now := e.clock.Now()
	w.startUnits(now)
	var all []*waveUnit
	for _, u := range w.units {
		if u.state == unitRunning && r.status(u.steps[len(u.steps)-1].ID) != StatusDone {
			all = append(all, u)
		}
	}
	e.round(ctx, w, all)
	sr := mine.results[st.ID]
	sr.Units = w.nodeStates(r)
	var next time.Time
	for _, u := range all {
		if u.state == unitRunning && (next.IsZero() || u.wakeAt.Before(next)) {
			next = u.wakeAt
		}
	}
	if sr.Status == StatusInProgress && !next.IsZero() {
		sr.RetryAfter = max(0, next.Sub(e.clock.Now()))
	}
	if w.err != nil && !errors.Is(w.err, context.Canceled) {
		if _, ok := mine.results[st.ID]; ok && mine.state == unitFailed {
			return sr, w.err
		}
	}
	return sr, nil
}
