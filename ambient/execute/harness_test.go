package execute_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ambientkit/ambientkit/ambient/execute"
	"github.com/ambientkit/ambientkit/ambient/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/observe"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

// t0 is when every test's clock starts.
var t0 = time.Date(2026, 9, 15, 10, 0, 0, 0, time.UTC)

// world is a fake cluster: a controller-runtime fake client behind interceptors that count every
// call, inject faults at a set rate, answer evictions (429 for pods a test marks as protected by a
// budget), and play the DaemonSet controller (a deleted DaemonSet pod comes back at the template's
// image) and the charts (FakeHelm.OnChange).
type world struct {
	t     *testing.T
	base  client.WithWatch
	c     client.WithWatch
	helm  *executetest.FakeHelm
	clock *executetest.FakeClock
	// snap is what Options.Snapshot returns (a fresh copy each call).
	snap *mesh.Snapshot

	mu          sync.Mutex
	calls       map[string]int // every call that reached the fake API server, "verb Kind"
	bookkeeping map[string]int // journal, lease and backup calls, "verb Kind"
	effects     map[string]int // writes that changed the mesh, "what object"
	faultRate   float64
	loseRate    float64 // share of successful writes whose response is lost (a timeout after the fact)
	rnd         *rand.Rand
	faults      int
	pdbBlocks   map[string]int // pod → evictions still refused (negative: forever)
	dead        bool           // the process is gone: every call fails
	gen         map[string]int
	snapCalls   int
	// tamperBackups changes every backup Secret's data after it is read, as if someone edited it.
	tamperBackups bool
}

func newWorld(t *testing.T, objs ...client.Object) *world {
	t.Helper()
	w := &world{t: t, clock: executetest.NewFakeClock(t0), calls: map[string]int{}, bookkeeping: map[string]int{}, effects: map[string]int{},
		pdbBlocks: map[string]int{}, gen: map[string]int{}}
	w.base = fake.NewClientBuilder().
		WithScheme(observe.Scheme()).
		WithObjects(objs...).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithIndex(&corev1.Event{}, "reason", func(o client.Object) []string { return []string{o.(*corev1.Event).Reason} }).
		// observe.Live reads ConfigMap istio-cni-config by name; a real API server supports metadata.name for every kind.
		WithIndex(&corev1.ConfigMap{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		Build()
	w.c = interceptor.NewClient(w.base, w.funcs())
	w.helm = w.newHelm()
	return w
}

// newHelm returns a FakeHelm holding the releases, wired to the world: its changes play the charts,
// its calls are counted and can fail like API calls.
func (w *world) newHelm(releases ...execute.Release) *executetest.FakeHelm {
	h := executetest.NewFakeHelm(releases...)
	h.OnChange = w.chart
	h.Fault = func(op, rel string) (error, bool) {
		if err := w.pre(context.Background(), "helm-"+op, "HelmRelease", false); err != nil {
			return err, false
		}
		if op != "get" {
			if err := w.lost(); err != nil {
				return err, true
			}
		}
		return nil, false
	}
	return h
}

// executor returns an executor over the world with test defaults; tweak adjusts the options.
func (w *world) executor(tweak ...func(*execute.Options)) *execute.Executor {
	w.t.Helper()
	opts := execute.Options{
		Helm:     w.helm,
		Snapshot: w.snapshot,
		Clock:    w.clock,
		Identity: "test-run",
		Probes: map[string]execute.Probe{"mesh-health": func(context.Context, string) (bool, string, error) {
			return true, "", nil
		}},
		Approve:     func(context.Context, plan.Step) (bool, error) { return true, nil },
		MaxAttempts: 12,
	}
	for _, f := range tweak {
		f(&opts)
	}
	e, err := execute.New(w.c, opts)
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

func (w *world) snapshot(ctx context.Context) (*mesh.Snapshot, error) {
	if err := w.pre(ctx, "observe", "Snapshot", false); err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.snapCalls++
	w.mu.Unlock()
	if w.snap == nil {
		return nil, fmt.Errorf("the test world has no snapshot")
	}
	b, _ := json.Marshal(w.snap)
	var s mesh.Snapshot
	_ = json.Unmarshal(b, &s)
	return &s, nil
}

// injectFaults makes a share of all calls (API, Helm, snapshot) fail with 409, 429, 500 or a timeout.
func (w *world) injectFaults(rate float64, seed int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faultRate, w.rnd = rate, rand.New(rand.NewSource(seed))
}

// loseResponses makes a share of the writes that succeed answer with a timeout anyway.
func (w *world) loseResponses(rate float64, seed int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loseRate, w.rnd = rate, rand.New(rand.NewSource(seed))
}

// lost decides whether this successful write's response is lost.
func (w *world) lost() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rnd != nil && w.loseRate > 0 && w.rnd.Float64() < w.loseRate {
		w.faults++
		return apierrors.NewTimeoutError("injected: the change was made but the response was lost", 1)
	}
	return nil
}

func (w *world) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = true
}

func (w *world) revive() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = false
}

