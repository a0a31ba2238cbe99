package execute

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var drainAction = action{
	// A drain waits on its node's pods and on the budgets that refuse its evictions.
	interests: func(st *plan.Step) []interest {
		return []interest{{kind: watchPods, node: st.Drain.Node}, {kind: watchBudgets}}
	},
	phase: "draining",
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.drain(ctx, r, st, rec, st.Drain)
	},
	counts:  "drained",
	objects: func(st *plan.Step) []mesh.ObjectRef { return nodeRef(st.Drain.Node) },
	journal: drainJournal,
	backup:  usesNoBackup,
}

// drainJournal is the journal policy of drains: a repeat evicts only pods still there. A drain of n
// stays unrecorded only across another node's cordon or uncordon and a pod deletion on n itself (the
// node's own ztunnel: a drain leaves DaemonSet pods alone); a later drain could move pods onto n,
// which a repeat would evict. The drain writes the journal itself, right before its first eviction.
var drainJournal = &journalPolicy{later: true, recordsItself: true, across: map[plan.Kind]nodeMatch{
	plan.KindCordon: otherNode, plan.KindUncordon: otherNode,
	plan.KindDeletePod: sameNode,
}}

// annotationMirror marks a static (mirror) pod; the kubelet owns it and the API cannot evict it.
const annotationMirror = "kubernetes.io/config.mirror"

// stays reports whether a drain leaves the pod alone: DaemonSet pods (they tolerate the cordon and
// would come back), mirror pods, and pods that finished.
func stays(p *corev1.Pod) bool {
	if _, ok := p.Annotations[annotationMirror]; ok {
		return true
	}
	if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" {
		return true
	}
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func hasEmptyDir(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			return true
		}
	}
	return false
}

// drain runs one pass over a node: one LIST of the node's pods (field selector spec.nodeName), one
// eviction per pod that still runs and is not already terminating, all at once. Pods a
// PodDisruptionBudget protects get 429 and are tried again on a later pass, with backoff; the budgets
// are named in a WaitingOnPDB event (by the name the 429 gives, or from a LIST of the budgets when it
// gives none). The drain is finished when no pod but DaemonSet and mirror pods is left on the node.
// Between passes it waits on the watch of pods for every pod it evicted, or that was terminating, to
// be gone (and for a Job pod to finish, or a pod to arrive), and on the budgets that refused it to
// allow a disruption again.
func (e *engine) drain(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, d *plan.NodeDrain) (outcome, error) {
	var pods corev1.PodList
	if err := e.retry(ctx, "list pods on node "+d.Node, func(ctx context.Context) error {
		return e.c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": d.Node})
	}); err != nil {
		return outcome{}, fmt.Errorf("list pods on node %s: %w", d.Node, err)
	}
	var ambientNS map[string]bool
	if d.AmbientOnly {
		var err error
		if ambientNS, err = e.ambientNamespacesFor(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	ds, err := sortDrain(pods.Items, d, ambientNS)
	if err != nil {
		return outcome{}, err
	}
	left := len(ds.terminating) + len(ds.evict) + len(ds.jobs)
	total := max(atoi(rec.State["pods"]), left)
	counted := false
	if !r.dry && strconv.Itoa(total) != rec.State["pods"] {
		rec.State["pods"] = strconv.Itoa(total)
		counted = true
	}
	if left == 0 {
		delete(r.backoff, st.ID)
		if !r.dry {
			r.justSaw = unitView{step: st.ID, drained: d.Node, ambient: d.AmbientOnly}
			r.nodePods = podsView{node: d.Node, at: e.clock.Now(), pods: pods.Items}
		}
		if total == 0 {
			return finished(fmt.Sprintf("node %s had no pod to evict", d.Node)), nil
		}
		return finished(fmt.Sprintf("drained node %s: %s evicted and gone", d.Node, plural(total, "pod", "pods"))), nil
	}
	// Record the count before evicting: a Step call continuing the drain may run in another process,
	// and a run that stops mid-drain leaves the drain in progress in the journal (which then also holds
	// the completions recorded later, such as the node's cordon). An Apply that only waits for pods
	// to go keeps the count in memory.
	if counted && (r.stepMode || len(ds.evict) > 0) {
		err = e.save(ctx, r)
	} else if len(ds.evict) > 0 {
		err = e.recordBefore(ctx, r, st)
	}
	if err != nil {
		return outcome{}, err
	}
	if err := e.evict(ctx, r, d, &ds); err != nil {
		return outcome{}, err
	}
	var pdbs, pdbNames []string
	switch {
	case len(ds.blocked) > 0 && ds.unnamed:
		if pdbNames, pdbs, err = e.blockingBudgets(ctx, ds.blocked); err != nil {
			return outcome{}, err
		}
	case len(ds.blocked) > 0:
		pdbNames, pdbs = ds.refusers()
	}
	if r.dry {
		return dryDrain(d, &ds, pdbs, pdbNames), nil
	}
	return e.drainWaits(ctx, r, st, rec, d, &ds, total, pdbs, pdbNames)
}

// drainSet sorts a node's pods for one pass of its drain.
type drainSet struct {
	terminating, evict, jobs []*corev1.Pod
	// blocked are the pods whose eviction a budget refused, evicted the pods it accepted and failed
	// those it answered with a transient error.
	blocked         []*corev1.Pod
	evicted, failed []string
	evictedPods     []*corev1.Pod
	// refused names the budget each refusal named ("namespace/name" → what it said); unnamed is set
	// when a refusal named none (a server that gives no cause, or throttling), so the budgets are
	// listed to name them.
	refused map[string]string
	unnamed bool
}

// refusers returns the budgets the refusals named, "namespace/name", and their descriptions.
func (ds *drainSet) refusers() (names, descs []string) {
	for n := range ds.refused {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		descs = append(descs, fmt.Sprintf("PodDisruptionBudget %s (%s)", n, ds.refused[n]))
	}
	return names, descs
}

// budgetCause reads the budget a 429 of the Eviction API names: the API server adds a cause of type
// DisruptionBudget whose message starts "The disruption budget <name> " and says why (kubernetes
// pkg/registry/core/pod/storage/eviction.go, checkAndDecrement: "needs %d healthy pods and has %d
// currently", or that it failed sync or does not allow evicting pods currently).
func budgetCause(err error) (name, why string, ok bool) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return "", "", false
	}
	const prefix = "The disruption budget "
	for _, c := range st.Status().Details.Causes {
		if c.Type != policyv1.DisruptionBudgetCause || !strings.HasPrefix(c.Message, prefix) {
			continue
		}
		name, why, _ = strings.Cut(strings.TrimPrefix(c.Message, prefix), " ")
		if name != "" {
			return name, why, true
		}
	}
	return "", "", false
}

