package execute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/plan"
)

// Executor applies plans to one cluster. It is safe to reuse across runs, not to share between
// concurrent runs (the Lease keeps concurrent runs apart across processes).
type Executor struct {
	c       client.Client
	opts    Options
	helm    HelmClient
	journal Journal
	backups BackupStore
	clock   Clock
	log     *slog.Logger
}

// New returns an executor writing through c. The client's scheme must know client-go's built-in
// kinds (observe.Scheme does); objects of other kinds are handled as unstructured.
func New(c client.Client, opts Options) (*Executor, error) {
	if c == nil {
		return nil, errors.New("execute: client is nil; pass a controller-runtime client for the cluster")
	}
	if err := opts.defaults(c); err != nil {
		return nil, err
	}
	return &Executor{c: c, opts: opts, helm: opts.Helm, journal: opts.Journal, backups: opts.BackupStore,
		clock: opts.Clock, log: opts.Logger}, nil
}

// run is the state of one Apply, Step or Rollback call.
type run struct {
	p      *plan.Plan
	hash   string
	rec    *Record
	lease  *lease
	fresh  bool
	dry    bool
	picked map[string]bool
	// stepMode is true for Step calls: one unit per call, so an in-progress step's timers persist in
	// the journal between calls.
	stepMode bool
	// backoff counts consecutive PDB-blocked drain passes per step.
	backoff map[string]int
	// reported remembers transient sandbox failures already reported.
	reported map[string]bool
	index    map[string]int
	// counted gives node counters for progress ("node 37/120 drained"): per step, its position among
	// the steps that count the same thing; totals has their number.
	counted map[string]int
	totals  map[string]int
	// gone are the nodes found removed during this run; their steps are skipped.
	gone map[string]bool
	// unrecorded are the steps finished in this run whose completion the journal does not hold yet
	// (see journalPolicy); dirty says the record has changes the journal does not hold.
	unrecorded []unrecordedStep
	dirty      bool
	// scheduled are the nodes this run cordoned or uncordoned (or found so) itself.
	scheduled map[string]bool
	// justSaw is what the current unit's action read or was answered, for its own postconditions.
	justSaw unitView
	// ambientNS caches the ambient namespaces for drains (see ambientNamespacesFor).
	ambientNS   map[string]bool
	ambientNSAt time.Time
	// nodePods is what the last pass of a drain that finished in the current unit listed on its
	// node; lastPods the same from the previous unit, for the pod deletion that follows a drain in a
	// node's steps (see podsFromDrain). Every unit moves the first to the second.
	nodePods, lastPods podsView
}

// podsView is a LIST of every pod on a node, made at a moment of the run's Clock.
type podsView struct {
	node string
	at   time.Time
	pods []corev1.Pod
}

// unitView is what a unit's action saw of the cluster just now: the node its cordon or uncordon was
// answered with, the node its drain found empty. Its own postconditions, checked in the same unit,
// read them instead of asking again; the next unit forgets them.
type unitView struct {
	step    string
	node    *corev1.Node
	drained string // node
	ambient bool   // drained of ambient pods only
}

// saw remembers the node an action of st was answered with.
func (r *run) saw(st *plan.Step, n *corev1.Node) {
	r.justSaw.step, r.justSaw.node = st.ID, n.DeepCopy()
}

// seen returns the node st's action of this unit saw.
func (r *run) seen(st *plan.Step, node string) (*corev1.Node, bool) {
	if r.justSaw.step != st.ID || r.justSaw.node == nil || r.justSaw.node.Name != node {
		return nil, false
	}
	return r.justSaw.node, true
}

func newRun(p *plan.Plan, hash string, dry bool) *run {
	r := &run{p: p, hash: hash, dry: dry, picked: map[string]bool{}, backoff: map[string]int{}, reported: map[string]bool{},
		index: map[string]int{}, counted: map[string]int{}, totals: map[string]int{}, gone: map[string]bool{}, scheduled: map[string]bool{}}
	for i := range p.Steps {
		st := &p.Steps[i]
		r.index[st.ID] = i
		if a, ok := actions[st.Kind()]; ok && a.counts != "" && st.Node() != "" {
			r.totals[a.counts]++
			r.counted[st.ID] = r.totals[a.counts]
		}
	}
	return r
}

