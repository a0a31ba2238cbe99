package execute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// Defaults for Options fields left zero (and the namespace and field owner of the default journal and
// backup store).
const (
	DefaultNamespace     = "istio-system"
	DefaultFieldOwner    = "ambientkit"
	DefaultPollInterval  = 5 * time.Second
	DefaultDrainTimeout  = 10 * time.Minute
	DefaultVerifyTimeout = 10 * time.Minute
	DefaultLeaseDuration = 2 * time.Minute
	DefaultMaxAttempts   = 6
	DefaultRetryBackoff  = time.Second
	maxRetryBackoff      = 30 * time.Second
	maxPDBBackoff        = time.Minute
)

// Probe reports whether the mesh is healthy for a scope ("tag prod", "ztunnel batch", "istio-cni"):
// error rates, TCP resets, latency, whatever the caller measures. An error means the probe could not
// tell (it is retried); healthy=false with a reason stops the run.
type Probe func(ctx context.Context, scope string) (healthy bool, reason string, err error)

// Options configure an Executor. Only Snapshot is required; every other zero value is a safe default.
type Options struct {
	// Helm carries out Helm steps and answers HelmReleaseVersion checks (package helmsdk has the real
	// one). Plans with Helm steps fail at the first one when it is nil.
	Helm HelmClient
	// Charts confirms, before the first change of a fresh run, that every chart version the plan's
	// Helm steps name exists in its source (see ChartChecker); Apply refuses with ErrChartMissing
	// otherwise. Nil means Options.Helm when it implements ChartChecker (helmsdk.Client does), else
	// no check.
	Charts ChartChecker
	// Gates judge the whole mesh for the plan's FindingsClear and NoReferences checks (the prechecks
	// step every plan opens with, the removal of a revision) with the code that planned:
	// ambient.Gates(). The executor imports no planner. A plan whose checks need a gate that is nil
	// is refused before anything changes (ErrNoGate).
	Gates plan.Gates
	// Snapshot observes the live mesh, typically a closure over observe.Live. It decides whether a
	// plan is stale and answers the checks FindingsClear, NoReferences, GatewayOwner,
	// WorkloadsOnRevision and TrustedAccounts. Required.
	Snapshot func(ctx context.Context) (*mesh.Snapshot, error)
	// Namespace holds the lock Lease, the journal ConfigMaps and the backup Secrets; empty means
	// istio-system.
	Namespace string
	// Journal records progress; nil means a ConfigMapJournal in Namespace.
	Journal Journal
	// BackupStore keeps backups; nil means a SecretBackupStore in Namespace.
	BackupStore BackupStore
	// Identity is this run's holder identity on the Lease; empty means "<hostname>-<pid>". Give a
	// restarted process the same identity to take its own Lease back without waiting for it to expire.
	Identity string
	// LeaseDuration is how long the Lease stays valid without renewal; 0 means 2 minutes. The run
	// renews it at every step boundary and every poll once a third of it has passed.
	LeaseDuration time.Duration
	// Clock is the source of time; nil means the wall clock (k8s.io/utils/clock.RealClock).
	Clock Clock
	// Observer receives typed events, synchronously; nil means none.
	Observer func(Event)
	// Logger receives structured logs; nil means none.
	Logger *slog.Logger
	// Probes are the health probes HealthGate steps name.
	Probes map[string]Probe
	// Approve decides Approval steps. Nil means nobody can approve here: Apply stops at the step with
	// ErrApprovalRequired, and a later Apply with an Approve hook resumes from it.
	Approve func(ctx context.Context, step plan.Step) (bool, error)
	// FieldOwner is the server-side apply field manager; empty means "ambientkit".
	FieldOwner string
	// DryRun changes nothing: writes are sent with dryRun=All where the API allows, Helm renders with
	// its dry run, waits and gates are described, and each step result says what would change. It takes
	// no Lease and writes no journal.
	DryRun bool
	// PollInterval is the time between polls of waits and verifications that no watch serves (see
	// the package documentation); 0 means 5 seconds.
	PollInterval time.Duration
	// MaxNodesAtOnce caps how many node units of a wave run at the same time; 0 means all of the
	// wave's (the plan's batch size). 1 runs a wave's nodes one after another.
	MaxNodesAtOnce int
	// DefaultDrainTimeout bounds a drain whose step gives no timeout; 0 means 10 minutes.
	DefaultDrainTimeout time.Duration
	// StallAfter is how long a drain that budgets refuse may see no way forward before it stops with
	// ErrDrainStuck, well before its timeout: a pod of the refusing budget unschedulable that long,
	// or the budget allowing no eviction with all its pods ready on every pass that long. 0 means
	// DefaultStallAfter (2 minutes: Karpenter or an autoscaler may bring a node for an unschedulable
	// pod meanwhile); below 0 turns the guard off, and the drain waits for its timeout. A budget's
	// passes are counted within one Apply; Step calls judge the unschedulable pod only. It is judged
	// on the drain's passes: one held by a budget looks again when the budget allows an eviction, or
	// every 30 seconds.
	StallAfter time.Duration
	// VerifyTimeout bounds a step's verification, a restart's rollouts and waits without their own
	// timeout; 0 means 10 minutes.
	VerifyTimeout time.Duration
	// MaxAttempts is how many times a call failing with a transient error (409, 429, 5xx, timeouts)
	// is tried; 0 means 6.
	MaxAttempts int
	// RetryBackoff is the first wait between attempts, doubled each time up to 30s; 0 means 1 second.
	RetryBackoff time.Duration
	// Waive adds waivable finding codes accepted by FindingsClear checks, besides those the plan was
	// made with (metadata.options.waive).
	Waive []plan.Code
	// Permissions are what Snapshot, Probes and Observer need of the cluster, for the preflight
	// (Preflight) to check with the plan's and the executor's own: observe.RequiredPermissions for a
	// Snapshot over observe.Live, KubernetesEventsPermissions for KubernetesEvents. Nil means none.
	Permissions *rbac.Permissions
}

