package execute

import (
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// EventType names what happened.
type EventType string

// Event types.
const (
	// EventRunStarted: Apply starts a fresh run of a plan.
	EventRunStarted EventType = "RunStarted"
	// EventRunResumed: Apply continues a plan from its journal.
	EventRunResumed EventType = "RunResumed"
	// EventRunFinished: every step (up to ApplyOptions.Until) is done.
	EventRunFinished EventType = "RunFinished"
	// EventStepStarted: a step's preconditions held and its action begins.
	EventStepStarted EventType = "StepStarted"
	// EventStepProgress: a long step moved on ("node pool-a-3: 4/9 pods evicted").
	EventStepProgress EventType = "StepProgress"
	// EventStepFinished: the step's action ran and its verification holds.
	EventStepFinished EventType = "StepFinished"
	// EventStepSkipped: the journal says the step is done already.
	EventStepSkipped EventType = "StepSkipped"
	// EventStepFailed: the step stopped with an error (Err).
	EventStepFailed EventType = "StepFailed"
	// EventWaitingOnPDB: a drain waits because PodDisruptionBudgets (PDBs) allow no eviction now.
	EventWaitingOnPDB EventType = "WaitingOnPDB"
	// EventGateUnhealthy: a health gate's probe said no; Rollback names the step whose rollback is offered.
	EventGateUnhealthy EventType = "GateUnhealthy"
	// EventApprovalNeeded: an Approval step waits for the Approve hook.
	EventApprovalNeeded EventType = "ApprovalNeeded"
	// EventSandboxRetry: pods failed sandbox creation through istio-cni for a while and recovered (or
	// are still inside the retry window); expected during a CNI rollout, reported, not a failure.
	EventSandboxRetry EventType = "SandboxRetry"
	// EventRetry: a transient API error is being retried.
	EventRetry EventType = "Retry"
	// EventDryRun: what a step would change (Options.DryRun).
	EventDryRun EventType = "DryRun"
	// EventRolledBack: a step's rollback finished.
	EventRolledBack EventType = "RolledBack"
	// EventWaveProgress: the nodes of a wave moved on (Wave): which are draining, what holds each (a
	// budget, a terminating pod and the grace it has left), how long the wave may still take.
	EventWaveProgress EventType = "WaveProgress"
	// EventNodeGone: a node the plan works on was removed from the cluster (an autoscaler, Karpenter,
	// a person); its steps are skipped and the run goes on.
	EventNodeGone EventType = "NodeGone"
)

// Event is one typed progress report. Fields that do not apply to the type are empty.
type Event struct {
	// Type says what happened; Time when, by the executor's Clock.
	Type EventType
	Time time.Time
	// StepID and Kind of the step concerned; Index is its 1-based position in the plan, of Total.
	StepID string
	Kind   plan.Kind
	Index  int
	Total  int
	// Message says what happened in words.
	Message string
	// Done and Of count progress inside a step (pods evicted of pods to evict, batches restarted), or
	// nodes done of nodes to do (with Node).
	Done int
	Of   int
	// Node is the node concerned, for node progress and NodeGone.
	Node string
	// PDBs names the PodDisruptionBudgets holding a drain ("namespace/name"); Pods names the pods
	// concerned ("namespace/name").
	PDBs []string
	Pods []string
	// Rollback is the ID of the step whose rollback a failed health gate offers.
	Rollback string
	// Changes lists what a step changed or, in a dry run, would change.
	Changes []string
	// Err is the error of a failed step or of a retried call.
	Err error
	// Wave is where a wave stands, for EventWaveProgress (Done and Of then count its nodes done).
	Wave *WaveProgress
}