var gr = schema.GroupResource{Group: "test", Resource: "things"}

// pre runs before every call: the process may be dead, the context done, or a fault due.
func (w *world) pre(ctx context.Context, verb, kind string, book bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return apierrors.NewServiceUnavailable("connection refused: the test killed this run")
	}
	if book {
		w.bookkeeping[verb+" "+kind]++
	} else {
		w.calls[verb+" "+kind]++
	}
	if w.rnd != nil && w.rnd.Float64() < w.faultRate {
		w.faults++
		switch w.rnd.Intn(4) {
		case 0:
			return apierrors.NewConflict(gr, "injected", fmt.Errorf("injected conflict"))
		case 1:
			return apierrors.NewTooManyRequests("injected throttling", 1)
		case 2:
			return apierrors.NewInternalError(fmt.Errorf("injected server error"))
		default:
			return apierrors.NewTimeoutError("injected timeout", 1)
		}
	}
	return nil
}

func (w *world) effect(what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.effects[what]++
}

func (w *world) kindOf(obj runtime.Object) string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	if u, ok := obj.(*unstructured.UnstructuredList); ok {
		return u.GetKind()
	}
	gvk, err := apiutil.GVKForObject(obj, w.base.Scheme())
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return gvk.Kind
}

// isBook reports whether an object is the executor's own bookkeeping: journal, lease, backups.
func isBook(kind, name string) bool {
	return kind == "Lease" || (kind == "ConfigMap" && strings.HasPrefix(name, "ambientkit-journal-")) ||
		(kind == "Secret" && strings.HasPrefix(name, "ambientkit-backup-"))
}