// admit checks what can be checked without the cluster: the plan's structure, its findings and its
// blocked steps up to until ("" = all).
func admit(p *plan.Plan, gates plan.Gates, until string, blockedOK bool) error {
	if p == nil {
		return fmt.Errorf("%w: plan is nil", plan.ErrInvalidPlan)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("plan %q cannot be applied (nothing was changed); fix it or re-plan: %w", p.Metadata.Name, err)
	}
	if until != "" {
		if _, ok := p.Step(until); !ok {
			return fmt.Errorf("ApplyOptions.Until names step %q, which the plan does not have", until)
		}
	}
	if missing := plan.NeedsGates(p, gates); len(missing) > 0 {
		return fmt.Errorf("%w: plan %q re-checks the mesh at run time with %s, which execute.Options.Gates lacks; pass ambient.Gates() (nothing was changed)",
			ErrNoGate, p.Metadata.Name, strings.Join(missing, " and "))
	}
	if stop := plan.Stopping(p.Findings); len(stop) > 0 {
		var what []string
		for _, f := range stop {
			what = append(what, f.String())
		}
		return fmt.Errorf("%w: plan %q has %s that stop it (nothing was changed): %s; fix them and re-plan, or waive waivable codes when planning",
			ErrStepBlocked, p.Metadata.Name, plural(len(stop), "finding", "findings"), strings.Join(what, "; "))
	}
	if blockedOK {
		return nil
	}
	for i, s := range p.Steps {
		if s.Blocked != "" {
			fix := "re-plan once it is resolved"
			if i > 0 {
				fix += fmt.Sprintf(", or apply up to the step before it (ApplyOptions.Until=%q)", p.Steps[i-1].ID)
			}
			return fmt.Errorf("%w: step %q is blocked: %s; nothing was changed: %s", ErrStepBlocked, s.ID, s.Blocked, fix)
		}
		if s.ID == until {
			break
		}
	}
	return nil
}

// begin takes the Lease, loads the journal and, for a fresh run, checks the plan is not stale and
// that its charts exist in their sources.
func (e *Executor) begin(ctx context.Context, p *plan.Plan, requireJournal bool) (*run, error) {
	hash, err := PlanHash(p)
	if err != nil {
		return nil, err
	}
	r := newRun(p, hash, e.opts.DryRun)
	if !r.dry {
		if r.lease, err = e.acquire(ctx, hash); err != nil {
			return nil, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			r.lease.release(ctx)
		}
	}()
	var rec *Record
	err = e.retry(ctx, "load journal", func(ctx context.Context) error {
		var err error
		rec, err = e.journal.Load(ctx, hash)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load journal of plan %q: %w", p.Metadata.Name, err)
	}
	if rec == nil {
		if requireJournal {
			return nil, fmt.Errorf("plan %q (%s) has no journal: there is nothing to resume or roll back; run Apply without Resume to start it", p.Metadata.Name, hash)
		}
		if err := e.checkFresh(ctx, p); err != nil {
			return nil, err
		}
		if err := e.checkCharts(ctx, p); err != nil {
			return nil, err
		}
		now := e.clock.Now()
		rec = &Record{PlanHash: hash, PlanName: p.Metadata.Name, Fingerprint: p.Metadata.Fingerprint, Created: now}
		r.fresh = true
	}
	r.rec = rec
	ok = true
	return r, nil
}

func (r *run) end(ctx context.Context) { r.lease.release(ctx) }

// save writes the journal (never in a dry run). It still writes when ctx was cancelled, so a failure
// is recorded.
func (e *Executor) save(ctx context.Context, r *run) error {
	if r.dry {
		return nil
	}
	r.rec.Holder = e.opts.Identity
	r.rec.Updated = e.clock.Now()
	if ctx.Err() != nil { // the run is being stopped: one prompt attempt to record where it stands
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := e.journal.Save(ctx, r.rec); err != nil {
			return fmt.Errorf("save journal of plan %q while stopping: %w", r.p.Metadata.Name, err)
		}
		r.recorded()
		return nil
	}
	err := e.retry(ctx, "save journal", func(ctx context.Context) error { return e.journal.Save(ctx, r.rec) })
	if err != nil {
		return fmt.Errorf("save journal of plan %q: %w", r.p.Metadata.Name, err)
	}
	r.recorded()
	return nil
}

// recorded notes that the journal holds the whole record.
func (r *run) recorded() { r.unrecorded, r.dirty = r.unrecorded[:0], false }

// recordBefore writes the journal before st acts when an unrecorded completion may not stay so
// (mayStayUnrecorded). The executor calls it before an action acts, except for actions that call it
// themselves, right before their first write (journalPolicy.recordsItself).
func (e *Executor) recordBefore(ctx context.Context, r *run, st *plan.Step) error {
	if r.dry || !writes(st) {
		return nil
	}
	for _, done := range r.unrecorded {
		if !done.journal.mayStayUnrecorded(done.st, st) {
			return e.save(ctx, r)
		}
	}
	return nil
}

// flush writes what the journal does not hold yet.
func (e *Executor) flush(ctx context.Context, r *run) error {
	if r.dry || !r.dirty {
		return nil
	}
	return e.save(ctx, r)
}

func (e *Executor) emit(ev Event) {
	if e.opts.Observer == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = e.clock.Now()
	}
	e.opts.Observer(ev)
}