// sortDrain sorts the pods on a node: those the drain leaves, those terminating already, the Job
// pods it waits for (KeepJobs), and those to evict; a pod whose emptyDir data the plan does not
// allow losing stops it.
func sortDrain(pods []corev1.Pod, d *plan.NodeDrain, ambientNS map[string]bool) (drainSet, error) {
	var ds drainSet
	for i := range pods {
		p := &pods[i]
		switch {
		case stays(p), d.AmbientOnly && !ambientCaptured(p, ambientNS):
		case p.DeletionTimestamp != nil:
			ds.terminating = append(ds.terminating, p)
		case d.KeepJobs && ownedByJob(p):
			ds.jobs = append(ds.jobs, p) // its work is not stopped: the drain waits for it to finish
		default:
			if hasEmptyDir(p) && !d.DeleteEmptyDirData {
				return ds, fmt.Errorf("pod %s/%s on node %s mounts an emptyDir volume and the plan does not allow losing its data (drain.deleteEmptyDirData); move the pod or re-plan", p.Namespace, p.Name, d.Node)
			}
			ds.evict = append(ds.evict, p)
		}
	}
	return ds, nil
}

// evictAtOnce bounds the evictions of one node's pass that are in flight together. A drain lasts as
// long as its slowest pod takes to go, so its pods are evicted at once (as kubectl drain does) rather
// than one after the other; the bound keeps a node with hundreds of pods from opening as many
// requests.
const evictAtOnce = 16

// evict asks the Eviction API to evict each pod of ds.evict, once (dryRun=All in a dry run), up to
// evictAtOnce at a time; the answers are sorted in ds in the pods' order.
func (e *engine) evict(ctx context.Context, r *run, d *plan.NodeDrain, ds *drainSet) error {
	errs := make([]error, len(ds.evict))
	sem := make(chan struct{}, evictAtOnce)
	var wg sync.WaitGroup
	for i, p := range ds.evict {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
			var opts []client.SubResourceCreateOption
			if r.dry {
				ev.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
				opts = append(opts, client.DryRunAll)
			}
			errs[i] = e.c.SubResource("eviction").Create(ctx, p, ev, opts...)
		}()
	}
	wg.Wait()
	for i, p := range ds.evict {
		err := errs[i]
		switch {
		case err == nil:
			ds.evicted = append(ds.evicted, p.Namespace+"/"+p.Name)
			ds.evictedPods = append(ds.evictedPods, p)
		case apierrors.IsNotFound(err):
			// gone already
		case apierrors.IsTooManyRequests(err):
			ds.blocked = append(ds.blocked, p)
			if name, why, ok := budgetCause(err); ok {
				if ds.refused == nil {
					ds.refused = map[string]string{}
				}
				ds.refused[p.Namespace+"/"+name] = why
			} else {
				ds.unnamed = true
			}
		case transient(err):
			ds.failed = append(ds.failed, fmt.Sprintf("%s/%s (%v)", p.Namespace, p.Name, err))
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			return fmt.Errorf("evict pod %s/%s from node %s: %w", p.Namespace, p.Name, d.Node, err)
		}
	}
	return nil
}

