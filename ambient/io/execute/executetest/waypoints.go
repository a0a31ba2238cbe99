package executetest

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// reconcileWaypoints plays istiod's gateway deployment controller for waypoints: the revision that
// controls a Gateway of class istio-waypoint (its istio.io/rev label, a tag resolved through the tag
// webhooks, else the default revision) renders the Gateway's Deployment with its own proxy image and
// its name in the pod template's istio.io/rev annotation, so that a tag move or an istiod upgrade
// rolls the waypoint's pods to the new proxy (istio/istio@1.30.3
// pilot/pkg/config/kube/gateway/deploymentcontroller.go: each revision reconciles the Gateways it
// controls, and renders the deployment template with its ProxyImage). It runs after the writes that
// can change the controlling revision or its version: webhook configurations, Gateways, charts.
func (w *World) reconcileWaypoints(ctx context.Context) {
	var gws unstructured.UnstructuredList
	gws.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "GatewayList"})
	if err := w.Base.List(ctx, &gws); err != nil {
		return
	}
	type resolved struct{ rev, version string }
	seen := map[string]resolved{} // by tag or revision name: one lookup each, not one per waypoint
	for _, g := range gws.Items {
		if class, _, _ := unstructured.NestedString(g.Object, "spec", "gatewayClassName"); class != "istio-waypoint" {
			continue
		}
		want := g.GetLabels()[mesh.LabelRev]
		if want == "" {
			want = "default"
		}
		r, ok := seen[want]
		if !ok {
			r.rev, r.version = w.revisionVersion(ctx, want)
			seen[want] = r
		}
		rev, version := r.rev, r.version
		if version == "" {
			continue // no istiod controls it: nothing renders it
		}
		var d appsv1.Deployment
		if err := w.Base.Get(ctx, client.ObjectKey{Namespace: g.GetNamespace(), Name: g.GetName()}, &d); err != nil {
			continue
		}
		image := "docker.io/istio/proxyv2:" + version
		changed := false
		for i := range d.Spec.Template.Spec.Containers {
			if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "istio-proxy" && c.Image != image {
				c.Image, changed = image, true
			}
		}
		if d.Spec.Template.Annotations[mesh.LabelRev] != rev {
			if d.Spec.Template.Annotations == nil {
				d.Spec.Template.Annotations = map[string]string{}
			}
			d.Spec.Template.Annotations[mesh.LabelRev], changed = rev, true
		}
		if !changed {
			continue
		}
		if err := w.Base.Update(ctx, &d); err != nil {
			continue
		}
		// The new template's pods replace the old ones (the waypoint's budget, if any, is the
		// controller's business, not a drain's).
		var pods corev1.PodList
		if err := w.Base.List(ctx, &pods, client.InNamespace(d.Namespace)); err != nil {
			continue
		}
		for i := range pods.Items {
			if o := ownerOf(&pods.Items[i]); o.kind == "Deployment" && o.name == d.Name {
				_ = w.Base.Delete(ctx, &pods.Items[i])
			}
		}
		w.reconcileDeployment(ctx, d.Namespace, d.Name)
	}
}
