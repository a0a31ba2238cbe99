package execute

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on them with errors.Is; messages name the object and the fix.
var (
	// ErrPlanStale means the cluster changed since the plan was made: the live snapshot's fingerprint
	// differs from the plan's. Re-plan from a fresh snapshot.
	ErrPlanStale = errors.New("plan is stale")
	// ErrLocked means another run holds the Lease: two runs never act on one mesh at once.
	ErrLocked = errors.New("another run holds the lock")
	// ErrStepBlocked means a step (or the plan's findings) says it must not run.
	ErrStepBlocked = errors.New("step is blocked")
	// ErrApprovalRequired means an Approval step was reached and no one approved it. The run can be
	// resumed with an Approve hook that says yes.
	ErrApprovalRequired = errors.New("approval required")
	// ErrUnhealthy means a health gate's probe reported the mesh unhealthy.
	ErrUnhealthy = errors.New("mesh is unhealthy")
	// ErrPrecondition means a step's precondition did not hold just before it would have run.
	ErrPrecondition = errors.New("precondition does not hold")
	// ErrVerification means a step's verification did not hold within its timeout.
	ErrVerification = errors.New("verification failed")
	// ErrTimeout means a drain or a wait did not finish within its timeout.
	ErrTimeout = errors.New("timed out")
	// ErrDrainStuck means a drain stopped before its timeout because it cannot progress: a budget
	// refusing it waits for a pod the scheduler places nowhere, or allows no eviction with all its
	// pods ready (Options.StallAfter). The journal resumes the drain once room is made.
	ErrDrainStuck = errors.New("drain cannot progress")
	// ErrJournalMismatch means the journal belongs to another plan: a plan can only resume its own.
	ErrJournalMismatch = errors.New("journal belongs to another plan")
	// ErrNoBackup means a deletion's backup is missing or does not read back equal.
	ErrNoBackup = errors.New("no readable backup")
	// ErrReleaseNotFound is returned by HelmClient.Get when the release does not exist.
	ErrReleaseNotFound = errors.New("helm release not found")
	// ErrRolledBack means a step was rolled back; the rest of the plan assumed it, so re-plan.
	ErrRolledBack = errors.New("step was rolled back")
	// ErrNoGate means the plan's checks need a gate (Options.Gates) the executor was not given.
	ErrNoGate = errors.New("no gate for the plan's checks")
)

// StepError is the error of one step. Unwrap gives the cause (often one of the sentinels).
type StepError struct {
	// StepID is the plan step that failed.
	StepID string
	// Err is the cause.
	Err error
}

// Error prints "step <id>: <cause>".
func (e *StepError) Error() string { return fmt.Sprintf("step %s: %v", e.StepID, e.Err) }

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

func stepErr(id string, err error) error {
	if err == nil {
		return nil
	}
	var se *StepError
	if errors.As(err, &se) && se.StepID == id {
		return err
	}
	return &StepError{StepID: id, Err: err}
}
