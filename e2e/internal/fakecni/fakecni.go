// Package fakecni plays the part of the istio-cni node agent that the API can see: it marks pods that
// ambient mode captures with annotation ambient.istio.io/redirection=enabled, patched on the
// pods/status subresource as the agent does, and removes it from pods that left ambient mode.
//
// A pod is captured (istio-cni rules) when its namespace or the pod is labelled
// istio.io/dataplane-mode=ambient, the pod is not labelled istio.io/dataplane-mode=none, has no
// sidecar.istio.io/status annotation, is not on the host network, is scheduled and not terminating,
// and its namespace is not excluded (kube-system).
package fakecni

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Names the agent uses.
const (
	AnnotationRedirection = "ambient.istio.io/redirection"
	LabelDataplaneMode    = "istio.io/dataplane-mode"
	AnnotationStatus      = "sidecar.istio.io/status"
)

// Agent enrols pods in ambient mode.
type Agent struct {
	cs       kubernetes.Interface
	interval time.Duration
	excluded map[string]bool

	mu      sync.Mutex
	patched int
	cancel  context.CancelFunc
	done    chan struct{}
}

// New makes an agent; Start runs it in the background, Sync runs one pass.
func New(cs kubernetes.Interface, interval time.Duration) *Agent {
	if interval <= 0 {
		interval = time.Second
	}
	return &Agent{cs: cs, interval: interval, excluded: map[string]bool{"kube-system": true}}
}

// Start runs the agent until Stop.
func (a *Agent) Start(ctx context.Context) {
	ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		t := time.NewTicker(a.interval)
		defer t.Stop()
		for {
			_, _ = a.Sync(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the background loop.
func (a *Agent) Stop() {
	if a.cancel != nil {
		a.cancel()
		<-a.done
	}
}

// Patched returns how many pod status patches the agent made.
func (a *Agent) Patched() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.patched
}

// Captured reports whether the CNI captures pod, given its namespace's labels.
func Captured(pod *corev1.Pod, nsLabels map[string]string) bool {
	mode := pod.Labels[LabelDataplaneMode]
	if mode == "" {
		mode = nsLabels[LabelDataplaneMode]
	}
	if mode != "ambient" {
		return false
	}
	if _, sidecar := pod.Annotations[AnnotationStatus]; sidecar {
		return false
	}
	return !pod.Spec.HostNetwork && pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil
}

// Sync runs one pass over every pod and returns how many it changed.
func (a *Agent) Sync(ctx context.Context) (int, error) {
	nss, err := a.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	labels := map[string]map[string]string{}
	for _, n := range nss.Items {
		labels[n.Name] = n.Labels
	}
	pods, err := a.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	changed := 0
	var firstErr error
	for i := range pods.Items {
		p := &pods.Items[i]
		if a.excluded[p.Namespace] {
			continue
		}
		want := Captured(p, labels[p.Namespace])
		cur, has := p.Annotations[AnnotationRedirection]
		var value any
		switch {
		case want && cur != "enabled":
			value = "enabled"
		case !want && has && p.DeletionTimestamp == nil:
			value = nil // un-enrolled: the agent removes the annotation
		default:
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationRedirection: value}}})
		_, err := a.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("patch pod %s/%s status: %w", p.Namespace, p.Name, err)
			}
			continue
		}
		changed++
	}
	a.mu.Lock()
	a.patched += changed
	a.mu.Unlock()
	return changed, firstErr
}
