package executetest

import (
	"context"
	"encoding/json"
	"fmt"
	"k8s.io/apimachinery/pkg/api/equality"
	"maps"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/io/internal/affinity"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

const annotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

// restartStamp reads a workload's restartedAt stamp from the store ("" for other kinds).
func restartStamp(ctx context.Context, c client.Client, obj client.Object, kind string) string {
	key := client.ObjectKeyFromObject(obj)
	switch kind {
	case "Deployment":
		var d appsv1.Deployment
		if c.Get(ctx, key, &d) == nil {
			return d.Spec.Template.Annotations[annotationRestartedAt]
		}
	case "StatefulSet":
		var s appsv1.StatefulSet
		if c.Get(ctx, key, &s) == nil {
			return s.Spec.Template.Annotations[annotationRestartedAt]
		}
	case "DaemonSet":
		var s appsv1.DaemonSet
		if c.Get(ctx, key, &s) == nil {
			return s.Spec.Template.Annotations[annotationRestartedAt]
		}
	}
	return ""
}

// owner is the controller of a pod as the simulation sees it.
type owner struct{ kind, name string }

func ownerOf(p *corev1.Pod) owner {
	ctl := metav1.GetControllerOf(p)
	if ctl == nil {
		return owner{}
	}
	if ctl.Kind == "ReplicaSet" {
		if h := p.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(ctl.Name, "-"+h) {
			return owner{"Deployment", strings.TrimSuffix(ctl.Name, "-"+h)}
		}
	}
	return owner{ctl.Kind, ctl.Name}
}

// podGone plays the controllers after a pod was deleted or evicted: a DaemonSet recreates it on its
// node (when the node is still there), a ReplicaSet, StatefulSet or Job replaces it on a schedulable
// node; a bare pod is gone for good.
func (w *World) podGone(ctx context.Context, p *corev1.Pod) {
	o := ownerOf(p)
	switch o.kind {
	case "":
		return
	case "DaemonSet":
		var ds appsv1.DaemonSet
		if err := w.Base.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: o.name}, &ds); err != nil {
			return
		}
		var n corev1.Node
		if err := w.Base.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &n); err == nil {
			np := w.dsPod(&ds, p.Spec.NodeName)
			w.mu.Lock()
			if w.slowAgents {
				np.Status.Conditions[0].Status = corev1.ConditionFalse
				if w.unready == nil {
					w.unready = map[types.UID]bool{}
				}
				w.unready[np.UID] = true
			}
			w.mu.Unlock()
			w.createPod(ctx, np)
		}
		w.syncDS(ctx, ds.Namespace, ds.Name)
	default:
		w.replace(ctx, p)
		w.syncWorkload(ctx, p.Namespace, ownerOf(p))
	}
	w.syncBudgets(ctx, p.Namespace)
}

// syncWorkload recomputes a Deployment's or StatefulSet's status from its pods, as its controller
// does: replicas, ready and available count the pods, and the controller has seen the spec.
func (w *World) syncWorkload(ctx context.Context, ns string, o owner) {
	var pods corev1.PodList
	if o.kind != "Deployment" && o.kind != "StatefulSet" || w.Base.List(ctx, &pods, client.InNamespace(ns)) != nil {
		return
	}
	var n, ready int32
	for i := range pods.Items {
		if ownerOf(&pods.Items[i]) != o || pods.Items[i].DeletionTimestamp != nil {
			continue
		}
		n++
		if PodReady(&pods.Items[i]) {
			ready++
		}
	}
	key := client.ObjectKey{Namespace: ns, Name: o.name}
	switch o.kind {
	case "Deployment":
		var d appsv1.Deployment
		if w.Base.Get(ctx, key, &d) != nil {
			return
		}
		before := d.Status
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n, ready, ready
		d.Status.ObservedGeneration = d.Generation
		if !equality.Semantic.DeepEqual(before, d.Status) {
			_ = w.Base.Status().Update(ctx, &d)
		}
	case "StatefulSet":
		var ss appsv1.StatefulSet
		if w.Base.Get(ctx, key, &ss) != nil {
			return
		}
		before := ss.Status
		ss.Status.Replicas, ss.Status.UpdatedReplicas, ss.Status.CurrentReplicas, ss.Status.ReadyReplicas, ss.Status.AvailableReplicas = n, n, n, ready, ready
		ss.Status.ObservedGeneration = ss.Generation
		ss.Status.CurrentRevision = ss.Status.UpdateRevision
		if !equality.Semantic.DeepEqual(before, ss.Status) {
			_ = w.Base.Status().Update(ctx, &ss)
		}
	}
}