func (o *Options) defaults(c client.Client) error {
	if o.Snapshot == nil {
		return errors.New("execute: Options.Snapshot is nil; pass a function that observes the live mesh, e.g. func(ctx) { return observe.Live(ctx, c, observe.Options{}) }")
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.FieldOwner == "" {
		o.FieldOwner = DefaultFieldOwner
	}
	if o.Journal == nil {
		o.Journal = &ConfigMapJournal{Client: c, Namespace: o.Namespace, FieldOwner: o.FieldOwner}
	}
	if o.BackupStore == nil {
		o.BackupStore = &SecretBackupStore{Client: c, Namespace: o.Namespace, FieldOwner: o.FieldOwner}
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "ambientkit"
		}
		o.Identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.LeaseDuration < 3*time.Second {
		return fmt.Errorf("execute: Options.LeaseDuration %s is too short; use at least 3s", o.LeaseDuration)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.DefaultDrainTimeout <= 0 {
		o.DefaultDrainTimeout = DefaultDrainTimeout
	}
	if o.StallAfter == 0 {
		o.StallAfter = DefaultStallAfter
	}
	if o.VerifyTimeout <= 0 {
		o.VerifyTimeout = DefaultVerifyTimeout
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxNodesAtOnce < 0 {
		return fmt.Errorf("execute: Options.MaxNodesAtOnce is %d; use 0 for the whole wave or a positive cap", o.MaxNodesAtOnce)
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	return nil
}

// ApplyOptions tune one Apply.
type ApplyOptions struct {
	// Until stops the run after this step (inclusive). Blocked steps after it do not stop the run from
	// starting, so a plan whose last step waits on a re-plan can run up to the step before it.
	Until string
	// Resume requires a journal: Apply fails instead of starting a fresh run when the plan has none.
	Resume bool
}

// Result is what Apply did.
type Result struct {
	// PlanHash identifies the plan and its journal.
	PlanHash string
	// Resumed is true when the run continued from a journal (and skipped the staleness check).
	Resumed bool
	// DryRun is true when nothing was changed (Options.DryRun).
	DryRun bool
	// Steps has one result per step reached, in plan order.
	Steps []StepResult
	// Done is true when every step (up to ApplyOptions.Until) is done.
	Done bool
	// Nodes, when the run stopped in a wave, says where each node of that wave stands (as the
	// *WaveError does).
	Nodes []NodeState
}

// StepResult is the outcome of one step, or of one unit of it (Executor.Step).
type StepResult struct {
	// StepID and Kind name the step.
	StepID string
	Kind   plan.Kind
	// Status is StatusDone, StatusInProgress (call Step again) or, in a dry run, StatusWouldRun.
	Status StepStatus
	// Skipped is true when the journal already had the step done: nothing was done again.
	Skipped bool
	// Message is the last progress line ("node pool-a-3: 4/9 pods evicted; waiting on PDB data/pg").
	Message string
	// Changes says what the step changed or, in a dry run, would change, in words.
	Changes []string
	// Objects are the objects the step changed or, in a dry run, would change: the Helm release, the
	// node, the pods a drain evicts, the objects applied or deleted. Held names what holds it back
	// right now (the PodDisruptionBudgets refusing a drain's evictions).
	Objects []mesh.ObjectRef
	Held    []mesh.ObjectRef
	// RetryAfter is how long to wait before the next unit of an in-progress step.
	RetryAfter time.Duration
	// Done and Of count progress inside the step.
	Done, Of int
	// Units, for a Step call on a step of a wave, says where each node of the wave stands after it.
	Units []NodeState
}
