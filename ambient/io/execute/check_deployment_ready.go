package execute

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// workload reads a Deployment or StatefulSet: from the run's watch when r is set and its watch keeps
// the kind (watchHub.cached), else from the API server.
func (e *engine) workload(ctx context.Context, r *run, k watchKind, key client.ObjectKey, obj client.Object) (bool, error) {
	if r != nil {
		if found, ok := r.hub.cached(k, key, obj); ok {
			return found, nil
		}
	}
	return e.get(ctx, key, obj)
}

// deploymentReady reports whether a Deployment has all its replicas updated, ready and available;
// r, when set, lets it read the Deployment from the run's watch (see workload).
func (e *engine) deploymentReady(ctx context.Context, r *run, ns, name string) (bool, string, error) {
	var d appsv1.Deployment
	found, err := e.workload(ctx, r, watchDeployments, client.ObjectKey{Namespace: ns, Name: name}, &d)
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

// statefulSetReady reports whether a StatefulSet has all its replicas updated, ready and available,
// on its update revision; r as for deploymentReady.
func (e *engine) statefulSetReady(ctx context.Context, r *run, ns, name string) (bool, string, error) {
	var ss appsv1.StatefulSet
	found, err := e.workload(ctx, r, watchStatefulSets, client.ObjectKey{Namespace: ns, Name: name}, &ss)
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

// rolloutDone reports whether a restarted workload finished rolling out. r, when set, lets it read
// the workload from the run's watch: only for a step that wrote none (a drain), since the watch may
// not have delivered the executor's own write yet.
func (e *engine) rolloutDone(ctx context.Context, r *run, w mesh.ObjectRef) (bool, string, error) {
	switch w.Kind {
	case "Deployment":
		return e.deploymentReady(ctx, r, w.Namespace, w.Name)
	case "StatefulSet":
		return e.statefulSetReady(ctx, r, w.Namespace, w.Name)
	case "DaemonSet":
		return e.daemonSetRolledOut(ctx, w.Namespace, w.Name, "")
	}
	return false, "", fmt.Errorf("cannot follow the rollout of a %s", w.Kind)
}

func checkDeploymentReady(cp *checkPass, ctx context.Context, c plan.Check, _ plan.DeploymentReadyArgs) (bool, string, error) {
	return cp.e.deploymentReady(ctx, nil, c.Object.Namespace, c.Object.Name)
}