func (w *World) createPod(ctx context.Context, p *corev1.Pod) {
	if err := w.Base.Create(ctx, p); err != nil {
		w.t.Errorf("executetest: create pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

// nextName returns a fresh name for a replacement of a pod of base.
func (w *World) nextName(base string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen[base]++
	return fmt.Sprintf("%s-r%d", base, w.gen[base])
}

// replace creates the replacement a controller makes for a removed pod: same labels and containers,
// scheduled on a schedulable node, injected or captured as its namespace says now.
func (w *World) replace(ctx context.Context, old *corev1.Pod) {
	np := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: old.Namespace, Labels: copyLabels(old.Labels),
		Annotations: copyLabels(old.Annotations), OwnerReferences: old.OwnerReferences}}
	np.Spec = *old.Spec.DeepCopy()
	delete(np.Annotations, mesh.AnnotationRedirection)
	switch ownerOf(old).kind {
	case "StatefulSet":
		np.Name = old.Name // a StatefulSet pod keeps its identity
	default:
		base := old.Name
		if i := strings.LastIndex(base, "-r"); i > 0 && strings.Trim(base[i+2:], "0123456789") == "" {
			base = base[:i]
		}
		np.Name = w.nextName(base)
	}
	np.UID = types.UID("uid-" + np.Namespace + "-" + np.Name + fmt.Sprint(w.nextGen("uid")))
	np.Spec.NodeName = w.schedule(ctx, np, old.Spec.NodeName)
	w.inject(ctx, np)
	np.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if np.Spec.NodeName != "" {
		np.Status = readyStatus()
	}
	w.createPod(ctx, np)
}

func (w *World) nextGen(k string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen[k]++
	return w.gen[k]
}

func readyStatus() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
}

// schedule picks the node the scheduler would: schedulable, ready, matching the pod's node
// selector, with the fewest pods that are not DaemonSet pods (ties by name), and not the node the
// pod was removed from (a drain cordons it; keeping replacements off it keeps the simulation from
// evicting the same pods forever). "" when none fits: the pod stays Pending.
func (w *World) schedule(ctx context.Context, p *corev1.Pod, not string) string {
	var nodes corev1.NodeList
	if err := w.Base.List(ctx, &nodes); err != nil {
		return ""
	}
	var pods corev1.PodList
	_ = w.Base.List(ctx, &pods)
	load := map[string]int{}
	for _, q := range pods.Items {
		if ownerOf(&q).kind != "DaemonSet" {
			load[q.Spec.NodeName]++
		}
	}
	best := ""
	for _, n := range nodes.Items {
		if n.Name == not || n.Spec.Unschedulable || !nodeIsReady(&n) || !labels.SelectorFromSet(p.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
			continue
		}
		if best == "" || load[n.Name] < load[best] || (load[n.Name] == load[best] && n.Name < best) {
			best = n.Name
		}
	}
	return best
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rollWorkload plays a rollout: every pod of the workload is replaced by one made from it again
// (a restart), injected by the revision its namespace resolves to now.
func (w *World) rollWorkload(ctx context.Context, kind, ns, name string) {
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if o := ownerOf(p); o.kind != kind || o.name != name {
			continue
		}
		if err := w.Base.Delete(ctx, p); err != nil {
			continue
		}
		if kind == "DaemonSet" {
			w.podGone(ctx, p)
			continue
		}
		w.replaceInPlace(ctx, p)
	}
	w.syncBudgets(ctx, ns)
}