func ref(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

func (w *world) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			k := w.kindOf(obj)
			if err := w.pre(ctx, "get", k, isBook(k, key.Name)); err != nil {
				return err
			}
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if sec, ok := obj.(*corev1.Secret); ok && w.tamperBackups && strings.HasPrefix(key.Name, "ambientkit-backup-") {
				w.mu.Lock()
				w.gen["tamper"]++
				n := w.gen["tamper"]
				w.mu.Unlock()
				if n > 2 { // the read-back after writing and the verification see it intact; later reads do not
					sec.Data["backup.json"] = append(sec.Data["backup.json"], ' ')
				}
			}
			return nil
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := w.pre(ctx, "list", strings.TrimSuffix(w.kindOf(list), "List"), false); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			k := w.kindOf(obj)
			if err := w.pre(ctx, "create", k, isBook(k, obj.GetName())); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			k := w.kindOf(obj)
			if err := w.pre(ctx, "update", k, isBook(k, obj.GetName())); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			k := w.kindOf(obj)
			if err := w.pre(ctx, "patch", k, isBook(k, obj.GetName())); err != nil {
				return err
			}
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			if !dryRun(opts) {
				body, _ := patch.Data(obj)
				w.effect("patch " + ref(k, obj.GetNamespace(), obj.GetName()) + " " + string(body))
				return w.lost()
			}
			return nil
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			b, _ := json.Marshal(obj)
			var u unstructured.Unstructured
			_ = json.Unmarshal(b, &u.Object)
			book := isBook(u.GetKind(), u.GetName())
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
			if !book && len(ao.DryRun) == 0 {
				w.effect("apply " + ref(u.GetKind(), u.GetNamespace(), u.GetName()))
				return w.lost()
			}
			return nil
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			k := w.kindOf(obj)
			if err := w.pre(ctx, "delete", k, isBook(k, obj.GetName())); err != nil {
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
			w.effect("delete " + ref(k, obj.GetNamespace(), obj.GetName()))
			if isPod {
				w.podGone(ctx, &before)
			}
			return w.lost()
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
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
			n, blocked := w.pdbBlocks[key]
			if blocked && n != 0 {
				w.pdbBlocks[key] = n - 1
			}
			w.mu.Unlock()
			if blocked && n != 0 {
				return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
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
			return w.lost()
		},
	}
}

func dryRun(opts []client.PatchOption) bool {
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	return len(po.DryRun) > 0
}

// podGone plays the DaemonSet controller: a DaemonSet pod that goes is recreated on its node from the
// DaemonSet's current template, ready.
func (w *world) podGone(ctx context.Context, p *corev1.Pod) {
	ctl := metav1.GetControllerOf(p)
	if ctl == nil || ctl.Kind != "DaemonSet" {
		return
	}
	var ds appsv1.DaemonSet
	if err := w.base.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ctl.Name}, &ds); err != nil {
		return
	}
	w.mu.Lock()
	w.gen[p.Spec.NodeName+"/"+ds.Name]++
	g := w.gen[p.Spec.NodeName+"/"+ds.Name]
	w.mu.Unlock()
	np := dsPod(&ds, p.Spec.NodeName, g)
	if err := w.base.Create(ctx, np); err != nil {
		w.t.Errorf("recreate DaemonSet pod: %v", err)
	}
	w.syncDS(ctx, ds.Namespace, ds.Name)
}

