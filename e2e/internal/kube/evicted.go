package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Evicted reports whether the Eviction API is taking p off its node: p is terminating, no DaemonSet
// controls it, and it carries the condition DisruptionTarget=True with reason EvictionByEvictionAPI,
// which the API server's eviction handler sets before it deletes the pod (a rollout's or a
// controller's deletion sets none).
func Evicted(p *corev1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI" {
			return true
		}
	}
	return false
}

// PodReady reports whether p's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