// replaceInPlace replaces a pod on the same node (a rolling restart keeps the spread).
func (w *World) replaceInPlace(ctx context.Context, old *corev1.Pod) {
	np := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: old.Namespace, Labels: copyLabels(old.Labels),
		Annotations: copyLabels(old.Annotations), OwnerReferences: old.OwnerReferences}}
	np.Spec = *old.Spec.DeepCopy()
	delete(np.Annotations, mesh.AnnotationRedirection)
	base := old.Name
	if i := strings.LastIndex(base, "-r"); i > 0 && strings.Trim(base[i+2:], "0123456789") == "" {
		base = base[:i]
	}
	np.Name = base
	if ownerOf(old).kind != "StatefulSet" {
		np.Name = w.nextName(base)
	}
	np.UID = types.UID("uid-" + np.Namespace + "-" + np.Name + fmt.Sprint(w.nextGen("uid")))
	w.inject(ctx, np)
	np.Status = readyStatus()
	w.createPod(ctx, np)
}

// ---- injection and capture ----

// inject gives a new pod what istiod's injection webhook and istio-cni would: the sidecar of the
// revision its labels resolve to (when they select injection), else the ambient redirection
// annotation when ambient captures it.
func (w *World) inject(ctx context.Context, p *corev1.Pod) {
	var ns corev1.Namespace
	_ = w.Base.Get(ctx, client.ObjectKey{Name: p.Namespace}, &ns)
	rev, version := w.injectionRevision(ctx, p, ns.Labels)
	hadSidecar := p.Annotations[mesh.AnnotationSidecarStatus] != ""
	if rev != "" && (hadSidecar || selectsInjection(p, ns.Labels)) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		status, _ := json.Marshal(map[string]any{"containers": []string{"istio-proxy"}, "revision": rev})
		p.Annotations[mesh.AnnotationSidecarStatus] = string(status)
		p.Annotations[mesh.LabelRev] = rev
		image := "docker.io/istio/proxyv2:" + version + "-distroless"
		found := false
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == "istio-proxy" {
				p.Spec.Containers[i].Image, found = image, true
			}
		}
		if !found {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "istio-proxy", Image: image})
		}
		return
	}
	if hadSidecar { // nothing injects it any more
		delete(p.Annotations, mesh.AnnotationSidecarStatus)
		var keep []corev1.Container
		for _, c := range p.Spec.Containers {
			if c.Name != "istio-proxy" {
				keep = append(keep, c)
			}
		}
		p.Spec.Containers = keep
	}
	mode := p.Labels[mesh.LabelDataplaneMode]
	if p.Spec.HostNetwork || mode == "none" || (mode != "ambient" && ns.Labels[mesh.LabelDataplaneMode] != "ambient") {
		return
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[mesh.AnnotationRedirection] = "enabled"
}

func selectsInjection(p *corev1.Pod, nsLabels map[string]string) bool {
	if p.Labels[mesh.LabelSidecarInject] == "false" {
		return false
	}
	return p.Labels[mesh.LabelRev] != "" || nsLabels[mesh.LabelRev] != "" || nsLabels[mesh.LabelInjection] == "enabled" ||
		p.Labels[mesh.LabelSidecarInject] == "true"
}

// injectionRevision resolves the revision that injects a pod, and its version, from the webhooks in
// the store: a tag's webhook configuration names its revision, a revision's own injector is itself.
func (w *World) injectionRevision(ctx context.Context, p *corev1.Pod, nsLabels map[string]string) (rev, version string) {
	want := p.Labels[mesh.LabelRev]
	if want == "" {
		want = nsLabels[mesh.LabelRev]
	}
	if want == "" && (nsLabels[mesh.LabelInjection] == "enabled" || p.Labels[mesh.LabelSidecarInject] == "true") {
		want = "default"
	}
	if want == "" {
		return "", ""
	}
	return w.revisionVersion(ctx, want)
}

