package executetest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// SimulateMigration turns on what a sidecar → ambient namespace migration needs of the world besides
// injection, as the real cluster does it:
//
//   - istio-cni captures the running pods of a namespace (no sidecar, not opted out, not on the host
//     network) when it is labelled istio.io/dataplane-mode=ambient, and releases them when the label
//     goes, without a restart;
//   - istiod writes status: Programmed=True on every Gateway of class istio-waypoint (except those
//     named with NeverProgram), and WaypointAccepted on every policy attached with targetRefs: True
//     when the Gateway it names is such a waypoint, or the Service it names is bound to one through
//     istio.io/use-waypoint (on the Service or its namespace); False with TargetNotFound or
//     AncestorNotBound otherwise.
//
// Status is rewritten after every write that can change it (applies, creates, deletes, label
// patches). Policies of the kinds in MigrationPolicyKinds are considered.
func (w *World) SimulateMigration() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.migration = true
}

// NeverProgram keeps the waypoint Gateway "namespace/name" from ever becoming Programmed, as when
// istiod cannot deploy it.
func (w *World) NeverProgram(gateway string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.unprogrammed == nil {
		w.unprogrammed = map[string]bool{}
	}
	w.unprogrammed[gateway] = true
}

// MigrationPolicyKinds are the policy kinds SimulateMigration writes WaypointAccepted on, with their
// API versions.
var MigrationPolicyKinds = map[string]string{
	"AuthorizationPolicy":   "security.istio.io/v1",
	"RequestAuthentication": "security.istio.io/v1",
}

// afterWrite plays the simulations after a write to an object of the kind in namespace ns.
func (w *World) afterWrite(ctx context.Context, kind, ns, name string) {
	if kind == "MutatingWebhookConfiguration" || kind == "Gateway" {
		w.reconcileWaypoints(ctx)
	}
	w.mu.Lock()
	on := w.migration
	w.mu.Unlock()
	if !on {
		return
	}
	switch kind {
	case "Namespace":
		w.capture(ctx, name)
		w.istiodStatus(ctx, name)
	case "Gateway", "Service", "AuthorizationPolicy", "RequestAuthentication":
		w.istiodStatus(ctx, ns)
	}
}

// capture plays istio-cni for the running pods of a namespace.
func (w *World) capture(ctx context.Context, ns string) {
	var n corev1.Namespace
	if err := w.Base.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		return
	}
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		mode := p.Labels[mesh.LabelDataplaneMode]
		_, sidecar := p.Annotations[mesh.AnnotationSidecarStatus]
		want := !sidecar && !p.Spec.HostNetwork && mode != "none" && (mode == "ambient" || n.Labels[mesh.LabelDataplaneMode] == "ambient")
		_, has := p.Annotations[mesh.AnnotationRedirection]
		switch {
		case want && !has:
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[mesh.AnnotationRedirection] = "enabled"
		case !want && has:
			delete(p.Annotations, mesh.AnnotationRedirection)
		default:
			continue
		}
		_ = w.Base.Update(ctx, p)
	}
}

// istiodStatus plays istiod's status writer for the waypoints and targetRefs policies of a namespace.
func (w *World) istiodStatus(ctx context.Context, ns string) {
	waypoints := map[string]bool{}
	gws := &unstructured.UnstructuredList{}
	gws.SetAPIVersion("gateway.networking.k8s.io/v1")
	gws.SetKind("GatewayList")
	if err := w.Base.List(ctx, gws, client.InNamespace(ns)); err == nil {
		for i := range gws.Items {
			g := &gws.Items[i]
			class, _, _ := unstructured.NestedString(g.Object, "spec", "gatewayClassName")
			if class != "istio-waypoint" {
				continue
			}
			waypoints[g.GetName()] = true
			w.mu.Lock()
			stuck := w.unprogrammed[ns+"/"+g.GetName()]
			w.mu.Unlock()
			if !stuck {
				setCondition(ctx, w.Base, g, "Programmed", "True", "Programmed", "the waypoint's Deployment and Service are ready")
			}
		}
	}
	var nsObj corev1.Namespace
	_ = w.Base.Get(ctx, client.ObjectKey{Name: ns}, &nsObj)
	for kind, api := range MigrationPolicyKinds {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(api)
		list.SetKind(kind + "List")
		if err := w.Base.List(ctx, list, client.InNamespace(ns)); err != nil {
			continue
		}
		for i := range list.Items {
			p := &list.Items[i]
			refs, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetRefs")
			if ref, ok, _ := unstructured.NestedMap(p.Object, "spec", "targetRef"); ok {
				refs = append([]any{ref}, refs...)
			}
			if len(refs) == 0 {
				continue
			}
			status, reason, msg := "True", "Accepted", "bound to a waypoint"
			for _, ri := range refs {
				ref, _ := ri.(map[string]any)
				kind, _ := ref["kind"].(string)
				name, _ := ref["name"].(string)
				switch kind {
				case "Gateway":
					if !waypoints[name] {
						status, reason, msg = "False", "TargetNotFound", "waypoint "+ns+"/"+name+" not found"
					}
				case "Service":
					var svc corev1.Service
					if err := w.Base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
						status, reason, msg = "False", "TargetNotFound", "Service "+ns+"/"+name+" not found"
						continue
					}
					wp := svc.Labels[mesh.LabelUseWaypoint]
					if wp == "" {
						wp = nsObj.Labels[mesh.LabelUseWaypoint]
					}
					if wp == "" || wp == "none" || !waypoints[wp] {
						status, reason, msg = "False", "AncestorNotBound", "Service "+ns+"/"+name+" is not bound to a waypoint"
					}
				}
			}
			setCondition(ctx, w.Base, p, mesh.ConditionWaypointAccepted, status, reason, msg)
		}
	}
}

// setCondition writes one status condition for the object's generation, when it differs.
func setCondition(ctx context.Context, c client.Client, u *unstructured.Unstructured, typ, status, reason, msg string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	cond := map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
		"observedGeneration": u.GetGeneration(), "lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z")}
	var out []any
	for _, ci := range conds {
		m, _ := ci.(map[string]any)
		if m["type"] == typ {
			if m["status"] == status && m["reason"] == reason && m["message"] == msg {
				return
			}
			continue
		}
		out = append(out, ci)
	}
	out = append(out, cond)
	if err := unstructured.SetNestedSlice(u.Object, out, "status", "conditions"); err != nil {
		return
	}
	_ = c.Update(ctx, u)
}
