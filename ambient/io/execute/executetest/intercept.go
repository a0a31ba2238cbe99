package executetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// funcs routes every call of the fake client through the world: the fault plan, the effects log
// and the controllers the cluster would run after a write.
func (w *World) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get:               w.interceptGet,
		List:              w.interceptList,
		Create:            w.interceptCreate,
		Update:            w.interceptUpdate,
		Patch:             w.interceptPatch,
		Apply:             w.interceptApply,
		Delete:            w.interceptDelete,
		Watch:             w.interceptWatch,
		SubResourceCreate: w.interceptSubResourceCreate,
	}
}

// interceptGet is the fake client's Get.
func (w *World) interceptGet(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	k := w.kindOf(obj)
	if err := w.pre(ctx, "get", k, IsBookkeeping(k, key.Name)); err != nil {
		return err
	}
	if err := c.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if sec, ok := obj.(*corev1.Secret); ok && strings.HasPrefix(key.Name, "ambientkit-backup-") {
		w.mu.Lock()
		tamper := w.tamperBackups
		w.gen["tamper"]++
		n := w.gen["tamper"]
		w.mu.Unlock()
		if tamper && n > 2 { // the read-back after writing and the verification see it intact; later reads do not
			sec.Data["backup.json"] = append(sec.Data["backup.json"], ' ')
		}
	}
	return nil
}

// interceptList is the fake client's List.
func (w *World) interceptList(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	if err := w.pre(ctx, "list", strings.TrimSuffix(w.kindOf(list), "List"), false); err != nil {
		return err
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return err
	}
	if pods, ok := list.(*corev1.PodList); ok {
		w.readyAfterLook(ctx, pods)
	}
	return nil
}

// interceptCreate is the fake client's Create.
func (w *World) interceptCreate(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	k := w.kindOf(obj)
	book := IsBookkeeping(k, obj.GetName())
	if err := w.pre(ctx, "create", k, book); err != nil {
		return err
	}
	if err := c.Create(ctx, obj, opts...); err != nil {
		return err
	}
	if dryRunCreate(opts) {
		return nil
	}
	if !book {
		w.effect("create " + ref(k, obj.GetNamespace(), obj.GetName()))
	}
	if k == "Deployment" {
		w.reconcileDeployment(ctx, obj.GetNamespace(), obj.GetName())
	}
	return w.wrote()
}

// interceptUpdate is the fake client's Update.
func (w *World) interceptUpdate(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	k := w.kindOf(obj)
	book := IsBookkeeping(k, obj.GetName())
	if err := w.pre(ctx, "update", k, book); err != nil {
		return err
	}
	before := w.nodeLabels(ctx, k, obj.GetName())
	if err := c.Update(ctx, obj, opts...); err != nil {
		return err
	}
	if !book {
		w.effect("update " + ref(k, obj.GetNamespace(), obj.GetName()))
	}
	if k == "Node" {
		w.nodeChanged(ctx, obj.GetName(), before)
	}
	return w.wrote()
}

// interceptPatch is the fake client's Patch.
func (w *World) interceptPatch(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	k := w.kindOf(obj)
	book := IsBookkeeping(k, obj.GetName())
	if err := w.pre(ctx, "patch", k, book); err != nil {
		return err
	}
	before := restartStamp(ctx, w.Base, obj, k)
	labelsBefore := w.nodeLabels(ctx, k, obj.GetName())
	if err := c.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	if dryRunPatch(opts) {
		return nil
	}
	if !book {
		body, _ := patch.Data(obj)
		w.effect("patch " + ref(k, obj.GetNamespace(), obj.GetName()) + " " + string(body))
	}
	if after := restartStamp(ctx, w.Base, obj, k); after != before {
		w.rollWorkload(ctx, k, obj.GetNamespace(), obj.GetName())
	}
	if k == "Node" {
		w.nodeChanged(ctx, obj.GetName(), labelsBefore)
	}
	w.afterWrite(ctx, k, obj.GetNamespace(), obj.GetName())
	return w.wrote()
}