// revisionVersion resolves a tag or revision name to its revision, from the webhooks in the store (a
// tag's webhook configuration names its revision, a revision's own injector is itself), and the
// version of that revision's istiod; "" for both when no istiod runs it.
func (w *World) revisionVersion(ctx context.Context, want string) (rev, version string) {
	var mwcs admissionregistrationv1.MutatingWebhookConfigurationList
	_ = w.Base.List(ctx, &mwcs)
	rev = ""
	for _, m := range mwcs.Items {
		if m.Labels[mesh.LabelTag] == want {
			rev = m.Labels[mesh.LabelRev]
		}
	}
	if rev == "" {
		rev = want
	}
	var deps appsv1.DeploymentList
	_ = w.Base.List(ctx, &deps)
	for _, d := range deps.Items {
		r := d.Spec.Template.Labels[mesh.LabelRev]
		if r == "" {
			r = d.Labels[mesh.LabelRev]
		}
		if d.Spec.Template.Labels["app"] != "istiod" || r != rev || len(d.Spec.Template.Spec.Containers) == 0 {
			continue
		}
		v, err := mesh.VersionFromImageTag(d.Spec.Template.Spec.Containers[0].Image)
		if err == nil {
			return rev, v.String()
		}
	}
	return "", ""
}

// ---- PodDisruptionBudgets ----

// budgetRefuses reports the first budget that does not allow evicting the pod (ok=false), counting
// healthy pods as the disruption controller does.
func (w *World) budgetRefuses(ctx context.Context, p *corev1.Pod) (string, bool) {
	var pdbs policyv1.PodDisruptionBudgetList
	if err := w.Base.List(ctx, &pdbs, client.InNamespace(p.Namespace)); err != nil {
		return "", true
	}
	for i := range pdbs.Items {
		b := &pdbs.Items[i]
		allowed, covers := w.disruptionsAllowed(ctx, b, p)
		if covers && allowed <= 0 {
			return b.Namespace + "/" + b.Name, false
		}
	}
	return "", true
}

// disruptionsAllowed computes a budget's allowed disruptions from the pods it selects; covers says
// whether it selects pod p (nil p: whether it selects anything).
func (w *World) disruptionsAllowed(ctx context.Context, b *policyv1.PodDisruptionBudget, p *corev1.Pod) (allowed int32, covers bool) {
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	if err != nil || b.Spec.Selector == nil {
		return 0, false
	}
	if p != nil && !sel.Matches(labels.Set(p.Labels)) {
		return 0, false
	}
	var pods corev1.PodList
	_ = w.Base.List(ctx, &pods, client.InNamespace(b.Namespace), client.MatchingLabelsSelector{Selector: sel})
	expected, healthy := int32(0), int32(0)
	for i := range pods.Items {
		q := &pods.Items[i]
		if q.Status.Phase == corev1.PodSucceeded || q.Status.Phase == corev1.PodFailed {
			continue
		}
		expected++
		if q.DeletionTimestamp == nil && PodReady(q) {
			healthy++
		}
	}
	desired := int32(0) // neither set: the disruption controller wants no pod healthy
	switch {
	case b.Spec.MinAvailable != nil:
		v, _ := intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, int(expected), true)
		desired = int32(v)
	case b.Spec.MaxUnavailable != nil:
		v, _ := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, int(expected), true)
		desired = max(0, expected-int32(v))
	}
	return max(0, healthy-desired), true
}

// SyncBudgets recomputes the status of the namespace's PodDisruptionBudgets from its pods, as the
// disruption controller does; the world calls it after every pod change, a test after editing a
// budget.
func (w *World) SyncBudgets(ctx context.Context, ns string) { w.syncBudgets(ctx, ns) }