// dryDrain says what a drain would do.
func dryDrain(d *plan.NodeDrain, ds *drainSet, pdbs, pdbNames []string) outcome {
	msg := fmt.Sprintf("would evict %s from node %s: %s", plural(len(ds.evict), "pod", "pods"), d.Node, plan.ListSome(podRefs(ds.evict), 10))
	if len(ds.jobs) > 0 {
		msg += fmt.Sprintf("; would wait for %s to finish: %s", plural(len(ds.jobs), "Job pod", "Job pods"), plan.ListSome(podRefs(ds.jobs), 10))
	}
	if len(ds.blocked) > 0 {
		msg += fmt.Sprintf("; right now %s would be refused by %s", plural(len(ds.blocked), "eviction", "evictions"), strings.Join(pdbs, ", "))
	}
	out := finished(msg)
	out.touched, out.held = podObjects(ds.evict), budgetObjects(pdbNames)
	return out
}

// drainWaits ends a pass that left pods on the node: it fails the drain past its timeout, and
// otherwise says what the drain waits for, in words and for the watches.
func (e *engine) drainWaits(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, d *plan.NodeDrain, ds *drainSet, total int, pdbs, pdbNames []string) (outcome, error) {
	timeout := e.opts.DefaultDrainTimeout
	if d.TimeoutSeconds > 0 {
		timeout = time.Duration(d.TimeoutSeconds) * time.Second
	}
	still := len(ds.terminating) + len(ds.blocked) + len(ds.failed) + len(ds.jobs)
	done := total - still
	if elapsed := e.clock.Now().Sub(rec.AttemptStarted); elapsed > timeout {
		// A node removed mid-drain keeps its pods until the pod garbage collector deletes them; the
		// drain then has nothing left to do.
		if gone, err := e.nodeGone(ctx, r, st, d.Node); err != nil || gone {
			if err != nil {
				return outcome{}, err
			}
			return skippedGone(d.Node), nil
		}
		return outcome{}, drainTimeout(d, ds, timeout, still, pdbs)
	}
	r.waitUntil(rec.AttemptStarted.Add(timeout + time.Millisecond))
	e.drainWatch(r, d, ds, pdbNames)
	progress := fmt.Sprintf("node %s: %d/%d pods evicted", d.Node, done, total)
	if len(ds.terminating) > 0 {
		progress += fmt.Sprintf(", %d terminating", len(ds.terminating))
	}
	if len(ds.jobs) > 0 {
		progress += fmt.Sprintf(", waiting for %s to finish: %s", plural(len(ds.jobs), "Job pod", "Job pods"), plan.ListSome(podRefs(ds.jobs), 3))
	}
	r.view = drainHold(e.clock.Now(), ds, pdbNames, done, total)
	wait := time.Duration(0)
	if len(ds.blocked) > 0 {
		if err := e.drainStuck(ctx, r, d.Node, pdbNames); err != nil {
			return outcome{}, err
		}
		progress += fmt.Sprintf(", %d waiting on %s", len(ds.blocked), strings.Join(pdbs, ", "))
		n := r.backoff[st.ID]
		r.backoff[st.ID] = n + 1
		wait = min(e.opts.PollInterval<<min(n, 8), maxPDBBackoff)
		ev := e.stepEvent(r, st, EventWaitingOnPDB, fmt.Sprintf("drain of node %s waits: %s refused by %s; retrying in %s", d.Node, plural(len(ds.blocked), "eviction was", "evictions were"), strings.Join(pdbs, ", "), wait))
		ev.PDBs, ev.Pods, ev.Done, ev.Of, ev.Node = pdbNames, podRefs(ds.blocked), done, total, d.Node
		e.emit(ev)
	} else {
		delete(r.backoff, st.ID)
		clear(r.stuckSince)
		if len(ds.evicted) > 0 && len(ds.terminating) == 0 && len(ds.failed) == 0 {
			wait = time.Nanosecond // evictions went through: look again at once for the pods to go
		}
		if len(ds.jobs) > 0 && len(ds.evicted) == 0 {
			wait = max(wait, e.opts.PollInterval) // Jobs take their time
		}
	}
	return outcome{progress: progress, retryAfter: wait, done: done, of: total, touched: podObjects(ds.evict), held: budgetObjects(pdbNames)}, nil
}