// interceptApply is the fake client's Apply.
func (w *World) interceptApply(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	b, _ := json.Marshal(obj)
	var u unstructured.Unstructured
	_ = json.Unmarshal(b, &u.Object)
	book := IsBookkeeping(u.GetKind(), u.GetName())
	if err := w.pre(ctx, "apply", u.GetKind(), book); err != nil {
		return err
	}
	ao := &client.ApplyOptions{}
	ao.ApplyOptions(opts)
	if len(ao.DryRun) > 0 {
		return nil // the fake client drops dryRun on Apply (it converts to a patch without it)
	}
	if err := c.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	if !book {
		w.effect("apply " + ref(u.GetKind(), u.GetNamespace(), u.GetName()))
	}
	if u.GetKind() == "Deployment" {
		w.reconcileDeployment(ctx, u.GetNamespace(), u.GetName())
	}
	w.afterWrite(ctx, u.GetKind(), u.GetNamespace(), u.GetName())
	return w.wrote()
}

// interceptDelete is the fake client's Delete.
func (w *World) interceptDelete(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	k := w.kindOf(obj)
	book := IsBookkeeping(k, obj.GetName())
	if err := w.pre(ctx, "delete", k, book); err != nil {
		return err
	}
	do := &client.DeleteOptions{}
	do.ApplyOptions(opts)
	var before corev1.Pod
	isPod := k == "Pod"
	if isPod {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &before); err != nil {
			return err
		}
		if do.Preconditions != nil && do.Preconditions.UID != nil && *do.Preconditions.UID != before.UID {
			return apierrors.NewConflict(gr, obj.GetName(), fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *do.Preconditions.UID, before.UID))
		}
	}
	if err := c.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	if len(do.DryRun) > 0 {
		return nil
	}
	if !book {
		w.effect("delete " + ref(k, obj.GetNamespace(), obj.GetName()))
	}
	switch k {
	case "Pod":
		w.podGone(ctx, &before)
	case "Deployment", "StatefulSet", "DaemonSet", "Job":
		w.collect(ctx, k, obj.GetNamespace(), obj.GetName())
	}
	w.afterWrite(ctx, k, obj.GetNamespace(), obj.GetName())
	return w.wrote()
}

// interceptWatch is the fake client's Watch.
func (w *World) interceptWatch(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	if err := w.pre(ctx, "watch", strings.TrimSuffix(w.kindOf(list), "List"), false); err != nil {
		return nil, err
	}
	return c.Watch(ctx, list, opts...)
}

// interceptSubResourceCreate is the fake client's SubResourceCreate.
func (w *World) interceptSubResourceCreate(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
	if err := w.pre(ctx, "create", "Pod/"+sub, false); err != nil {
		return err
	}
	if sub != "eviction" {
		return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
	}
	ev := subObj.(*policyv1.Eviction)
	key := ev.Namespace + "/" + ev.Name
	var pod corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: ev.Name}, &pod); err != nil {
		return err
	}
	w.mu.Lock()
	n, refused := w.refuse[key]
	if refused && n != 0 {
		w.refuse[key] = n - 1
	}
	w.mu.Unlock()
	if refused && n != 0 {
		return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	}
	if budget, ok := w.budgetRefuses(ctx, &pod); !ok {
		// As the API server answers: the budget, by name, in a cause of type DisruptionBudget.
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
		_, name, _ := strings.Cut(budget, "/")
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", name)})
		return err
	}
	so := &client.SubResourceCreateOptions{}
	so.ApplyOptions(opts)
	if len(so.DryRun) > 0 || (ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0) {
		return nil
	}
	if err := c.Delete(ctx, &pod); err != nil {
		return err
	}
	w.effect("evict " + key)
	w.podGone(ctx, &pod)
	return w.wrote()
}

func dryRunPatch(opts []client.PatchOption) bool {
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	return len(po.DryRun) > 0
}

func dryRunCreate(opts []client.CreateOption) bool {
	co := &client.CreateOptions{}
	co.ApplyOptions(opts)
	return len(co.DryRun) > 0
}
