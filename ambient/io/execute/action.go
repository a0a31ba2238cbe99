package execute

import (
	"context"
	"fmt"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// outcome is what one unit of an action did.
type outcome struct {
	finished   bool
	progress   string
	retryAfter time.Duration
	changes    []string
	done, of   int
	// touched are objects the unit changed or, in a dry run, would change, besides those the
	// action's objects func names (the pods a drain evicts); held are what holds the step back now
	// (the PodDisruptionBudgets refusing evictions).
	touched, held []mesh.ObjectRef
}

func finished(changes ...string) outcome { return outcome{finished: true, changes: changes} }

// action is how the executor carries out one action kind. Each kind's action is defined in its own
// file, action_<kind>.go, and listed once in actions; a test fails when plan.Kinds() has a kind this
// table lacks, or an action misses its journal policy or its backup part.
//
// The node a step works on is the plan's (plan.Step.Node). Actions of kinds that work on a node
// finish, having done nothing, when the node is gone (removed by an autoscaler or Karpenter since
// planning), with a NodeGone event (markGone, nodeGone); they look only where the node's absence
// shows (a NotFound, no pod left), so a node that is there costs no extra request.
type action struct {
	// run carries out one bounded unit of the step. In a dry run (r.dry) it changes nothing and says
	// what it would change. It is idempotent: run again after it finished, or after a crash between
	// its effect and the journal write, it finds the effect and does not act twice.
	run func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error)
	// stale, when set, says what changed in the live mesh since planning that the step depends on;
	// first is shared by the steps of one plan (a release upgraded twice is judged at its first).
	stale func(st *plan.Step, s *mesh.Snapshot, first map[string]bool, add func(format string, a ...any))
	// journal says when the journal records a finished step of the kind (journalAtOnce, journalLooks,
	// ...: see journalPolicy). It must be set.
	journal *journalPolicy
	// backup names the Backup step whose entry in the executor's backup store a step of the kind
	// reads, or writes (write), "" for none (usesNoBackup), for Executor.RequiredPermissions. A read is
	// counted only when that Backup step writes to the store (not to a File). It must be set.
	backup func(st *plan.Step, dry bool) (step string, write bool)
	// counts, when set, names what a finished step counts in node progress events ("drained"); only
	// steps that work on a node (plan.Step.Node) count.
	counts string
	// objects, when set, names the objects the step changes, from its payload; they are reported in
	// StepResult.Objects.
	objects func(st *plan.Step) []mesh.ObjectRef
	// interests, when set, are the events a unit of the step may wait on beside its postconditions'
	// (see watch.go); they are registered before the unit runs.
	interests func(st *plan.Step) []interest
	// workloads, when set, are the workloads whose pods the step restarts (Restart, Reinject), which
	// checks of the step's pods look at (SidecarsInjected).
	workloads func(st *plan.Step) []mesh.ObjectRef
	// phase, when set, is what a node whose unit runs a step of the kind is doing, for wave progress
	// ("draining"); else the kind's name in lower case.
	phase string
}

// actions is the executor's table of action kinds. It is filled by init, because actions' checks
// look kinds up in it (a check of a restart's pods asks the restart's workloads).
var actions map[plan.Kind]action

func init() {
	actions = map[plan.Kind]action{
		plan.KindHelmInstall:   helmInstallAction,
		plan.KindHelmUpgrade:   helmUpgradeAction,
		plan.KindHelmUninstall: helmUninstallAction,
		plan.KindHelmRollback:  helmRollbackAction,
		plan.KindApplyObject:   applyObjectAction,
		plan.KindDeleteObject:  deleteObjectAction,
		plan.KindPatchLabels:   patchLabelsAction,
		plan.KindAnnotate:      annotateAction,
		plan.KindMoveTag:       moveTagAction,
		plan.KindCordon:        cordonAction,
		plan.KindUncordon:      uncordonAction,
		plan.KindDrain:         drainAction,
		plan.KindDeletePod:     deletePodAction,
		plan.KindRestart:       restartAction,
		plan.KindReinject:      reinjectAction,
		plan.KindWaitFor:       waitForAction,
		plan.KindVerify:        verifyAction,
		plan.KindBackup:        backupAction,
		plan.KindRestore:       restoreAction,
		plan.KindApproval:      approvalAction,
		plan.KindHealthGate:    healthGateAction,
	}
}

// usesNoBackup is the backup part of actions that neither read nor write the backup store.
func usesNoBackup(*plan.Step, bool) (string, bool) { return "", false }

// act runs one unit of the step's action.
func (e *engine) act(ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
	a, ok := actions[st.Kind()]
	if !ok {
		return outcome{}, fmt.Errorf("the step has no action this executor knows (kind %q); upgrade ambientkit or re-plan", st.Kind())
	}
	return a.run(e, ctx, r, st, rec)
}

// skippedGone is the outcome of a node step whose node is gone.
func skippedGone(node string) outcome {
	return finished(fmt.Sprintf("node %s is gone (removed from the cluster since planning): skipped", node))
}

// nodeGone reports whether the node no longer exists (one GET, then remembered for the run), and
// reports it once per run with a NodeGone event.
func (e *engine) nodeGone(ctx context.Context, r *run, st *plan.Step, node string) (bool, error) {
	if r.isGone(node) {
		return true, nil
	}
	exists, err := e.nodeExists(ctx, node)
	if err != nil || exists {
		return false, err
	}
	e.markGone(r, st, node)
	return true, nil
}

// markGone records a node found gone and emits NodeGone once per run.
func (e *engine) markGone(r *run, st *plan.Step, node string) {
	if !r.markGoneOnce(node) {
		return
	}
	ev := e.stepEvent(r, st, EventNodeGone, fmt.Sprintf("node %s is gone (removed since the plan was made); its steps are skipped", node))
	ev.Node = node
	e.emit(ev)
	e.log.Info("node gone: its steps are skipped", "node", node, "step", st.ID)
}

// objectsOf returns the objects a step's action names plus those a unit touched, without repeats.
func objectsOf(st *plan.Step, out outcome) []mesh.ObjectRef {
	var objs []mesh.ObjectRef
	if a, ok := actions[st.Kind()]; ok && a.objects != nil {
		objs = a.objects(st)
	}
	seen := map[mesh.ObjectRef]bool{}
	res := objs[:0:0]
	for _, o := range append(objs, out.touched...) {
		if !seen[o] {
			seen[o] = true
			res = append(res, o)
		}
	}
	return res
}

func helmReleaseRef(ns, name string) []mesh.ObjectRef {
	return []mesh.ObjectRef{{Kind: "HelmRelease", Namespace: ns, Name: name}}
}

func nodeRef(name string) []mesh.ObjectRef { return []mesh.ObjectRef{{Kind: "Node", Name: name}} }
