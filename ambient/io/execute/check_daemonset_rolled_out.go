package execute

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func (e *engine) daemonSetRolledOut(ctx context.Context, ns, name, version string) (bool, string, error) {
	var ds appsv1.DaemonSet
	found, err := e.get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds)
	if err != nil || !found {
		return false, fmt.Sprintf("DaemonSet %s/%s does not exist", ns, name), err
	}
	s := ds.Status
	id := "DaemonSet " + ns + "/" + name
	if s.ObservedGeneration < ds.Generation {
		return false, fmt.Sprintf("%s: the controller has not seen generation %d yet (observed %d)", id, ds.Generation, s.ObservedGeneration), nil
	}
	if s.DesiredNumberScheduled == 0 {
		return false, id + ": no node is scheduled to run it", nil
	}
	if version != "" {
		if cs := ds.Spec.Template.Spec.Containers; len(cs) > 0 && !tagMatches(imageTag(cs[0].Image), version) {
			return false, fmt.Sprintf("%s: its template runs %s, want %s", id, cs[0].Image, version), nil
		}
	}
	want := s.DesiredNumberScheduled
	if s.NumberReady != want || s.NumberAvailable != want {
		return false, fmt.Sprintf("%s: %d ready, %d available of %d", id, s.NumberReady, s.NumberAvailable, want), nil
	}
	if s.UpdatedNumberScheduled == want {
		return true, "", nil
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType || version == "" {
		return false, fmt.Sprintf("%s: %d/%d pods updated", id, s.UpdatedNumberScheduled, want), nil
	}
	// OnDelete: updated counts lag by design; accept when every pod runs the version.
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return false, "", fmt.Errorf("%s has an invalid selector: %w", id, err)
	}
	var pods corev1.PodList
	if err := e.list(ctx, "pods of "+id, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, "", err
	}
	good := 0
	var old []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if c := metav1.GetControllerOf(p); c == nil || c.UID != ds.UID || p.DeletionTimestamp != nil {
			continue
		}
		if tagMatches(podTag(p), version) && podReady(p) {
			good++
		} else {
			old = append(old, fmt.Sprintf("%s on %s (%s)", p.Name, p.Spec.NodeName, podTag(p)))
		}
	}
	if int32(good) < want {
		return false, fmt.Sprintf("%s (OnDelete): %d/%d pods ready at %s; not yet: %s", id, good, want, version, plan.ListSome(old, 5)), nil
	}
	return true, "", nil
}

func checkDaemonSetRolledOut(cp *checkPass, ctx context.Context, c plan.Check, a plan.DaemonSetRolledOutArgs) (bool, string, error) {
	return cp.e.daemonSetRolledOut(ctx, c.Object.Namespace, c.Object.Name, a.Version)
}