// drainTimeout is the error of a drain past its timeout, naming what holds it.
func drainTimeout(d *plan.NodeDrain, ds *drainSet, timeout time.Duration, still int, pdbs []string) error {
	switch {
	case len(ds.blocked) > 0:
		return fmt.Errorf("%w: drain of node %s did not finish within %s; %s still run: %s; held by %s: scale the workloads up or relax the budgets, then run again (the journal resumes the drain)",
			ErrTimeout, d.Node, timeout, plural(still, "pod", "pods"), plan.ListSome(append(podRefs(ds.blocked), podRefs(ds.terminating)...), 10), strings.Join(pdbs, ", "))
	case len(ds.jobs) > 0:
		return fmt.Errorf("%w: drain of node %s did not finish within %s; the plan waits for running Jobs and %s still run: %s; let them finish and run again (the journal resumes the drain), or re-plan evicting Jobs",
			ErrTimeout, d.Node, timeout, plural(len(ds.jobs), "Job pod", "Job pods"), plan.ListSome(podRefs(ds.jobs), 10))
	}
	return fmt.Errorf("%w: drain of node %s did not finish within %s; %s still run: %s; see why they do not terminate (finalizers, grace periods), then run again",
		ErrTimeout, d.Node, timeout, plural(still, "pod", "pods"), plan.ListSome(append(podRefs(ds.terminating), ds.failed...), 10))
}

// drainWatch says what wakes the drain: every pod it evicted, or found terminating, gone (a pod
// that arrives on the node, or a Job pod that finishes, too); a budget that refused it allowing a
// disruption again. A pass with evictions that failed with a transient error polls.
func (e *engine) drainWatch(r *run, d *plan.NodeDrain, ds *drainSet, pdbNames []string) {
	pending := map[types.UID]bool{}
	for _, p := range append(append([]*corev1.Pod(nil), ds.terminating...), ds.evictedPods...) {
		pending[p.UID] = true
	}
	jobs := map[types.UID]bool{}
	for _, p := range ds.jobs {
		jobs[p.UID] = true
	}
	blocked := len(ds.blocked) > 0
	r.waitOn(interest{kind: watchPods, node: d.Node, wake: func(t watch.EventType, obj client.Object) bool {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return false
		}
		switch {
		case t == watch.Deleted:
			delete(pending, p.UID)
			return len(pending) == 0 && !blocked && len(jobs) == 0
		case jobs[p.UID]:
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		}
		return t == watch.Added && !stays(p) && !pending[p.UID]
	}})
	for _, n := range pdbNames {
		ns, name, _ := strings.Cut(n, "/")
		r.waitOn(interest{kind: watchBudgets, namespace: ns, name: name, wake: func(_ watch.EventType, obj client.Object) bool {
			b, ok := obj.(*policyv1.PodDisruptionBudget)
			return ok && b.Status.DisruptionsAllowed > 0
		}})
	}
	if blocked && len(pdbNames) == 0 || len(ds.failed) > 0 {
		r.waitPoll()
	}
}

// drainHold says what holds a drain: the budgets refusing it, else its slowest terminating pod.
func drainHold(now time.Time, ds *drainSet, pdbNames []string, done, total int) unitHold {
	h := unitHold{evicted: done, of: total}
	for _, p := range append(append([]*corev1.Pod(nil), ds.terminating...), ds.evictedPods...) {
		left := graceLeft(now, p)
		if left > h.left || h.what == "" {
			h.left = left
			h.what = fmt.Sprintf("pod %s/%s terminating, %s of grace left", p.Namespace, p.Name, left.Round(time.Second))
		}
	}
	if len(pdbNames) > 0 {
		h.what = "PDB " + strings.Join(pdbNames, ", ")
	}
	if len(ds.jobs) > 0 && h.what == "" {
		h.what = "Job pod " + plan.ListSome(podRefs(ds.jobs), 2) + " running"
	}
	return h
}

// graceLeft is how long a pod may still take to terminate: until its deletionTimestamp (set by its
// deletion to the end of its grace period) or, for a pod just evicted, its whole grace period.
func graceLeft(now time.Time, p *corev1.Pod) time.Duration {
	if p.DeletionTimestamp != nil {
		return max(0, p.DeletionTimestamp.Sub(now))
	}
	g := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		g = *p.Spec.TerminationGracePeriodSeconds
	}
	return time.Duration(g) * time.Second
}