func (e *Executor) stepEvent(r *run, st *plan.Step, t EventType, msg string) Event {
	return Event{Type: t, StepID: st.ID, Kind: st.Kind(), Index: r.index[st.ID] + 1, Total: len(r.p.Steps), Message: msg}
}

// Apply runs the plan to the end (or to ApplyOptions.Until), blocking. See the package documentation
// for the order of checks. On error the Result holds the steps reached; the journal lets a later
// Apply of the same plan resume.
func (e *Executor) Apply(ctx context.Context, p *plan.Plan, ao ApplyOptions) (*Result, error) {
	if err := admit(p, e.opts.Gates, ao.Until, false); err != nil {
		return nil, err
	}
	if err := e.Preflight(ctx, p); err != nil {
		return nil, err
	}
	r, err := e.begin(ctx, p, ao.Resume)
	if err != nil {
		return nil, err
	}
	defer r.end(ctx)
	res := &Result{PlanHash: r.hash, Resumed: !r.fresh, DryRun: r.dry}
	first := Event{Type: EventRunStarted, Total: len(p.Steps), Message: fmt.Sprintf("applying plan %q (%d steps)", p.Metadata.Name, len(p.Steps))}
	if !r.fresh {
		done := 0
		for _, s := range p.Steps {
			if r.rec.status(s.ID) == StatusDone {
				done++
			}
		}
		first.Type, first.Done, first.Of = EventRunResumed, done, len(p.Steps)
		first.Message = fmt.Sprintf("resuming plan %q from its journal: %d of %d steps done", p.Metadata.Name, done, len(p.Steps))
	}
	e.emit(first)
	e.log.Info(first.Message, "plan", r.hash, "dryRun", r.dry)
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
	for i := range p.Steps {
		st := &p.Steps[i]
		if err := r.lease.renew(ctx); err != nil {
			return stopped(stepErr(st.ID, err))
		}
		sr, err := e.runToEnd(ctx, r, st, true)
		res.Steps = append(res.Steps, sr)
		if err != nil {
			return stopped(err)
		}
		if st.ID == ao.Until {
			break
		}
	}
	if err := e.flush(ctx, r); err != nil {
		return res, err
	}
	res.Done = true
	e.emit(Event{Type: EventRunFinished, Total: len(p.Steps), Message: fmt.Sprintf("plan %q applied", p.Metadata.Name)})
	return res, nil
}

// runToEnd repeats units of a step until it is done or fails, renewing the Lease and waiting on the
// Clock between units.
func (e *Executor) runToEnd(ctx context.Context, r *run, st *plan.Step, checkDeps bool) (StepResult, error) {
	for {
		sr, err := e.unit(ctx, r, st, checkDeps)
		if err != nil || sr.Status != StatusInProgress {
			return sr, err
		}
		wait := sr.RetryAfter
		if wait <= 0 {
			wait = e.opts.PollInterval
		}
		if err := e.wait(ctx, r, wait); err != nil {
			return sr, stepErr(st.ID, err)
		}
	}
}

