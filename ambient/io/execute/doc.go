// Package execute carries out a reviewed plan.Plan against a live cluster.
//
// An Executor is built once with New from a controller-runtime client and Options (a HelmClient, a
// Snapshot function over observe.Live, probes, an approval hook, a clock). It then works at two levels:
//
//   - Step runs one bounded unit of one step: a Helm upgrade, one pass of a node drain, one poll of a
//     wait. Long steps return StatusInProgress with their progress; call Step again to continue.
//     Controllers and pipelines that want to own the loop use it.
//   - Apply runs the whole plan, blocking: it validates the plan, refuses a plan with stopping
//     findings or blocked steps, takes the Lease "ambientkit-lock" and loads the journal. A fresh run
//     then refuses a stale plan (the live snapshot's fingerprint differs from the plan's) and a plan
//     whose chart versions are not in their sources (ChartChecker, ErrChartMissing); a resumed run
//     skips the steps already done. Before each step it re-checks the step's preconditions, then
//     carries out its action, waits for its verification to hold (real readiness: observed
//     generations, ready and available counts, image tags of the pods that run), and records its
//     progress in the journal. A run that crashes or is cancelled resumes from the journal with
//     Apply on the same plan.
//
// Waves: the node units of a wave (plan.Step.Wave) run at the same time, up to
// Options.MaxNodesAtOnce (0: the whole wave, i.e. the plan's batch size), each node's steps one
// after another; PodDisruptionBudgets hold across the wave (an eviction the API server refuses with
// 429 waits, whichever node asks). A failed node stops the wave: no unit starts, the running ones end
// their unit of work, and Apply returns a *WaveError (and Result.Nodes) saying where every node
// stands; Apply on the same plan resumes exactly those units, RollbackTo the wave's first step undoes
// each node's work. For controllers, Step on a step of a wave runs one unit of every running unit
// of the wave and StepResult.Units says where each stands: calling Step for the plan's steps in
// order, again while one is in progress, drives the wave's nodes at once. EventWaveProgress says
// which nodes drain, what holds each (a budget, a terminating pod and its grace left) and the
// wave's ETA. Waits (drains, pods gone, ztunnel ready, rollouts, Deployments available) of Apply and
// Rollback wake on watches, with a LIST at PollInterval when a watch is refused or breaks, or when
// the client cannot watch (client.New: pass client.NewWithWatch); a drain's postcondition reads the
// workloads it moved from the run's watch, which keeps Deployments and StatefulSets (see watch.go).
// A Step call, one bounded unit, starts no watch.
//
// Rollback runs the Rollback step of a step that ran.
//
// Every action is idempotent and records its intent before it acts: a Helm upgrade is skipped when
// the release is already at the target chart version and values; objects are server-side applied with
// a field owner; a pod deletion remembers the UIDs it was asked to delete and never deletes a
// replacement; a restart remembers the timestamp it stamped. Re-running a finished step is a no-op.
// So the completion of a step whose repetition finds its work done (a cordon, a drain, a pod deletion
// whose UIDs are recorded, a wait) is written with the journal's next write rather than on its own,
// and always before a step acts that would make the repetition act (an uncordon of the same node,
// another drain): a node of a node-by-node swap costs one or two journal writes. A run resumed after
// a crash repeats such steps; their events then appear twice.
//
// Safety rules held here: drains use the Eviction API and respect PodDisruptionBudgets, naming the
// budget that holds a node; nothing is deleted or uninstalled unless a backup of it was written, read
// back and compared; a health gate that fails stops the run and offers the previous step's rollback;
// an approval step stops the run until the Approve hook says yes. Transient API errors (409, 429,
// 5xx, timeouts) are retried with backoff through the injected Clock.
//
// Permissions: RequiredPermissions derives everything a run of a plan needs of the executor's client
// from the plan's steps (rbac.RequiredPermissions), the executor's own lock Lease, journal ConfigMap
// and backup Secrets, and Options.Permissions (what Snapshot and the observers read and write:
// observe.RequiredPermissions, KubernetesEventsPermissions); rbac.Render writes it as roles.
// Apply first runs Preflight, one SelfSubjectAccessReview per permission, and refuses a run whose
// client lacks any with a *PermissionError (ErrForbidden) naming each one and the steps that need it,
// before anything changes: fresh, resumed and dry runs alike.
//
// The executor prints nothing: it reports through typed Events (Options.Observer) and log/slog.
// KubernetesEvents is an Observer that records them as Kubernetes Events on the plan's journal
// ConfigMap, so `kubectl get events` shows what a run did; Observers composes observers.
// The real Helm adapter lives in package helmsdk, so a consumer that only plans never compiles Helm.
//
// What comes from the Kubernetes libraries, and what does not: the wall clock is
// k8s.io/utils/clock.RealClock (any clock.Clock satisfies Clock), retries back off with
// k8s.io/apimachinery/pkg/util/wait.Backoff, evictions and server-side apply go through
// controller-runtime's client. Three are the package's own, for a reason each:
//   - KubernetesEvents, not k8s.io/client-go/tools/events: that recorder needs a typed clientset
//     (EventsV1Interface) and a broadcaster goroutine that retries writes with sleeps of its own;
//     the executor is given one controller-runtime client, records synchronously within a time bound
//     on the injected Clock, and must never slow a drain. Series keep client-go's shape (count,
//     lastObservedTime) so kubectl shows them the same.
//   - The run Lease, not client-go's leaderelection LeaseLock: that is leader election (a background
//     renew loop, a typed CoordinationV1 client, a LeaderElectionRecord); a run takes its Lease once,
//     names its plan on it, renews it between steps on the injected Clock, and a stale holder is
//     taken over only after its lease duration, which the crash tests drive on a fake clock.
//   - executetest.FakeClock, beside k8s.io/utils/clock/testing.FakeClock (which also works): it
//     moves forward by what is waited for, so tests of timeouts need no goroutine to step it.
package execute
