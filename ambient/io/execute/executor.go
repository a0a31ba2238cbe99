package execute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// Executor applies plans to one cluster. It is safe to reuse across runs, not to share between
// concurrent runs (the Lease keeps concurrent runs apart across processes).
type Executor struct {
	// eng does the work: the executor is its face (the manager/internal split of controller-runtime).
	eng *engine
}

// engine is what an Executor runs plans with: its client, options, Helm client, journal, backup
// store, clock and logger, and the actions, checks, waves, watches, journal writer and lock its
// methods implement (one file each).
type engine struct {
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
	return &Executor{eng: &engine{c: c, opts: opts, helm: opts.Helm, journal: opts.Journal, backups: opts.BackupStore,
		clock: opts.Clock, log: opts.Logger}}, nil
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
func (e *engine) begin(ctx context.Context, p *plan.Plan, requireJournal bool) (*run, error) {
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
func (e *engine) watch(ctx context.Context, r *run) {
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

func (e *engine) emit(ev Event) {
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

func (e *engine) stepEvent(r *run, st *plan.Step, t EventType, msg string) Event {
	return Event{Type: t, StepID: st.ID, Kind: st.Kind(), Index: r.index[st.ID] + 1, Total: len(r.p.Steps), Message: msg}
}

// Apply runs the plan to the end (or to ApplyOptions.Until), blocking. See the package documentation
// for the order of checks. The steps outside waves run one after another; the node units of a wave
// run at the same time (runWave). On error the Result holds the steps reached, and, when a wave
// stopped, the state of each of its nodes; the journal lets a later Apply of the same plan resume.
func (x *Executor) Apply(ctx context.Context, p *plan.Plan, ao ApplyOptions) (*Result, error) {
	return x.eng.apply(ctx, p, ao)
}

// Step runs one bounded unit of one step: the whole action for quick steps, one pass of a drain, one
// poll of a wait or verification. It takes the Lease for the call. A step already done is a no-op.
// Call it again while the result says StatusInProgress. A step of a wave advances the whole wave:
// the call runs one unit of every node unit of the wave that is running (starting units up to
// Options.MaxNodesAtOnce), as Apply's next pass over the wave would, and StepResult.Units says where
// each stands; a controller that calls Step for the plan's steps in order so drives the wave's
// nodes at once. A step of a wave whose unit has not reached it gets the same error as a step whose
// dependencies are not done, and nothing runs.
func (x *Executor) Step(ctx context.Context, p *plan.Plan, stepID string) (StepResult, error) {
	return x.eng.stepOne(ctx, p, stepID)
}

// Rollback runs the Rollback step of a step that ran (done, failed or in progress) to completion, and
// marks the step rolled back in the journal. Later steps assumed it, so Apply then refuses the plan
// with ErrRolledBack: re-plan from a fresh snapshot. A wave that stopped part way is undone node by
// node with RollbackTo its first step: each node's steps that ran are rolled back, the others left.
func (x *Executor) Rollback(ctx context.Context, p *plan.Plan, stepID string) (StepResult, error) {
	return x.eng.rollback(ctx, p, stepID)
}

// RollbackTo undoes a plan back to step to, inclusive: every step from the end of the plan down to
// to that ran (done, failed or in progress) and has a Rollback is rolled back with Rollback, last
// first, so each rollback finds the cluster as its step left it. Steps that did not run, are already
// rolled back, or have no rollback (reads, waits, backups, health gates) are passed over. It stops at
// the first rollback that fails and returns the results of those that ran.
func (x *Executor) RollbackTo(ctx context.Context, p *plan.Plan, to string) ([]StepResult, error) {
	return x.eng.rollbackTo(ctx, p, to)
}

// Check evaluates one check against the live cluster, outside any plan (for tools and tests). Checks
// that need a step context (BackupReadable, PodsRedirected since step start) see none.
func (x *Executor) Check(ctx context.Context, c plan.Check) (ok bool, reason string, err error) {
	return x.eng.checkOne(ctx, c)
}

// RequiredPermissions returns everything a run of the plan with this executor needs of its client,
// each named with what needs it: what the plan's steps need (rbac.RequiredPermissions, for
// Options.DryRun), what the executor needs for itself (the lock Lease, the journal ConfigMap and the
// backup Secrets of the plan in Options.Namespace, when they are the default ConfigMapJournal and
// SecretBackupStore) and Options.Permissions (what Snapshot and the observers read and write).
// Rollback steps are not included: Apply runs none. The Helm steps' needs are those of the helmsdk
// adapter with Helm's default Secret storage.
func (x *Executor) RequiredPermissions(p *plan.Plan) (*rbac.Permissions, error) {
	return x.eng.requiredPermissions(p)
}

// Preflight asks the API server, with one SelfSubjectAccessReview (authorization.k8s.io/v1) per
// permission of RequiredPermissions, whether the executor's client may do everything a run of the
// plan needs. It returns a *PermissionError (wrapping ErrForbidden) naming every permission refused,
// and changes nothing. Apply runs it first, for fresh, resumed and dry runs alike.
func (x *Executor) Preflight(ctx context.Context, p *plan.Plan) error {
	return x.eng.preflight(ctx, p)
}
