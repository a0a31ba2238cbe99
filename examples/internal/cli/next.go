package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
)

// Next says what to do after a run of the upgrade example stopped with an error: plan again, waive,
// resume, roll back or wait, naming the command to type. Its Observe watches the run for the step
// whose rollback an unhealthy health gate offers.
type Next struct {
	// Cmd is the program's command line, to name the commands.
	Cmd *Command
	// DryRun: the run changed nothing and wrote no journal, so there is nothing to resume.
	DryRun bool
	// Namespace holds the Lease and the journal.
	Namespace string
	// InMemory: the run was on the in-memory demo cluster, which is gone with the process, so there
	// is nothing to resume, roll back or wait for.
	InMemory bool

	mu       sync.Mutex
	rollback string
}

// Observe remembers the rollback a failed health gate offers; it is an execute.Options.Observer.
func (n *Next) Observe(ev execute.Event) {
	if ev.Type == execute.EventGateUnhealthy && ev.Rollback != "" {
		n.mu.Lock()
		n.rollback = ev.Rollback
		n.mu.Unlock()
	}
}

// sessionFlags are the flags a command that continues a saved plan keeps.
var sessionFlags = []string{"kubeconfig", "context", "plan-file", "log-format"}

// advice is what to do after one kind of failure.
type advice struct {
	is  []error
	say func(n *Next) string
}

// advices are tried in order; the first whose error matches gives the advice.
var advices = []advice{
	{[]error{execute.ErrPlanStale}, func(n *Next) string {
		return "the cluster changed since the plan was made, and nothing was changed: plan again from the live cluster: " + n.Replan()
	}},
	{[]error{execute.ErrRolledBack}, func(n *Next) string {
		return "a step was rolled back and the steps after it assumed it: plan again from the live cluster: " + n.Replan()
	}},
	{[]error{execute.ErrChartMissing}, func(n *Next) string {
		return "nothing was changed: plan again with a chart source that has that version (--charts DIR|URL|oci://REF, --chart-index FILE), or for a version the source has (--target): " + n.Replan()
	}},
	{[]error{execute.ErrLocked}, func(n *Next) string {
		return fmt.Sprintf("another run holds the Lease %s/%s: wait until it finishes (or until its Lease expires, if it died), or ask its holder (kubectl get lease -n %s %s -o yaml); then run again: %s",
			n.Namespace, execute.LockName, n.Namespace, execute.LockName, n.Cmd.Line(nil))
	}},
	{[]error{execute.ErrApprovalRequired}, func(n *Next) string {
		return "an approval step is waiting: run again, read what it asks and answer yes: " + n.resume()
	}},
	{[]error{execute.ErrUnhealthy}, func(n *Next) string {
		n.mu.Lock()
		rb := n.rollback
		n.mu.Unlock()
		if rb == "" || n.DryRun {
			return "the mesh is unhealthy after the last change and no earlier step has a rollback: fix the cause, then continue: " + n.resume()
		}
		return fmt.Sprintf("the mesh is unhealthy after the last change: roll back step %s with %s, then plan again; or fix the cause and continue: %s",
			rb, n.Cmd.Line(n.Cmd.Only(sessionFlags...), "--rollback", rb), n.resume())
	}},
	{[]error{execute.ErrStepBlocked, ErrBlocked, ErrNeedsWaiver}, func(n *Next) string {
		return "findings or blocked steps stop the plan, and nothing was changed: fix the cause (each finding's remedy), or accept waivable findings, and plan again: " +
			n.Cmd.Line(append(n.Cmd.Only(keepReplan...), "waive"), "--waive", "CODE,...")
	}},
	{[]error{execute.ErrJournalMismatch}, func(n *Next) string {
		return "the journal belongs to another plan: continue that run with its own plan file (--plan-file), or plan again: " + n.Replan()
	}},
	{[]error{execute.ErrTimeout, execute.ErrVerification, execute.ErrPrecondition, execute.ErrNoBackup}, func(n *Next) string {
		return "fix what the error names (the object, the budget, the pods), then continue: " + n.resume()
	}},
	{[]error{context.Canceled, context.DeadlineExceeded}, func(n *Next) string {
		return "the run was stopped: continue where it stopped: " + n.resume()
	}},
}

// For returns the advice for err: the first matching sentinel's, else "fix the cause" and the
// command that continues (after a step failed) or starts again (before any step ran).
func (n *Next) For(err error) string {
	if n.InMemory && !errors.Is(err, execute.ErrStepBlocked) && !errors.Is(err, ErrBlocked) && !errors.Is(err, ErrNeedsWaiver) {
		return "the in-memory demo cluster lived in this process and is gone with it, so there is nothing to resume or roll back (and nothing outside it changed): run again from the start: " + n.Cmd.Line(nil)
	}
	for _, a := range advices {
		for _, target := range a.is {
			if errors.Is(err, target) {
				return a.say(n)
			}
		}
	}
	var se *execute.StepError
	if errors.As(err, &se) {
		return fmt.Sprintf("step %s failed: fix the cause (a transient API error needs nothing), then continue: %s", se.StepID, n.resume())
	}
	return "fix the cause, then run again: " + n.Cmd.Line(nil)
}

// Wrap adds the advice to the error: "<error>\nnext: <advice>".
func (n *Next) Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &adviceError{err: err, next: n.For(err)}
}

type adviceError struct {
	err  error
	next string
}

func (e *adviceError) Error() string { return e.err.Error() + "\nnext: " + e.next }
func (e *adviceError) Unwrap() error { return e.err }

// Replan is the command that plans again: the planning flags, without the ones that apply a saved plan.
func (n *Next) Replan() string {
	return n.Cmd.Line(n.Cmd.Only(keepReplan...))
}

// resume is the command that continues the saved plan from its journal; after a dry run, which
// keeps none, the same dry run again.
func (n *Next) resume() string {
	if n.DryRun {
		return n.Cmd.Line(nil)
	}
	return n.Cmd.Line(n.Cmd.Only(sessionFlags...), "--resume")
}
