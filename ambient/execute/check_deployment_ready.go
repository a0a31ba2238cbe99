package execute

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func (e *Executor) deploymentReady(ctx context.Context, ns, name string) (bool, string, error) {
	var d appsv1.Deployment
	found, err := e.get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)
	if err != nil || !found {
		return false, fmt.Sprintf("Deployment %s/%s does not exist", ns, name), err
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("Deployment %s/%s: the controller has not seen generation %d yet (observed %d)", ns, name, d.Generation, s.ObservedGeneration), nil
	case want == 0:
		return false, fmt.Sprintf("Deployment %s/%s is scaled to 0", ns, name), nil
	case s.UpdatedReplicas != want || s.ReadyReplicas != want || s.AvailableReplicas != want || s.Replicas != want:
		return false, fmt.Sprintf("Deployment %s/%s: %d/%d updated, %d ready, %d available, %d pods in all", ns, name, s.UpdatedReplicas, want, s.ReadyReplicas, s.AvailableReplicas, s.Replicas), nil
	}
	return true, "", nil
}

func (e *Executor) statefulSetReady(ctx context.Context, ns, name string) (bool, string, error) {
	var ss appsv1.StatefulSet
	found, err := e.get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ss)
	if err != nil || !found {
		return false, fmt.Sprintf("StatefulSet %s/%s does not exist", ns, name), err
	}
	want := ptr.Deref(ss.Spec.Replicas, 1)
	s := ss.Status
	switch {
	case s.ObservedGeneration < ss.Generation:
		return false, fmt.Sprintf("StatefulSet %s/%s: the controller has not seen generation %d yet", ns, name, ss.Generation), nil
	case s.UpdatedReplicas != want || s.ReadyReplicas != want || s.AvailableReplicas != want ||
		(s.UpdateRevision != "" && s.CurrentRevision != s.UpdateRevision):
		return false, fmt.Sprintf("StatefulSet %s/%s: %d/%d updated, %d ready, %d available", ns, name, s.UpdatedReplicas, want, s.ReadyReplicas, s.AvailableReplicas), nil
	}
	return true, "", nil
}

// rolloutDone reports whether a restarted workload finished rolling out.
func (e *Executor) rolloutDone(ctx context.Context, w mesh.ObjectRef) (bool, string, error) {
	switch w.Kind {
	case "Deployment":
		return e.deploymentReady(ctx, w.Namespace, w.Name)
	case "StatefulSet":
		return e.statefulSetReady(ctx, w.Namespace, w.Name)
	case "DaemonSet":
		return e.daemonSetRolledOut(ctx, w.Namespace, w.Name, "")
	}
	return false, "", fmt.Errorf("cannot follow the rollout of a %s", w.Kind)
}

func checkDeploymentReady(cp *checkPass, ctx context.Context, c plan.Check, _ plan.DeploymentReadyArgs) (bool, string, error) {
	return cp.e.deploymentReady(ctx, c.Object.Namespace, c.Object.Name)
}