// wait sleeps on the Clock, renewing the Lease at least every third of its duration.
func (e *Executor) wait(ctx context.Context, r *run, d time.Duration) error {
	for {
		if err := r.lease.renew(ctx); err != nil {
			return err
		}
		chunk := min(d, e.opts.LeaseDuration/3)
		if err := sleep(ctx, e.clock, chunk); err != nil {
			return err
		}
		if d -= chunk; d <= 0 {
			return nil
		}
	}
}

// Step runs one bounded unit of one step: the whole action for quick steps, one pass of a drain, one
// poll of a wait or verification. It takes the Lease for the call. A step already done is a no-op.
// Call it again while the result says StatusInProgress.
func (e *Executor) Step(ctx context.Context, p *plan.Plan, stepID string) (StepResult, error) {
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
	return e.unit(ctx, r, st, true)
}

// Rollback runs the Rollback step of a step that ran (done, failed or in progress) to completion, and
// marks the step rolled back in the journal. Later steps assumed it, so Apply then refuses the plan
// with ErrRolledBack: re-plan from a fresh snapshot.
func (e *Executor) Rollback(ctx context.Context, p *plan.Plan, stepID string) (StepResult, error) {
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
	defer r.end(ctx)
	switch r.rec.status(stepID) {
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
	rec := r.rec.step(stepID)
	rec.Status = StatusRolledBack
	rec.Message = "rolled back by " + rb.ID
	rec.Finished = e.clock.Now()
	if err := e.save(ctx, r); err != nil {
		return sr, stepErr(stepID, err)
	}
	e.emit(e.stepEvent(r, st, EventRolledBack, fmt.Sprintf("step %s rolled back: %s", stepID, rb.Description)))
	return sr, nil
}

// unit runs one bounded unit of a step and records the outcome.
func (e *Executor) unit(ctx context.Context, r *run, st *plan.Step, checkDeps bool) (StepResult, error) {
	sr := StepResult{StepID: st.ID, Kind: st.Kind()}
	if err := ctx.Err(); err != nil {
		return sr, stepErr(st.ID, fmt.Errorf("interrupted (the journal resumes it): %w", err))
	}
	r.justSaw = unitView{}
	r.lastPods, r.nodePods = r.nodePods, podsView{}
	rec := r.rec.step(st.ID)
	switch rec.Status {
	case StatusDone:
		sr.Status, sr.Skipped, sr.Message, sr.Changes = StatusDone, true, rec.Message, rec.Changes
		if !r.picked[st.ID] {
			r.picked[st.ID] = true
			e.emit(e.stepEvent(r, st, EventStepSkipped, "done in an earlier run"))
		}
		return sr, nil
	case StatusRolledBack:
		return sr, stepErr(st.ID, fmt.Errorf("%w at %s; the steps after it assumed it: re-plan from a fresh snapshot", ErrRolledBack, rec.Finished.UTC().Format(time.RFC3339)))
	}
	if checkDeps && !r.dry {
		for _, d := range st.DependsOn {
			if s := r.rec.status(d); s != StatusDone {
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
	now := e.clock.Now()
	if !r.picked[st.ID] {
		r.picked[st.ID] = true
		// A Step call that continues an in-progress step keeps its timers; an Apply that picks a step
		// up (fresh or resumed) starts them again.
		continuing := r.stepMode && rec.Status == StatusInProgress
		if rec.Phase == "" {
			ok, reasons, err := e.checkAll(ctx, r, st, st.Preconditions)
			if err != nil {
				return sr, e.fail(ctx, r, st, rec, err)
			}
			if !ok {
				return sr, e.fail(ctx, r, st, rec, fmt.Errorf("%w (nothing was done): %s", ErrPrecondition, strings.Join(reasons, "; ")))
			}
			rec.Phase = phaseAct
			rec.Started = now
		}
		if !continuing {
			if rec.Phase == phaseVerify {
				rec.VerifyStarted = now
			}
			rec.Status, rec.AttemptStarted, rec.Message = StatusInProgress, now, ""
			// Record that the action began, so a resumed run does not re-check preconditions the
			// partial action may have changed (actions that need more record their own intent before
			// they act; a step without preconditions is simply run again), and so the next Step call
			// continues the same attempt.
			if (writes(st) && len(st.Preconditions) > 0) || r.stepMode {
				if err := e.save(ctx, r); err != nil {
					return sr, stepErr(st.ID, err)
				}
			}
			e.emit(e.stepEvent(r, st, EventStepStarted, st.Description))
			e.log.Info("step started", "step", st.ID, "kind", st.Kind())
		}
	}
	justActed := false
	if rec.Phase == phaseAct {
		if err := ctx.Err(); err != nil {
			return sr, stepErr(st.ID, fmt.Errorf("interrupted (the journal resumes it): %w", err))
		}
		if !journalOf(st).recordsItself {
			if err := e.recordBefore(ctx, r, st); err != nil {
				return sr, stepErr(st.ID, err)
			}
		}
		out, err := e.act(ctx, r, st, rec)
		if err != nil {
			return sr, e.fail(ctx, r, st, rec, err)
		}
		sr.Done, sr.Of, sr.Held = out.done, out.of, out.held
		sr.Objects = objectsOf(st, out)
		if !out.finished {
			sr.Status, sr.Message, sr.RetryAfter = StatusInProgress, out.progress, out.retryAfter
			if out.progress != "" && out.progress != rec.Message {
				rec.Message = out.progress
				ev := e.stepEvent(r, st, EventStepProgress, out.progress)
				ev.Done, ev.Of = out.done, out.of
				e.emit(ev)
			}
			return sr, nil
		}
		rec.Changes = append(rec.Changes, out.changes...)
		rec.Phase, rec.VerifyStarted = phaseVerify, e.clock.Now()
		justActed = true
	}
	ok, reasons, err := e.checkAll(ctx, r, st, st.Postconditions)
	if err != nil {
		return sr, e.fail(ctx, r, st, rec, err)
	}
	if !ok {
		if justActed { // the action is done: record it before waiting for the verification
			if !r.stepMode && journalOf(st).later {
				r.dirty = true // a resumed run repeats the action, which finds its work done
			} else if err := e.save(ctx, r); err != nil {
				return sr, stepErr(st.ID, err)
			}
		}
		if e.clock.Now().Sub(rec.VerifyStarted) > e.opts.VerifyTimeout {
			return sr, e.fail(ctx, r, st, rec, fmt.Errorf("%w after %s: %s", ErrVerification, e.opts.VerifyTimeout, strings.Join(reasons, "; ")))
		}
		sr.Status, sr.Message = StatusInProgress, "verifying: "+strings.Join(reasons, "; ")
		if sr.Message != rec.Message {
			rec.Message = sr.Message
			e.emit(e.stepEvent(r, st, EventStepProgress, sr.Message))
		}
		return sr, nil
	}
	rec.Status, rec.Finished, rec.Message = StatusDone, e.clock.Now(), summary(rec.Changes)
	sr.Status, sr.Message, sr.Changes = StatusDone, rec.Message, rec.Changes
	rec.compact()
	if j := journalOf(st); !r.stepMode && j.later {
		r.unrecorded, r.dirty = append(r.unrecorded, unrecordedStep{st: st, journal: j}), true
	} else if err := e.save(ctx, r); err != nil {
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
func (e *Executor) nodeProgress(r *run, st *plan.Step) {
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
func (e *Executor) fail(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, err error) error {
	if ctx.Err() != nil {
		return stepErr(st.ID, fmt.Errorf("interrupted (the journal resumes it): %w", ctx.Err()))
	}
	rec.Status, rec.Message = StatusFailed, err.Error()
	if serr := e.save(ctx, r); serr != nil {
		e.log.Error("could not record the failure in the journal", "step", st.ID, "error", serr)
	}
	ev := e.stepEvent(r, st, EventStepFailed, err.Error())
	ev.Err = err
	e.emit(ev)
	e.log.Error("step failed", "step", st.ID, "kind", st.Kind(), "error", err)
	return stepErr(st.ID, err)
}