func (w *World) syncBudgets(ctx context.Context, ns string) {
	var pdbs policyv1.PodDisruptionBudgetList
	if err := w.Base.List(ctx, &pdbs, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pdbs.Items {
		b := &pdbs.Items[i]
		allowed, _ := w.disruptionsAllowed(ctx, b, nil)
		if b.Status.DisruptionsAllowed == allowed {
			continue
		}
		b.Status.DisruptionsAllowed = allowed
		if err := w.Base.Status().Update(ctx, b); err != nil {
			_ = w.Base.Update(ctx, b)
		}
	}
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ---- DaemonSets and nodes ----

// readyAfterLook turns Ready the slow DaemonSet pods (SlowNodeAgents) that a LIST just returned
// unready.
func (w *World) readyAfterLook(ctx context.Context, pods *corev1.PodList) {
	w.mu.Lock()
	var due []corev1.Pod
	for _, p := range pods.Items {
		if w.unready[p.UID] {
			delete(w.unready, p.UID)
			due = append(due, p)
		}
	}
	w.mu.Unlock()
	for i := range due {
		p := due[i].DeepCopy()
		p.Status = readyStatus()
		if err := w.Base.Status().Update(ctx, p); err != nil {
			_ = w.Base.Update(ctx, p)
		}
	}
}

// dsPod is a ready pod of the DaemonSet on the node, at its current template.
func (w *World) dsPod(ds *appsv1.DaemonSet, node string) *corev1.Pod {
	name := fmt.Sprintf("%s-%s", ds.Name, node)
	p := DaemonSetPod(ds, node, fmt.Sprintf("%s-%d", name, w.nextGen(name)))
	p.UID = types.UID(fmt.Sprintf("%s-%d", p.UID, w.nextGen("uid")))
	return p
}

// DaemonSetPod is a ready pod of the DaemonSet named name on the node, at the DaemonSet's template.
func DaemonSetPod(ds *appsv1.DaemonSet, node, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ds.Namespace, Labels: copyLabels(ds.Spec.Template.Labels),
			Annotations: copyLabels(ds.Spec.Template.Annotations), UID: types.UID("uid-" + strings.ReplaceAll(name, ".", "-")),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: ds.Spec.Template.Spec.Containers, ServiceAccountName: ds.Spec.Template.Spec.ServiceAccountName},
		Status: readyStatus(),
	}
}

// syncDS recomputes a DaemonSet's status from its pods and the nodes it selects, like the controller.
func (w *World) syncDS(ctx context.Context, ns, name string) {
	var ds appsv1.DaemonSet
	if err := w.Base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds); err != nil {
		return
	}
	var pods corev1.PodList
	_ = w.Base.List(ctx, &pods, client.InNamespace(ns))
	var n, ready, updated int32
	for _, p := range pods.Items {
		if c := metav1.GetControllerOf(&p); c == nil || c.Name != name || c.Kind != "DaemonSet" {
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
	status := appsv1.DaemonSetStatus{DesiredNumberScheduled: n, CurrentNumberScheduled: n, NumberReady: ready, NumberAvailable: ready,
		UpdatedNumberScheduled: updated, ObservedGeneration: ds.Generation}
	if equality.Semantic.DeepEqual(ds.Status, status) {
		return // the controller writes no status that did not change
	}
	ds.Status = status
	if err := w.Base.Status().Update(ctx, &ds); err != nil {
		_ = w.Base.Update(ctx, &ds)
	}
}

// AddNode adds a ready node, as an autoscaler would, and the pod of every DaemonSet whose node
// selector it matches.
func (w *World) AddNode(ctx context.Context, n *corev1.Node) error {
	if len(n.Status.Conditions) == 0 {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	}
	if err := w.Base.Create(ctx, n); err != nil {
		return fmt.Errorf("add node %s: %w", n.Name, err)
	}
	var dss appsv1.DaemonSetList
	if err := w.Base.List(ctx, &dss); err != nil {
		return err
	}
	for i := range dss.Items {
		ds := &dss.Items[i]
		if affinity.SchedulesOn(&ds.Spec.Template.Spec, n) {
			w.createPod(ctx, w.dsPod(ds, n.Name))
			w.syncDS(ctx, ds.Namespace, ds.Name)
		}
	}
	w.schedulePending(ctx)
	return nil
}

// reconcileDS plays the DaemonSet controller over the nodes: a pod on every node the template
// places one on, none elsewhere (a node that stops matching loses its pod, whatever the update
// strategy; pkg/controller/daemon).
func (w *World) reconcileDS(ctx context.Context, ns, name string) {
	var ds appsv1.DaemonSet
	if err := w.Base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds); err != nil {
		return
	}
	var nodes corev1.NodeList
	var pods corev1.PodList
	if w.Base.List(ctx, &nodes) != nil || w.Base.List(ctx, &pods, client.InNamespace(ns)) != nil {
		return
	}
	for i := range nodes.Items {
		w.placeOnNode(ctx, &ds, &nodes.Items[i], dsPods(&ds, pods.Items, nodes.Items[i].Name))
	}
	w.syncDS(ctx, ns, name)
}

