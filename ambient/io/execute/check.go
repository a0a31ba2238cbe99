package execute

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// listPageSize pages the cluster-wide LISTs of checks.
const listPageSize = 500

func labelsSet(m map[string]string) labels.Set { return labels.Set(m) }

// checkPass evaluates a list of checks; snapshot-based checks share one observation.
type checkPass struct {
	e    *engine
	r    *run
	st   *plan.Step
	snap *mesh.Snapshot
}

func (cp *checkPass) snapshot(ctx context.Context) (*mesh.Snapshot, error) {
	if cp.snap == nil {
		s, err := cp.e.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		cp.snap = s
	}
	return cp.snap, nil
}

// checkAll evaluates every check. It returns ok=false with one reason per check that does not hold;
// an error only when a check could not be evaluated.
func (e *engine) checkAll(ctx context.Context, r *run, st *plan.Step, checks []plan.Check) (bool, []string, error) {
	cp := &checkPass{e: e, r: r, st: st}
	var reasons []string
	for _, c := range checks {
		ok, why, err := cp.check(ctx, c)
		if err != nil {
			return false, nil, fmt.Errorf("check %s (%s): %w", c.Type, c.Description, err)
		}
		if !ok {
			reasons = append(reasons, fmt.Sprintf("%s: %s", c.Type, why))
			if ints := checkInterests(c); len(ints) > 0 {
				r.waitOn(ints...)
			} else {
				r.waitPoll()
			}
		}
	}
	return len(reasons) == 0, reasons, nil
}

// checkOne is Executor.Check.
func (e *engine) checkOne(ctx context.Context, c plan.Check) (ok bool, reason string, err error) {
	cp := &checkPass{e: e, r: newRun(&plan.Plan{}, "", false), st: &plan.Step{}}
	cp.r.j.init(&Record{})
	return cp.check(ctx, c)
}

// checkFunc evaluates one check: ok=false with a reason when it does not hold, an error when it
// cannot be evaluated.
type checkFunc func(cp *checkPass, ctx context.Context, c plan.Check) (bool, string, error)

// checkTable is the executor's table of check types; each is defined in check_<type>.go over the
// check's typed arguments. A test fails when plan.CheckTypes() has a type this table lacks.
var checkTable = map[plan.CheckType]checkFunc{
	plan.CheckDeploymentReady:        typed(checkDeploymentReady),
	plan.CheckDaemonSetRolledOut:     typed(checkDaemonSetRolledOut),
	plan.CheckNodeAgentReady:         typed(checkNodeAgentReady),
	plan.CheckPodsRedirected:         typed(checkPodsRedirected),
	plan.CheckNoSandboxFailures:      typed(checkNoSandboxFailures),
	plan.CheckTagPointsTo:            typed(checkTagPointsTo),
	plan.CheckNoReferences:           typed(checkNoReferences),
	plan.CheckGatewayOwner:           typed(checkGatewayOwner),
	plan.CheckHelmReleaseVersion:     typed(checkHelmReleaseVersion),
	plan.CheckNodeDrained:            typed(checkNodeDrained),
	plan.CheckNodeSchedulable:        typed(checkNodeSchedulable),
	plan.CheckWorkloadsOnRevision:    typed(checkWorkloadsOnRevision),
	plan.CheckTrustedAccounts:        typed(checkTrustedAccounts),
	plan.CheckFindingsClear:          typed(checkFindingsClear),
	plan.CheckDefaultRevision:        typed(checkDefaultRevision),
	plan.CheckBackupReadable:         typed(checkBackupReadable),
	plan.CheckCRDsEstablished:        typed(checkCRDsEstablished),
	plan.CheckRevisionExistsAndReady: typed(checkRevisionReady),
	plan.CheckNodesReady:             typed(checkNodesReady),
	plan.CheckNodeAgentAbsent:        typed(checkNodeAgentAbsent),
	plan.CheckWorkloadsReady:         typed(checkWorkloadsReady),
	plan.CheckNoAmbientPods:          typed(checkNoAmbientPods),
	plan.CheckGatewayProgrammed:      typed(checkGatewayProgrammed),
	plan.CheckWaypointAccepted:       typed(checkWaypointAccepted),
	plan.CheckPodsCaptured:           typed(checkPodsCaptured),
	plan.CheckNoSidecars:             typed(checkNoSidecars),
	plan.CheckSidecarsInjected:       typed(checkSidecarsInjected),
	plan.CheckBackupWritable:         typed(checkBackupWritable),
}

// typed adapts a check over its argument struct: the params are decoded strictly first.
func typed[T plan.Args](f func(cp *checkPass, ctx context.Context, c plan.Check, a T) (bool, string, error)) checkFunc {
	return func(cp *checkPass, ctx context.Context, c plan.Check) (bool, string, error) {
		a, err := plan.ArgsOf[T](c)
		if err != nil {
			return false, "", fmt.Errorf("%w; fix the plan or re-plan", err)
		}
		return f(cp, ctx, c, a)
	}
}

func (cp *checkPass) check(ctx context.Context, c plan.Check) (bool, string, error) {
	f, ok := checkTable[c.Type]
	if !ok {
		return false, "", fmt.Errorf("check type %q is unknown to this executor; upgrade ambientkit or fix the plan", c.Type)
	}
	return f(cp, ctx, c)
}

// nodeOf is the node a check names: its node param, else its object.
func nodeOf(c plan.Check, param string) string {
	if param != "" {
		return param
	}
	return c.Object.Name
}

// nodeExists reads whether a node is still in the cluster.
func (e *engine) nodeExists(ctx context.Context, name string) (bool, error) {
	var n corev1.Node
	return e.get(ctx, client.ObjectKey{Name: name}, &n)
}

// get reads one object, retrying transient errors; found=false when it does not exist.
func (e *engine) get(ctx context.Context, key client.ObjectKey, obj client.Object) (bool, error) {
	found := true
	err := e.retry(ctx, fmt.Sprintf("get %T %s", obj, key), func(ctx context.Context) error {
		err := e.c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			found = false
			return nil
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	return found, nil
}

// list runs one LIST (all pages), retrying transient errors page by page.
func (e *engine) list(ctx context.Context, what string, l client.ObjectList, opts ...client.ListOption) error {
	return e.retry(ctx, "list "+what, func(ctx context.Context) error { return e.c.List(ctx, l, opts...) })
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podTag is the image tag of the pod's first container.
func podTag(p *corev1.Pod) string {
	if len(p.Spec.Containers) == 0 {
		return ""
	}
	return imageTag(p.Spec.Containers[0].Image)
}

// ---- checks on a fresh snapshot ----