// podObjects names pods as objects.
func podObjects(ps []*corev1.Pod) []mesh.ObjectRef {
	out := make([]mesh.ObjectRef, 0, len(ps))
	for _, p := range ps {
		out = append(out, mesh.ObjectRef{Kind: "Pod", Namespace: p.Namespace, Name: p.Name})
	}
	return out
}

// budgetObjects turns "namespace/name" budget names into objects.
func budgetObjects(names []string) []mesh.ObjectRef {
	var out []mesh.ObjectRef
	for _, n := range names {
		ns, name, _ := strings.Cut(n, "/")
		out = append(out, mesh.ObjectRef{Kind: "PodDisruptionBudget", Namespace: ns, Name: name})
	}
	return out
}

// ownedByJob reports whether a Job controls the pod.
func ownedByJob(p *corev1.Pod) bool {
	c := metav1.GetControllerOf(p)
	return c != nil && c.Kind == "Job"
}

func podRefs(ps []*corev1.Pod) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

// blockingBudgets names the PodDisruptionBudgets covering the blocked pods ("namespace/name") and
// describes them, from one LIST of all budgets: for refusals that named no budget (the API server
// names it in the 429's cause, budgetCause).
func (e *engine) blockingBudgets(ctx context.Context, blocked []*corev1.Pod) (names, descs []string, err error) {
	var list policyv1.PodDisruptionBudgetList
	if err := e.retry(ctx, "list PodDisruptionBudgets", func(ctx context.Context) error { return e.c.List(ctx, &list) }); err != nil {
		return nil, nil, fmt.Errorf("list PodDisruptionBudgets to name what holds the drain: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range blocked {
		for i := range list.Items {
			b := &list.Items[i]
			if b.Namespace != p.Namespace || b.Spec.Selector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || !sel.Matches(labelsSet(p.Labels)) {
				continue
			}
			name := fmt.Sprintf("PodDisruptionBudget %s/%s (%d disruptions allowed, %d/%d healthy)", b.Namespace, b.Name,
				b.Status.DisruptionsAllowed, b.Status.CurrentHealthy, b.Status.DesiredHealthy)
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
				names = append(names, b.Namespace+"/"+b.Name)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "a PodDisruptionBudget the executor could not match (or API throttling)")
	}
	sort.Strings(out)
	sort.Strings(names)
	return names, out, nil
}

// namespaceTTL is how long a run reuses its list of ambient namespaces for drains.
const namespaceTTL = 30 * time.Second

// ambientNamespacesFor is ambientNamespaces for drains and their checks, listed at most once per
// namespaceTTL of a run: namespaces join ambient rarely, and a drain that misses one joined seconds
// ago only leaves its pods on a node whose ztunnel is then replaced (their connections reset once).
// Checks that guard a removal (NoAmbientPods) list every time.
func (e *engine) ambientNamespacesFor(ctx context.Context, r *run) (map[string]bool, error) {
	now := e.clock.Now()
	if ns, ok := r.cachedAmbientNS(now, namespaceTTL); ok {
		return ns, nil
	}
	ns, err := e.ambientNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	r.cacheAmbientNS(ns, now)
	return ns, nil
}

// ambientNamespaces lists the namespaces labelled istio.io/dataplane-mode=ambient (one LIST).
func (e *engine) ambientNamespaces(ctx context.Context) (map[string]bool, error) {
	var nss corev1.NamespaceList
	if err := e.list(ctx, "namespaces", &nss); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range nss.Items {
		if n.Labels[mesh.LabelDataplaneMode] == "ambient" {
			out[n.Name] = true
		}
	}
	return out, nil
}

// ambientCaptured reports whether ambient captures the pod, by istio-cni's rules: it carries the
// redirection annotation, or is labelled ambient, or is in an ambient namespace and not opted out;
// never a sidecar pod or a host-network pod.
func ambientCaptured(p *corev1.Pod, ambientNS map[string]bool) bool {
	if p.Spec.HostNetwork {
		return false
	}
	if _, sidecar := p.Annotations[mesh.AnnotationSidecarStatus]; sidecar {
		return false
	}
	if p.Annotations[mesh.AnnotationRedirection] != "" { // the CNI says so (also under custom enablementSelectors)
		return true
	}
	mode := p.Labels[mesh.LabelDataplaneMode]
	return mode == "ambient" || (mode != "none" && ambientNS[p.Namespace])
}
