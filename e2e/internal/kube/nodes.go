package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Cordon sets or clears a node's unschedulable flag.
func Cordon(ctx context.Context, cs kubernetes.Interface, node string, unschedulable bool) error {
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": unschedulable}})
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("set node %s unschedulable=%v: %w", node, unschedulable, err)
	}
	return nil
}

// EvictAll evicts every pod on the node that no DaemonSet owns, through the Eviction API (so
// PodDisruptionBudgets hold it), retrying refused evictions, until none is left or timeout.
func EvictAll(ctx context.Context, cs kubernetes.Interface, node string, timeout time.Duration) error {
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false, nil
		}
		left = left[:0]
		for _, p := range pods.Items {
			if c := metav1.GetControllerOf(&p); (c != nil && c.Kind == "DaemonSet") || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			left = append(left, p.Namespace+"/"+p.Name)
			if p.DeletionTimestamp != nil {
				continue
			}
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
			if err := cs.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsTooManyRequests(err) {
				return false, fmt.Errorf("evict %s/%s: %w", p.Namespace, p.Name, err)
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("evict the pods of node %s: %w (still there: %v)", node, err, left)
	}
	return nil
}

// WaitDaemonSetPodOn polls until a ready pod of the DaemonSet runs on the node.
func WaitDaemonSetPodOn(ctx context.Context, cs kubernetes.Interface, ns, ds, node string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			c := metav1.GetControllerOf(&p)
			if c == nil || c.Kind != "DaemonSet" || c.Name != ds || p.DeletionTimestamp != nil {
				continue
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("no ready pod of DaemonSet %s/%s on node %s after %s", ns, ds, node, timeout)
	}
	return nil
}

// DeletePodsOn force-deletes every pod bound to the node, as the pod garbage collector does once a
// node is gone.
func DeletePodsOn(ctx context.Context, cs kubernetes.Interface, node string) error {
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return fmt.Errorf("list the pods of node %s: %w", node, err)
	}
	zero := int64(0)
	for _, p := range pods.Items {
		if err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s of node %s: %w", p.Namespace, p.Name, node, err)
		}
	}
	return nil
}