// dsPods are the DaemonSet's pods among pods that run on node.
func dsPods(ds *appsv1.DaemonSet, pods []corev1.Pod, node string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" && c.Name == ds.Name && p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

// placeOnNode makes the DaemonSet's pods on node n (mine) what its placement says: one when it
// schedules on n, none otherwise. It reports whether it changed any.
func (w *World) placeOnNode(ctx context.Context, ds *appsv1.DaemonSet, n *corev1.Node, mine []*corev1.Pod) bool {
	if !affinity.SchedulesOn(&ds.Spec.Template.Spec, n) {
		for _, p := range mine {
			_ = w.Base.Delete(ctx, p)
		}
		return len(mine) > 0
	}
	if len(mine) == 0 {
		w.createPod(ctx, w.dsPod(ds, n.Name))
		return true
	}
	return false
}

// nodesChanged plays the DaemonSet controller after node labels changed: every DaemonSet is
// reconciled.
func (w *World) nodesChanged(ctx context.Context) {
	var dss appsv1.DaemonSetList
	if err := w.Base.List(ctx, &dss); err != nil {
		return
	}
	for i := range dss.Items {
		w.reconcileDS(ctx, dss.Items[i].Namespace, dss.Items[i].Name)
	}
	w.schedulePending(ctx)
}

// nodeLabels returns the labels of the node named, before a write to it (nil for other kinds), for
// nodeChanged.
func (w *World) nodeLabels(ctx context.Context, kind, name string) map[string]string {
	if kind != "Node" {
		return nil
	}
	var n corev1.Node
	if err := w.Base.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return nil
	}
	return n.Labels
}

// nodeChanged plays the controllers after a write to the node whose labels were before: the
// DaemonSet controller only when they changed (its pods select nodes by label and tolerate a
// cordon, as DaemonSet pods do), the scheduler always (a cordon or uncordon moves Pending pods).
// Reconciling every DaemonSet on each cordon would make a wave of n nodes cost n² lists.
func (w *World) nodeChanged(ctx context.Context, name string, before map[string]string) {
	var n corev1.Node
	if err := w.Base.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		w.nodesChanged(ctx)
		return
	}
	if !maps.Equal(before, n.Labels) {
		// Only this node's labels changed: each DaemonSet gains or loses its pod here alone, as the
		// controller reconciles a node event (pkg/controller/daemon, nodeUpdate).
		var dss appsv1.DaemonSetList
		if err := w.Base.List(ctx, &dss); err != nil {
			return
		}
		for i := range dss.Items {
			w.reconcileDSOnNode(ctx, &dss.Items[i], &n)
		}
	}
	w.schedulePending(ctx)
}

// reconcileDSOnNode is reconcileDS for one node: the DaemonSet's pod there if its template places
// one, none otherwise.
func (w *World) reconcileDSOnNode(ctx context.Context, ds *appsv1.DaemonSet, n *corev1.Node) {
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods, client.InNamespace(ds.Namespace), client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
		return
	}
	if w.placeOnNode(ctx, ds, n, dsPods(ds, pods.Items, n.Name)) {
		w.syncDS(ctx, ds.Namespace, ds.Name)
	}
}