// dsPod is a ready pod of the DaemonSet on the node, at its template.
func dsPod(ds *appsv1.DaemonSet, node string, gen int) *corev1.Pod {
	name := fmt.Sprintf("%s-%s", ds.Name, node)
	if gen > 0 {
		name = fmt.Sprintf("%s-%s-%d", ds.Name, node, gen)
	}
	labels := map[string]string{}
	for k, v := range ds.Spec.Template.Labels {
		labels[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ds.Namespace, Labels: labels, UID: types.UID("uid-" + typesUID(name)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: ds.Spec.Template.Spec.Containers},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func typesUID(s string) string { return strings.ReplaceAll(s, ".", "-") }

// syncDS recomputes a DaemonSet's status from its pods, like the controller.
func (w *world) syncDS(ctx context.Context, ns, name string) {
	var ds appsv1.DaemonSet
	if err := w.base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds); err != nil {
		return
	}
	var pods corev1.PodList
	_ = w.base.List(ctx, &pods, client.InNamespace(ns))
	var n, ready, updated int32
	for _, p := range pods.Items {
		if c := metav1.GetControllerOf(&p); c == nil || c.Name != name {
			continue
		}
		n++
		if p.Status.Phase == corev1.PodRunning {
			ready++
		}
		if len(p.Spec.Containers) > 0 && len(ds.Spec.Template.Spec.Containers) > 0 && p.Spec.Containers[0].Image == ds.Spec.Template.Spec.Containers[0].Image {
			updated++
		}
	}
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: n, CurrentNumberScheduled: n, NumberReady: ready, NumberAvailable: ready,
		UpdatedNumberScheduled: updated, ObservedGeneration: ds.Generation}
	if err := w.base.Status().Update(ctx, &ds); err != nil {
		_ = w.base.Update(ctx, &ds)
	}
}

// chart plays what an Istio chart change does to the cluster: istio-cni and ztunnel DaemonSets move
// to the chart's image (rolling, or only the template under OnDelete), istiod revisions come and go,
// the base chart labels the default-revision validator.
func (w *world) chart(ctx context.Context, op string, rel execute.Release) error {
	if w.snap != nil {
		w.chartSnapshot(ctx, op, rel)
	}
	switch rel.Chart {
	case "base":
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := w.base.Get(ctx, client.ObjectKey{Name: "istiod-default-validator"}, &vwc); err == nil {
			if rev, ok := rel.Values["defaultRevision"].(string); ok {
				vwc.Labels[mesh.LabelRev] = rev
				return w.base.Update(ctx, &vwc)
			}
		}
	case "cni", "ztunnel":
		name := map[string]string{"cni": "istio-cni-node", "ztunnel": "ztunnel"}[rel.Chart]
		image := map[string]string{"cni": "docker.io/istio/install-cni:", "ztunnel": "docker.io/istio/ztunnel:"}[rel.Chart] + rel.ChartVersion + "-distroless"
		var ds appsv1.DaemonSet
		if err := w.base.Get(ctx, client.ObjectKey{Namespace: rel.Namespace, Name: name}, &ds); err != nil {
			return nil
		}
		onDelete := false
		if us, ok := rel.Values["updateStrategy"].(map[string]any); ok && us["type"] == "OnDelete" {
			onDelete = true
		}
		ds.Spec.Template.Spec.Containers[0].Image = image
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}
		if onDelete {
			ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
		}
		if err := w.base.Update(ctx, &ds); err != nil {
			return err
		}
		if !onDelete { // the controller rolls every pod
			var pods corev1.PodList
			_ = w.base.List(ctx, &pods, client.InNamespace(rel.Namespace))
			for _, p := range pods.Items {
				if c := metav1.GetControllerOf(&p); c != nil && c.Name == name && p.Spec.Containers[0].Image != image {
					_ = w.base.Delete(ctx, &p)
					w.podGone(ctx, &p)
				}
			}
		}
		w.syncDS(ctx, rel.Namespace, name)
	case "istiod":
		rev, _ := rel.Values["revision"].(string)
		d := istiod(rel.Namespace, rev, rel.ChartVersion)
		if op == "uninstall" {
			_ = w.base.Delete(ctx, d)
			return nil
		}
		var cur appsv1.Deployment
		if err := w.base.Get(ctx, client.ObjectKeyFromObject(d), &cur); err != nil {
			return w.base.Create(ctx, d)
		}
	}
	return nil
}

// ---- objects ----

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "linux"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func daemonSet(ns, name, image string, onDelete bool, selector map[string]string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-ds-" + typesUID(name))},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Containers: []corev1.Container{{Name: "c", Image: image}}}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}}}
	if onDelete {
		ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	}
	return ds
}

func istiod(ns, rev, version string) *appsv1.Deployment {
	return deployment(ns, "istiod-"+rev, 2, map[string]string{"app": "istiod", mesh.LabelRev: rev}, "docker.io/istio/pilot:"+version+"-distroless")
}

func deployment(ns, name string, replicas int32, labels map[string]string, image string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}},
		Status: appsv1.DeploymentStatus{Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas}}
}

