package executetest

import (
	"context"
	"encoding/json"
	"sort"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// The world plays the API server's authorizer: it answers SelfSubjectAccessReviews, allowing
// everything but what Deny names, and it records every request that reaches it as the permission the
// authorizer would check (Requests). Reviews are neither counted among the calls nor failed by
// InjectFaults or Kill: they are the preflight's, before any change.

// Deny makes the world refuse, from now on, every permission one of the rules grants: reviews of it
// answer not allowed. Deny() with no rule allows everything again. (Requests themselves are still
// served: the preflight is what must stop a run.)
func (w *World) Deny(rules ...rbac.Rule) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.denied = append([]rbac.Rule(nil), rules...)
}

// Reviews returns the permissions the SelfSubjectAccessReviews asked about, in order.
func (w *World) Reviews() []rbac.Permission {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]rbac.Permission(nil), w.reviews...)
}

// Requests returns every request that reached the world through Client, as the permission the API
// server authorizes for it (a server-side apply is a patch, and a create when the object did not
// exist), without repeats, sorted.
func (w *World) Requests() []rbac.Permission {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]rbac.Permission, 0, len(w.requests))
	for p := range w.requests {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func (w *World) review(r *authorizationv1.SelfSubjectAccessReview) error {
	a := r.Spec.ResourceAttributes
	if a == nil {
		return apierrors.NewBadRequest("executetest: only resource attributes are reviewed")
	}
	p := rbac.Permission{Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reviews = append(w.reviews, p)
	r.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: !rbac.Allowed(w.denied, p)}
	if !r.Status.Allowed {
		r.Status.Reason = "denied by World.Deny"
	}
	return nil
}

// request records one request.
func (w *World) request(verb string, gvk schema.GroupVersionKind, sub, ns, name string) {
	res := ""
	if m, err := w.Base.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		res = m.Resource.Resource
	} else {
		_, res = rbac.Resource(gvk.GroupVersion().String(), gvk.Kind)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.requests == nil {
		w.requests = map[rbac.Permission]bool{}
	}
	w.requests[rbac.Permission{Verb: verb, Group: gvk.Group, Resource: res, Subresource: sub, Namespace: ns, Name: name}] = true
}

func (w *World) gvkOf(obj runtime.Object) schema.GroupVersionKind {
	if u, ok := obj.(interface {
		GroupVersionKind() schema.GroupVersionKind
	}); ok && !u.GroupVersionKind().Empty() {
		return u.GroupVersionKind()
	}
	gvk, _ := apiutil.GVKForObject(obj, w.Base.Scheme())
	return gvk
}

func listGVK(gvk schema.GroupVersionKind) schema.GroupVersionKind {
	if k := gvk.Kind; len(k) > 4 && k[len(k)-4:] == "List" {
		gvk.Kind = k[:len(k)-4]
	}
	return gvk
}

// recorded wraps the world's interceptors: reviews are answered first, every other request is
// recorded, then handed on. Requests are served one at a time (the world's simulations of the
// controllers read, then write), in whatever order concurrent callers make them; a watch is served
// from the store as it changes.
func (w *World) recorded(f interceptor.Funcs) interceptor.Funcs {
	get, list, create, update, patch, apply, del, sub, wat := f.Get, f.List, f.Create, f.Update, f.Patch, f.Apply, f.Delete, f.SubResourceCreate, f.Watch
	f.Get = func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		defer w.serve()()
		w.request("get", w.gvkOf(obj), "", key.Namespace, key.Name)
		return get(ctx, c, key, obj, opts...)
	}
	f.List = func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		defer w.serve()()
		lo := &client.ListOptions{}
		lo.ApplyOptions(opts)
		w.request("list", listGVK(w.gvkOf(l)), "", lo.Namespace, "")
		return list(ctx, c, l, opts...)
	}
	f.Watch = func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
		lo := &client.ListOptions{}
		lo.ApplyOptions(opts)
		w.request("watch", listGVK(w.gvkOf(l)), "", lo.Namespace, "")
		return wat(ctx, c, l, opts...)
	}
	f.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if r, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
			return w.review(r)
		}
		defer w.serve()()
		w.request("create", w.gvkOf(obj), "", obj.GetNamespace(), "") // a POST names no object
		return create(ctx, c, obj, opts...)
	}
	f.Update = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		defer w.serve()()
		w.request("update", w.gvkOf(obj), "", obj.GetNamespace(), obj.GetName())
		return update(ctx, c, obj, opts...)
	}
	f.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		defer w.serve()()
		w.request("patch", w.gvkOf(obj), "", obj.GetNamespace(), obj.GetName())
		return patch(ctx, c, obj, p, opts...)
	}
	f.Apply = func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
		defer w.serve()()
		b, _ := json.Marshal(obj)
		u := &unstructured.Unstructured{}
		_ = json.Unmarshal(b, &u.Object)
		gvk := u.GroupVersionKind()
		w.request("patch", gvk, "", u.GetNamespace(), u.GetName())
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		if err := w.Base.Get(ctx, client.ObjectKeyFromObject(u), live); apierrors.IsNotFound(err) {
			w.request("create", gvk, "", u.GetNamespace(), u.GetName()) // an apply that creates is authorized as a create of that name
		}
		return apply(ctx, c, obj, opts...)
	}
	f.Delete = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		defer w.serve()()
		w.request("delete", w.gvkOf(obj), "", obj.GetNamespace(), obj.GetName())
		return del(ctx, c, obj, opts...)
	}
	f.SubResourceCreate = func(ctx context.Context, c client.Client, s string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
		defer w.serve()()
		w.request("create", w.gvkOf(obj), s, obj.GetNamespace(), obj.GetName())
		return sub(ctx, c, s, obj, subObj, opts...)
	}
	return f
}

// serve takes the world's API for one request; the returned func gives it back.
func (w *World) serve() func() {
	w.api.Lock()
	return w.api.Unlock
}