// FinishJobs plays the Jobs with pods on the node finishing: their running pods succeed (and stop
// holding a drain that waits for Jobs). It returns how many pods finished.
func (w *World) FinishJobs(ctx context.Context, node string) (int, error) {
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if ownerOf(p).kind != "Job" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		p.Status.Phase = corev1.PodSucceeded
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted"}}
		if err := w.Base.Status().Update(ctx, p); err != nil {
			return n, fmt.Errorf("finish Job pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		n++
	}
	w.syncBudgets(ctx, "")
	return n, nil
}

// DeleteNode removes a node, as an autoscaler would: its pods are deleted (pod garbage collection)
// and their controllers replace them elsewhere.
func (w *World) DeleteNode(ctx context.Context, name string) error {
	var n corev1.Node
	if err := w.Base.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	if err := w.Base.Delete(ctx, &n); err != nil {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods, client.MatchingFields{"spec.nodeName": name}); err != nil {
		return err
	}
	dss := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if err := w.Base.Delete(ctx, p); err != nil {
			continue
		}
		if o := ownerOf(p); o.kind == "DaemonSet" {
			dss[p.Namespace+"/"+o.name] = true
			continue
		}
		w.podGone(ctx, p)
	}
	for _, k := range sortedKeys(dss) {
		ns, ds, _ := strings.Cut(k, "/")
		w.syncDS(ctx, ns, ds)
	}
	return nil
}

// SynthesizeDeployments creates a Deployment for every set of pods that a ReplicaSet of a
// Deployment owns (pod-template-hash) when the Deployment is not in the store: kubectl dumps often
// hold only pods, and restarts need the Deployment.
func (w *World) SynthesizeDeployments(ctx context.Context) error {
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods); err != nil {
		return err
	}
	groups := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if o := ownerOf(p); o.kind == "Deployment" {
			groups[p.Namespace+"/"+o.name] = append(groups[p.Namespace+"/"+o.name], p)
		}
	}
	for _, k := range sortedKeys(groups) {
		ns, name, _ := strings.Cut(k, "/")
		var d appsv1.Deployment
		if err := w.Base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err == nil {
			continue
		}
		ps := groups[k]
		sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
		sel := copyLabels(ps[0].Labels)
		delete(sel, "pod-template-hash")
		n := int32(len(ps))
		d = appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: copyLabels(sel)},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: copyLabels(sel)}, Spec: *ps[0].Spec.DeepCopy()}},
			Status: appsv1.DeploymentStatus{Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}}
		if err := w.Base.Create(ctx, &d); err != nil {
			return fmt.Errorf("synthesize Deployment %s: %w", k, err)
		}
	}
	return nil
}

func copyLabels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// establishCRDs plays the API server's CRD controller: every CustomResourceDefinition is
// Established (a kubectl dump trimmed of status has none).
func (w *World) establishCRDs(ctx context.Context) error {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := w.Base.List(ctx, &crds); err != nil {
		return fmt.Errorf("list CRDs: %w", err)
	}
	for i := range crds.Items {
		c := &crds.Items[i]
		established := false
		for _, cond := range c.Status.Conditions {
			established = established || cond.Type == apiextensionsv1.Established
		}
		if established {
			continue
		}
		c.Status.Conditions = append(c.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue})
		if err := w.Base.Status().Update(ctx, c); err != nil {
			if err := w.Base.Update(ctx, c); err != nil {
				return fmt.Errorf("establish CRD %s: %w", c.Name, err)
			}
		}
	}
	return nil
}

// collect plays the garbage collector for a removed workload: its pods go too.
func (w *World) collect(ctx context.Context, kind, ns, name string) {
	var pods corev1.PodList
	if err := w.Base.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pods.Items {
		if o := ownerOf(&pods.Items[i]); o.kind == kind && o.name == name {
			_ = w.Base.Delete(ctx, &pods.Items[i])
		}
	}
	w.syncBudgets(ctx, ns)
}