// workloadPod is a ready pod of a ReplicaSet on the node.
func workloadPod(ns, name, nodeName string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, UID: types.UID("uid-" + typesUID(ns+"-"+name)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs", UID: "rs", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// nodeAgents returns istio-cni and ztunnel DaemonSets at the version with a pod on every node.
func nodeAgents(version string, nodes []string, ztunnelOnDelete bool) []client.Object {
	cni := daemonSet("istio-system", "istio-cni-node", "docker.io/istio/install-cni:"+version+"-distroless", false, map[string]string{"k8s-app": "istio-cni-node"})
	zt := daemonSet("istio-system", "ztunnel", "docker.io/istio/ztunnel:"+version+"-distroless", ztunnelOnDelete, map[string]string{"app": "ztunnel"})
	objs := []client.Object{}
	n := int32(len(nodes))
	for _, ds := range []*appsv1.DaemonSet{cni, zt} {
		ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: n, CurrentNumberScheduled: n, NumberReady: n, NumberAvailable: n, UpdatedNumberScheduled: n}
		objs = append(objs, ds)
		for _, nd := range nodes {
			objs = append(objs, dsPod(ds, nd, 0))
		}
	}
	return objs
}

// state is the end state tests compare: what a run leaves in the cluster and in Helm.
type state struct {
	Nodes    map[string]bool   // node → unschedulable
	Pods     map[string]string // "ns/name" → node and image
	Labels   map[string]string // "Kind name" → mesh labels
	Releases []string
}

func (w *world) state() state {
	ctx := context.Background()
	s := state{Nodes: map[string]bool{}, Pods: map[string]string{}, Labels: map[string]string{}}
	var nodes corev1.NodeList
	_ = w.base.List(ctx, &nodes)
	for _, n := range nodes.Items {
		s.Nodes[n.Name] = n.Spec.Unschedulable
	}
	var pods corev1.PodList
	_ = w.base.List(ctx, &pods)
	for _, p := range pods.Items {
		s.Pods[p.Namespace+"/"+p.Name] = p.Spec.NodeName + " " + p.Spec.Containers[0].Image
	}
	var nss corev1.NamespaceList
	_ = w.base.List(ctx, &nss)
	for _, n := range nss.Items {
		s.Labels["Namespace "+n.Name] = fmt.Sprint(n.Labels)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("admissionregistration.k8s.io/v1")
		l.SetKind(kind + "List")
		_ = w.base.List(ctx, l)
		for _, o := range l.Items {
			s.Labels[kind+" "+o.GetName()] = fmt.Sprint(o.GetLabels())
		}
	}
	var cms corev1.ConfigMapList
	_ = w.base.List(ctx, &cms)
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, "ambientkit-") {
			s.Labels["ConfigMap "+cm.Namespace+"/"+cm.Name] = fmt.Sprint(cm.Labels)
		}
	}
	var deps appsv1.DeploymentList
	_ = w.base.List(ctx, &deps)
	for _, d := range deps.Items {
		s.Labels["Deployment "+d.Namespace+"/"+d.Name] = stampRE.ReplaceAllString(fmt.Sprint(d.Spec.Template.Annotations), "<clock>")
	}
	for _, r := range w.helm.Releases() {
		b, _ := json.Marshal(r.Values)
		s.Releases = append(s.Releases, fmt.Sprintf("%s/%s %s-%s #%d %s %s", r.Namespace, r.Name, r.Chart, r.ChartVersion, r.Revision, r.Status, b))
	}
	sort.Strings(s.Releases)
	return s
}

// stampRE matches the restartedAt stamps, which are the clock's time and so differ between runs
// that waited differently.
var stampRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// allEffects merges cluster effects and Helm changes.
func (w *world) allEffects() map[string]int {
	w.mu.Lock()
	out := map[string]int{}
	for k, v := range w.effects {
		out[stampRE.ReplaceAllString(k, "<clock>")] += v
	}
	w.mu.Unlock()
	for k, v := range w.helm.Calls() {
		out["helm "+k] = v
	}
	return out
}

func (w *world) callCount() (cluster, book int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.calls {
		cluster += v
	}
	for _, v := range w.bookkeeping {
		book += v
	}
	return cluster, book
}

func (w *world) resetCounts() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls, w.bookkeeping, w.effects = map[string]int{}, map[string]int{}, map[string]int{}
}
