package execute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

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
	// emitting serialises the Observer: the lanes of a wave report at the same time.
	emitting sync.Mutex
	// noWatch logs once that the client cannot watch.
	noWatch sync.Once
}

// New returns an executor writing through c. The client's scheme must know client-go's built-in
// kinds (observe.Scheme does); objects of other kinds are handled as unstructured. Pass a client
// that watches (client.NewWithWatch, a fake client): the waits of drains, ztunnel readiness and
// rollouts then wake on watches. With a client that cannot watch (client.New) every wait polls at
// Options.PollInterval, which costs an API request per waiting node and poll (Apply logs it).
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
	r.j.init(rec)
	ok = true
	return r, nil
}

// watch gives a run that waits (Apply, Rollback) its watches; a Step call, one bounded unit, has none
// and answers RetryAfter from its poll interval.
func (e *Executor) watch(ctx context.Context, r *run) {
	if r.dry {
		return
	}
	if r.hub = newWatchHub(ctx, e); r.hub == nil {
		e.noWatch.Do(func() {
			e.log.Info("the client cannot watch (client.New): every wait polls at the poll interval; pass client.NewWithWatch", "pollInterval", e.opts.PollInterval)
		})
	}
}

// end releases what the run holds: its watches and the Lease.
func (r *run) end(ctx context.Context) {
	r.hub.stop()
	r.lease.release(ctx)
}

func (e *Executor) emit(ev Event) {
	if e.opts.Observer == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = e.clock.Now()
	}
	e.emitting.Lock()
	defer e.emitting.Unlock()
	e.opts.Observer(ev)
}

func (e *Executor) stepEvent(r *run, st *plan.Step, t EventType, msg string) Event {
	return Event{Type: t, StepID: st.ID, Kind: st.Kind(), Index: r.index[st.ID] + 1, Total: len(r.p.Steps), Message: msg}
}
