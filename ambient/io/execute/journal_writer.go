package execute

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// journalState is a run's side of the journal: the record the next save writes, which lanes publish
// their entries to, and the one writer. A save takes the record as it stands (every entry published
// so far) and writes it; while it is under way, lanes that ask for a save wait for the next one,
// which carries all of their changes at once: the writes of concurrent lanes coalesce, and no two
// saves of a run are ever in flight together.
type journalState struct {
	mu   sync.Mutex
	cond *sync.Cond
	rec  *Record
	// gen counts the publishes; savedGen is the gen the last successful save carried.
	gen, savedGen uint64
	// unrecorded are the steps finished (or acted and verifying) whose completion the record's last
	// save does not hold yet (see journalPolicy), in the order they were published.
	unrecorded []unrecordedStep
	// acting are the steps that are acting right now, by lane: from the moment they were let act
	// (recordBefore) until their unit ends.
	acting map[*run]*plan.Step
	// saving is true while the writer writes; asked counts save requests and carried the requests
	// the last finished save carried; lastErr is its error.
	saving         bool
	asked, carried uint64
	lastErr        error
}

// init sets the record the journal starts from.
func (j *journalState) init(rec *Record) {
	j.rec = rec
	j.cond = sync.NewCond(&j.mu)
	j.acting = map[*run]*plan.Step{}
}

// copyOf returns a copy of a step's entry, a new pending one when the record has none.
func (j *journalState) copyOf(id string) *StepRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	if s, ok := j.rec.Steps[id]; ok {
		return copyRecord(s)
	}
	return &StepRecord{Status: StatusPending, State: map[string]string{}}
}

// peek returns the record's entry of a step, nil when it has none. Entries of the record are never
// changed in place (publish replaces them), so the caller may read it but must not change it.
func (j *journalState) peek(id string) *StepRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rec.Steps[id]
}

// publish puts copies of a lane's touched entries into the record.
func (j *journalState) publish(recs map[string]*StepRecord, touched map[string]bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.rec.Steps == nil {
		j.rec.Steps = map[string]*StepRecord{}
	}
	for id := range touched {
		j.rec.Steps[id] = copyRecord(recs[id])
	}
	j.gen++
}

// dirty reports whether the record holds changes no save has written.
func (j *journalState) dirty() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.gen > j.savedGen
}

// save publishes the lane's entries and writes the record (never in a dry run). It still writes when
// ctx was cancelled, so a failure is recorded.
func (e *engine) save(ctx context.Context, r *run) error {
	if r.dry {
		return nil
	}
	r.publish()
	return e.commit(ctx, r.runShared)
}

// commit writes the record with the next save, as the writer or waiting for it.
func (e *engine) commit(ctx context.Context, s *runShared) error {
	j := s.j
	j.mu.Lock()
	j.asked++
	mine := j.asked
	for j.saving && j.carried < mine {
		j.cond.Wait()
	}
	if j.carried >= mine { // a save that started after this request carried it
		err := j.lastErr
		j.mu.Unlock()
		return err
	}
	j.saving = true
	upTo, gen, n := j.asked, j.gen, len(j.unrecorded)
	snap := *j.rec
	snap.Steps = make(map[string]*StepRecord, len(j.rec.Steps))
	for id, st := range j.rec.Steps {
		snap.Steps[id] = st
	}
	j.mu.Unlock()

	snap.Holder, snap.Updated = e.opts.Identity, e.clock.Now()
	err := e.writeJournal(ctx, s, &snap)

	j.mu.Lock()
	defer j.mu.Unlock()
	j.saving, j.carried, j.lastErr = false, upTo, err
	if err == nil {
		j.savedGen = max(j.savedGen, gen)
		j.unrecorded = append(j.unrecorded[:0:0], j.unrecorded[n:]...)
	}
	j.cond.Broadcast()
	return err
}

// writeJournal saves one record: with retries, or once promptly when the run is being stopped.
func (e *engine) writeJournal(ctx context.Context, s *runShared, rec *Record) error {
	if ctx.Err() != nil { // the run is being stopped: one prompt attempt to record where it stands
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := e.journal.Save(ctx, rec); err != nil {
			return fmt.Errorf("save journal of plan %q while stopping: %w", s.p.Metadata.Name, err)
		}
		return nil
	}
	if err := e.retry(ctx, "save journal", func(ctx context.Context) error { return e.journal.Save(ctx, rec) }); err != nil {
		return fmt.Errorf("save journal of plan %q: %w", s.p.Metadata.Name, err)
	}
	return nil
}

// recordBefore writes the journal before st acts when an unrecorded completion may not stay so
// across it (mayStayUnrecorded), and lets st act: until its unit ends, a completion of another lane
// that may not stay unrecorded across st is written at once (see later). The executor calls it
// before an action acts, except for actions that call it themselves, right before their first write
// (journalPolicy.recordsItself).
func (e *engine) recordBefore(ctx context.Context, r *run, st *plan.Step) error {
	if r.dry || !writes(st) {
		return nil
	}
	j := r.j
	j.mu.Lock()
	j.acting[r] = st
	need := false
	for _, done := range j.unrecorded {
		if !done.journal.mayStayUnrecorded(done.st, st) {
			need = true
			break
		}
	}
	j.mu.Unlock()
	if need {
		return e.save(ctx, r)
	}
	return nil
}

// doneActing ends what recordBefore let the lane do.
func (r *run) doneActing() {
	r.j.mu.Lock()
	delete(r.j.acting, r)
	r.j.mu.Unlock()
}

// later publishes a step whose completion (or action, when it is verifying) the journal may hold
// later, by its kind's policy: it is written with the next save, unless a step of another lane is
// acting right now that it may not stay unrecorded across, in which case it is written at once.
func (e *engine) later(ctx context.Context, r *run, st *plan.Step, pol *journalPolicy) error {
	r.publish()
	j := r.j
	j.mu.Lock()
	must := false
	for other, next := range j.acting {
		if other != r && !pol.mayStayUnrecorded(st, next) {
			must = true
		}
	}
	if !must {
		j.unrecorded = append(j.unrecorded, unrecordedStep{st: st, journal: pol})
	}
	j.mu.Unlock()
	if must {
		return e.commit(ctx, r.runShared)
	}
	return nil
}

// flush writes what the journal does not hold yet.
func (e *engine) flush(ctx context.Context, r *run) error {
	if r.dry {
		return nil
	}
	r.publish()
	if !r.j.dirty() {
		return nil
	}
	return e.commit(ctx, r.runShared)
}
