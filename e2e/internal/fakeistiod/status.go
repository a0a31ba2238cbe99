package fakeistiod

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Resources whose status the status writer keeps.
var (
	GatewaysResource = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	// PolicyResources are the policies attached with targetRefs that istiod writes WaypointAccepted on.
	PolicyResources = []schema.GroupVersionResource{
		{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"},
		{Group: "security.istio.io", Version: "v1", Resource: "requestauthentications"},
	}
)

// Names the status writer uses.
const (
	WaypointClass             = "istio-waypoint"
	ConditionProgrammed       = "Programmed"
	ConditionAccepted         = "Accepted"
	ConditionWaypointAccepted = "WaypointAccepted"
	LabelUseWaypoint          = "istio.io/use-waypoint"
)

// StatusOptions configure StartStatus.
type StatusOptions struct {
	// Dynamic writes the status of Gateways and policies; Client reads namespaces and Services.
	Dynamic dynamic.Interface
	Client  kubernetes.Interface
	// Namespaces limits the writer to these namespaces (every namespace when empty).
	Namespaces []string
	// Interval between passes; default 300ms.
	Interval time.Duration
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// StatusWriter plays the status part of istiod for e2e clusters where no istiod runs: it marks every
// Gateway of class istio-waypoint Accepted and Programmed (istiod does so once the waypoint's
// Deployment and Service are up; on kwok nothing deploys them), and writes WaypointAccepted on every
// policy attached with targetRefs, the way pilot/pkg/serviceregistry/ambient/policies.go decides it:
// True when the Gateway it names is a waypoint, or the Service it names is bound to one through
// istio.io/use-waypoint (on the Service, else its namespace); False with TargetNotFound when the
// target does not exist, AncestorNotBound when a Service has no waypoint. Conditions carry the
// object's generation.
type StatusWriter struct {
	opts   StatusOptions
	mu     sync.Mutex
	writes int
	cancel context.CancelFunc
	done   chan struct{}
}

// StartStatus runs a first pass and then keeps writing status in the background until Stop.
func StartStatus(ctx context.Context, opts StatusOptions) (*StatusWriter, error) {
	if opts.Dynamic == nil || opts.Client == nil {
		return nil, fmt.Errorf("fakeistiod: StatusOptions.Dynamic and Client are required")
	}
	if opts.Interval <= 0 {
		opts.Interval = 300 * time.Millisecond
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	w := &StatusWriter{opts: opts, done: make(chan struct{})}
	if _, err := w.Sync(ctx); err != nil {
		return nil, err
	}
	loop, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	go func() {
		defer close(w.done)
		t := time.NewTicker(opts.Interval)
		defer t.Stop()
		for {
			select {
			case <-loop.Done():
				return
			case <-t.C:
				if _, err := w.Sync(loop); err != nil && loop.Err() == nil {
					w.opts.Logf("fake istiod status: %v", err)
				}
			}
		}
	}()
	return w, nil
}

// Stop ends the background passes.
func (w *StatusWriter) Stop() {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
}

// Writes counts the status updates made so far.
func (w *StatusWriter) Writes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// Sync runs one pass and returns how many objects' status it changed.
func (w *StatusWriter) Sync(ctx context.Context) (int, error) {
	namespaces := w.opts.Namespaces
	if len(namespaces) == 0 {
		nss, err := w.opts.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		for _, n := range nss.Items {
			namespaces = append(namespaces, n.Name)
		}
	}
	changed := 0
	for _, ns := range namespaces {
		n, err := w.syncNamespace(ctx, ns)
		changed += n
		if err != nil {
			return changed, err
		}
	}
	w.mu.Lock()
	w.writes += changed
	w.mu.Unlock()
	return changed, nil
}

func (w *StatusWriter) syncNamespace(ctx context.Context, ns string) (int, error) {
	changed := 0
	gws, err := w.opts.Dynamic.Resource(GatewaysResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("list Gateways in %s: %w", ns, err)
	}
	waypoints := map[string]bool{}
	for i := range gws.Items {
		g := &gws.Items[i]
		if class, _, _ := unstructured.NestedString(g.Object, "spec", "gatewayClassName"); class != WaypointClass {
			continue
		}
		waypoints[g.GetName()] = true
		c1 := setCondition(g, ConditionAccepted, "True", "Accepted", "Resource accepted")
		c2 := setCondition(g, ConditionProgrammed, "True", "Programmed", "Resource programmed, assigned to service(s) "+g.GetName()+"."+ns+".svc.cluster.local:15008")
		if c1 || c2 {
			if _, err := w.opts.Dynamic.Resource(GatewaysResource).Namespace(ns).UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return changed, fmt.Errorf("write status of Gateway %s/%s: %w", ns, g.GetName(), err)
			}
			changed++
		}
	}
	nsObj, err := w.opts.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return changed, nil
		}
		return changed, err
	}
	for _, gvr := range PolicyResources {
		list, err := w.opts.Dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return changed, fmt.Errorf("list %s in %s: %w", gvr.Resource, ns, err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			refs, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetRefs")
			if one, ok, _ := unstructured.NestedMap(p.Object, "spec", "targetRef"); ok {
				refs = append([]any{one}, refs...)
			}
			if len(refs) == 0 {
				continue // attached by selector: istiod writes ZtunnelAccepted there, which no check reads
			}
			status, reason, msg := w.accepted(ctx, ns, nsObj.Labels, refs, waypoints)
			if !setCondition(p, ConditionWaypointAccepted, status, reason, msg) {
				continue
			}
			if _, err := w.opts.Dynamic.Resource(gvr).Namespace(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return changed, fmt.Errorf("write status of %s %s/%s: %w", p.GetKind(), ns, p.GetName(), err)
			}
			changed++
		}
	}
	return changed, nil
}

