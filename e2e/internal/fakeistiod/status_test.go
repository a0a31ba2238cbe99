package fakeistiod

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func obj(api, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": api, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
	u.SetGeneration(3)
	return u
}

func conditionOf(t *testing.T, w *StatusWriter, gvrIndex int, name, typ string) map[string]any {
	t.Helper()
	gvr := GatewaysResource
	if gvrIndex >= 0 {
		gvr = PolicyResources[gvrIndex]
	}
	u, err := w.opts.Dynamic.Resource(gvr).Namespace("shop").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

func TestStatusWriterPlaysIstiodForWaypointsAndTargetRefsPolicies(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		GatewaysResource: "GatewayList", PolicyResources[0]: "AuthorizationPolicyList", PolicyResources[1]: "RequestAuthenticationList",
	})
	for gvr, objs := range map[schema.GroupVersionResource][]*unstructured.Unstructured{
		GatewaysResource: {
			obj("gateway.networking.k8s.io/v1", "Gateway", "shop", "waypoint", map[string]any{"gatewayClassName": "istio-waypoint"}),
			obj("gateway.networking.k8s.io/v1", "Gateway", "shop", "ingress", map[string]any{"gatewayClassName": "istio"}),
		},
		PolicyResources[0]: {
			obj("security.istio.io/v1", "AuthorizationPolicy", "shop", "on-gateway", map[string]any{"targetRefs": []any{map[string]any{"kind": "Gateway", "name": "waypoint"}}}),
			obj("security.istio.io/v1", "AuthorizationPolicy", "shop", "on-service", map[string]any{"targetRefs": []any{map[string]any{"kind": "Service", "name": "web"}}}),
			obj("security.istio.io/v1", "AuthorizationPolicy", "shop", "on-nothing", map[string]any{"targetRefs": []any{map[string]any{"kind": "Gateway", "name": "gone"}}}),
			obj("security.istio.io/v1", "AuthorizationPolicy", "shop", "by-selector", map[string]any{"selector": map[string]any{}}),
		},
	} {
		for _, o := range objs {
			if _, err := dyn.Resource(gvr).Namespace("shop").Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cs := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}},
	)
	w := &StatusWriter{opts: StatusOptions{Dynamic: dyn, Client: cs, Namespaces: []string{"shop"}, Logf: t.Logf}}
	if _, err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if c := conditionOf(t, w, -1, "waypoint", ConditionProgrammed); c == nil || c["status"] != "True" || c["observedGeneration"] != int64(3) {
		t.Errorf("waypoint Programmed = %v", c)
	}
	if c := conditionOf(t, w, -1, "ingress", ConditionProgrammed); c != nil {
		t.Errorf("a gateway of another class got %v", c)
	}
	for name, want := range map[string]string{"on-gateway": "Accepted", "on-service": "AncestorNotBound", "on-nothing": "TargetNotFound"} {
		if c := conditionOf(t, w, 0, name, ConditionWaypointAccepted); c == nil || c["reason"] != want {
			t.Errorf("%s WaypointAccepted = %v, want reason %s", name, c, want)
		}
	}
	if c := conditionOf(t, w, 0, "by-selector", ConditionWaypointAccepted); c != nil {
		t.Errorf("a selector policy got %v", c)
	}
	// Binding the namespace to the waypoint makes the Service policy accepted on the next pass.
	if _, err := cs.CoreV1().Namespaces().Update(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop",
		Labels: map[string]string{LabelUseWaypoint: "waypoint"}}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Sync(ctx); err != nil || n != 1 {
		t.Fatalf("second pass changed %d, %v; want 1", n, err)
	}
	if c := conditionOf(t, w, 0, "on-service", ConditionWaypointAccepted); c == nil || c["status"] != "True" {
		t.Errorf("on-service after binding = %v", c)
	}
}
