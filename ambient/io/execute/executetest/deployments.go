package executetest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reconcileDeployment plays the Deployment and ReplicaSet controllers for a Deployment a run
// created or applied: pods up to its replicas, made from its template and owned by its ReplicaSet
// (pod-template-hash), placed as the scheduler would (Pending while no node fits), injected or
// captured as their namespace says; its status follows its pods. Deployments the world was built
// with already have their pods and are left alone when they do.
func (w *World) reconcileDeployment(ctx context.Context, ns, name string) {
	var d appsv1.Deployment
	if err := w.Base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		return
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return
	}
	have := int32(0)
	for i := range pods.Items {
		if o := ownerOf(&pods.Items[i]); o.kind == "Deployment" && o.name == name && pods.Items[i].DeletionTimestamp == nil {
			have++
		}
	}
	hash := templateHash(&d.Spec.Template)
	for ; have < want; have++ {
		w.createPod(ctx, w.deploymentPod(ctx, &d, hash))
	}
	w.syncWorkload(ctx, ns, owner{"Deployment", name})
}

// deploymentPod is a new pod of the Deployment's ReplicaSet, scheduled and injected.
func (w *World) deploymentPod(ctx context.Context, d *appsv1.Deployment, hash string) *corev1.Pod {
	rs := d.Name + "-" + hash
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Labels: copyLabels(d.Spec.Template.Labels),
		Annotations: copyLabels(d.Spec.Template.Annotations),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
			UID: types.UID("uid-rs-" + d.Namespace + "-" + rs), Controller: ptr.To(true)}}}}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["pod-template-hash"] = hash
	p.Spec = *d.Spec.Template.Spec.DeepCopy()
	p.Name = w.nextName(rs)
	p.UID = types.UID("uid-" + p.Namespace + "-" + p.Name + fmt.Sprint(w.nextGen("uid")))
	p.Spec.NodeName = w.schedule(ctx, p, "")
	w.inject(ctx, p)
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if p.Spec.NodeName != "" {
		p.Status = readyStatus()
	}
	return p
}

// schedulePending plays the scheduler once nodes changed: every Pending pod without a node that now
// fits one is bound to it and runs, captured as its namespace says; the owners' status follows.
func (w *World) schedulePending(ctx context.Context) {
	// Only unscheduled pods can be pending a node: the spec.nodeName index holds them under "", so a
	// cordon of one node of many does not read every pod of the mesh.
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods, client.MatchingFields{"spec.nodeName": ""}); err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		node := w.schedule(ctx, p, "")
		if node == "" {
			continue
		}
		// The fake client keeps spec.nodeName writable; a real scheduler binds through pods/binding.
		p.Spec.NodeName = node
		w.inject(ctx, p)
		p.Status = readyStatus()
		if err := w.Base.Update(ctx, p); err != nil {
			continue
		}
		_ = w.Base.Status().Update(ctx, p)
		w.syncWorkload(ctx, p.Namespace, ownerOf(p))
	}
}

// templateHash is a short stable hash of a pod template, as the ReplicaSet name suffix.
func templateHash(t *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%08x", h.Sum32())
}