// accepted decides WaypointAccepted for a policy's targetRefs.
func (w *StatusWriter) accepted(ctx context.Context, ns string, nsLabels map[string]string, refs []any, waypoints map[string]bool) (status, reason, msg string) {
	var bound []string
	for _, ri := range refs {
		ref, _ := ri.(map[string]any)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		switch kind {
		case "Gateway":
			if !waypoints[name] {
				return "False", "TargetNotFound", fmt.Sprintf("not bound: waypoint %s/%s not found", ns, name)
			}
			bound = append(bound, ns+"/"+name)
		case "Service":
			svc, err := w.opts.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "False", "TargetNotFound", fmt.Sprintf("not bound: Service %s/%s not found", ns, name)
			}
			wp := svc.Labels[LabelUseWaypoint]
			if wp == "" {
				wp = nsLabels[LabelUseWaypoint]
			}
			if wp == "" || wp == "none" || !waypoints[wp] {
				return "False", "AncestorNotBound", fmt.Sprintf("Service %s/%s is not bound to a waypoint", ns, name)
			}
			bound = append(bound, ns+"/"+wp)
		default:
			return "False", "Invalid", fmt.Sprintf("unsupported targetRef kind %q", kind)
		}
	}
	sort.Strings(bound)
	return "True", "Accepted", "bound to " + bound[0]
}

// setCondition sets one condition of status.conditions for the object's generation; it reports
// whether anything changed.
func setCondition(u *unstructured.Unstructured, typ, status, reason, msg string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	gen := u.GetGeneration()
	out := make([]any, 0, len(conds)+1)
	for _, ci := range conds {
		c, _ := ci.(map[string]any)
		if c["type"] != typ {
			out = append(out, ci)
			continue
		}
		og, _ := c["observedGeneration"].(int64)
		if c["status"] == status && c["reason"] == reason && c["message"] == msg && og == gen {
			return false
		}
	}
	out = append(out, map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
		"observedGeneration": gen, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
	_ = unstructured.SetNestedSlice(u.Object, out, "status", "conditions")
	return true
}
