package execute

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Waits wake on watches. A step that waits (a drain for its evicted pods to go or for a budget to
// allow the next eviction, a wait for a node's new ztunnel to turn ready, a verification for a
// rollout to complete or a Deployment to be available) names what it waits on as interests: events of
// a kind (pods, PodDisruptionBudgets, Deployments, DaemonSets, StatefulSets), of an object or of the
// pods on a node, and which of them matter (the last evicted pod deleted, a ready ztunnel pod). The
// run's watch hub keeps one cluster-wide watch per kind, started the first time a step waits on it
// from a fresh resourceVersion (one LIST with limit=1, or the whole LIST for Deployments and
// StatefulSets, whose latest objects it keeps; then one WATCH), and continued from the last
// resourceVersion it saw when the API server ends it. A lane registers its step's interests before
// the step's unit runs, so what happens while the unit runs is judged once the unit says what it
// waits for; then the lane sleeps until an event it waits for, at the latest watchResync later (and
// its step's own deadlines). The event that woke it, kept at its object's latest event since, is
// the lane's proof for its next unit (watchHub.proof): a wait for a node's new ztunnel takes a proof
// that shows it Ready as its look, rather than listing again. A watch that the API server refuses
// (RBAC, a client without Watch) or that breaks is left off: the steps waiting on it poll with
// Options.PollInterval as they would without watches, and the hub tries again with backoff, from a
// fresh LIST, at the next unit that waits on it.

// watchResync is how long a lane whose wait is served by healthy watches sleeps at most before it
// looks again anyway.
const watchResync = 30 * time.Second

// watchKind is a kind of object the executor watches.
type watchKind int

const (
	watchPods watchKind = iota
	watchBudgets
	watchDeployments
	watchDaemonSets
	watchStatefulSets
	numWatchKinds
)

// watchKinds are the kinds' lists, resources (for the permissions) and names. A kind that keeps
// its objects starts from a full LIST and holds the latest of each (see watchHub.cached): the
// workloads a drain's postcondition reads, a few per node, which a run would otherwise GET once per
// node and pass.
var watchKinds = [numWatchKinds]struct {
	name, group, resource string
	list                  func() client.ObjectList
	keeps                 bool
}{
	watchPods:         {"pods", "", "pods", func() client.ObjectList { return &corev1.PodList{} }, false},
	watchBudgets:      {"PodDisruptionBudgets", "policy", "poddisruptionbudgets", func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }, false},
	watchDeployments:  {"Deployments", "apps", "deployments", func() client.ObjectList { return &appsv1.DeploymentList{} }, true},
	watchDaemonSets:   {"DaemonSets", "apps", "daemonsets", func() client.ObjectList { return &appsv1.DaemonSetList{} }, false},
	watchStatefulSets: {"StatefulSets", "apps", "statefulsets", func() client.ObjectList { return &appsv1.StatefulSetList{} }, true},
}

// interest is what a waiting lane waits on: the events of a kind that concern it (namespace, name,
// the node of a pod; "" for any) and, when wake is set, which of those wake it (nil: any does).
type interest struct {
	kind                  watchKind
	namespace, name, node string
	wake                  func(t watch.EventType, obj client.Object) bool
}

func (i interest) concerns(k watchKind, obj client.Object) bool {
	if i.kind != k || (i.namespace != "" && obj.GetNamespace() != i.namespace) || (i.name != "" && obj.GetName() != i.name) {
		return false
	}
	if i.node != "" {
		p, ok := obj.(*corev1.Pod)
		return ok && p.Spec.NodeName == i.node
	}
	return true
}

// waiter is a lane's registration with the hub.
type waiter struct {
	interests []interest
	// poll is true when some of what the lane waits for has no interest: it looks again at its poll
	// interval whatever the watches say.
	poll bool
	// deadline, when set, is when the lane's step times out: it looks again then at the latest.
	deadline time.Time
	// inUnit is true while the lane's unit runs: events are kept in buf and judged when it ends.
	inUnit bool
	buf    []watchEvent
	// missed is set when the watch of a kind it waits on lost events while the unit ran.
	missed bool
	woken  bool
	// proof is the object of the event that woke the lane, kept at its latest event since (nil once
	// deleted, or when the watch may have missed events): what the lane's next unit may take as
	// the state of that object instead of reading it again (see watchHub.proof).
	proof client.Object
}

type watchEvent struct {
	kind watchKind
	typ  watch.EventType
	obj  client.Object
}

// watchHub is a run's watches and the lanes waiting on them.
type watchHub struct {
	e      *engine
	c      client.WithWatch
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	kinds   [numWatchKinds]*kindWatch
	waiters map[*run]*waiter
	// signal receives a value whenever a lane is woken.
	signal chan struct{}
}

// kindWatch is the watch of one kind.
type kindWatch struct {
	kind     watchKind
	start    sync.Mutex // held while the watch starts
	healthy  bool
	refused  bool      // the API server refuses it for good (RBAC, method): never tried again
	retryAt  time.Time // a broken watch is tried again from then on
	backoff  wait.Backoff
	rv       string
	syncReqs chan chan struct{}
	// ended is closed when the loop of the current watch returns, so that a sync never waits on a
	// loop that is gone.
	ended chan struct{}
	// store holds the latest object of each name of a kind that keeps them, filled by the LIST the
	// watch started from and kept by its events; valid while the watch is healthy.
	store map[client.ObjectKey]client.Object
}

// newWatchHub returns the hub of a run over c, nil when c cannot watch.
func newWatchHub(ctx context.Context, e *engine) *watchHub {
	c, ok := e.c.(client.WithWatch)
	if !ok {
		return nil
	}
	h := &watchHub{e: e, c: c, waiters: map[*run]*waiter{}, signal: make(chan struct{}, 1)}
	h.ctx, h.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for k := range h.kinds {
		h.kinds[k] = &kindWatch{kind: watchKind(k), syncReqs: make(chan chan struct{}),
			backoff: wait.Backoff{Duration: time.Second, Factor: 2, Cap: 5 * time.Minute, Steps: 1 << 30}}
	}
	return h
}

// stop ends the watches.
func (h *watchHub) stop() {
	if h == nil {
		return
	}
	h.cancel()
	h.wg.Wait()
}

// arm registers a lane about to run a unit of a step that may wait on ints, starting the watches
// they need.
func (h *watchHub) arm(ctx context.Context, r *run, ints []interest) {
	if h == nil {
		return
	}
	var need [numWatchKinds]bool
	for _, i := range ints {
		need[i.kind] = true
	}
	for k, n := range need {
		if n {
			h.ensure(ctx, h.kinds[k])
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(ints) == 0 {
		delete(h.waiters, r)
		return
	}
	h.waiters[r] = &waiter{interests: ints, inUnit: true}
}

// settle replaces what the lane waits on when its unit ends (nil w: nothing) and judges the events
// that came while it ran. It reports whether every interest is served by a healthy watch.
func (h *watchHub) settle(r *run, w *waiter) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.waiters[r]
	if w == nil || len(w.interests) == 0 {
		delete(h.waiters, r)
		return false
	}
	w.inUnit = false
	if old != nil {
		w.woken = old.missed
		for _, ev := range old.buf {
			w.take(ev, old.missed)
		}
	}
	h.waiters[r] = w
	served := !w.poll
	for _, i := range w.interests {
		served = served && h.kinds[i.kind].healthy
	}
	return served
}

// take judges one event for a waiter not in its unit: the first that wakes it becomes its proof,
// later events of the same object replace it (a deletion drops it). missed says events may have
// been lost before ev: it wakes the waiter but proves nothing. It reports whether ev woke it.
func (w *waiter) take(ev watchEvent, missed bool) bool {
	if w.woken {
		if w.proof != nil && sameObject(w.proof, ev.obj) {
			w.proof = ev.obj
			if ev.typ == watch.Deleted {
				w.proof = nil
			}
		}
		return false
	}
	if !w.judge(ev) {
		return false
	}
	w.woken = true
	if !missed {
		w.proof = ev.obj
	}
	return true
}

// sameObject reports whether a and b are the same object: namespace, name and UID.
func sameObject(a, b client.Object) bool {
	return a.GetUID() == b.GetUID() && a.GetNamespace() == b.GetNamespace() && a.GetName() == b.GetName()
}

// judge reports whether ev wakes the waiter.
func (w *waiter) judge(ev watchEvent) bool {
	for _, i := range w.interests {
		if i.concerns(ev.kind, ev.obj) && (i.wake == nil || i.wake(ev.typ, ev.obj)) {
			return true
		}
	}
	return false
}

// woken reports whether an event woke the lane since its last unit, and forgets it.
func (h *watchHub) woken(r *run) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.waiters[r]
	return w != nil && w.woken
}

// proof returns the object whose event woke the lane since its last unit, at the latest event the
// watch has of it (nil when no event woke the lane, or the watch may have missed some). The lane's
// next unit may judge its wait by it rather than LIST again: a watch event is the object as the API
// server had it at that resourceVersion, as a LIST right then would have returned it.
func (h *watchHub) proof(r *run) client.Object {
	if h == nil || h.heldProof(r) == nil {
		return nil // most units were not woken by a proof: they pay no sync
	}
	h.sync() // the events already received may say more of it
	return h.heldProof(r)
}

func (h *watchHub) heldProof(r *run) client.Object {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.waiters[r]; w != nil && w.woken {
		return w.proof
	}
	return nil
}

// forget drops a lane's registration.
func (h *watchHub) forget(r *run) {
	if h == nil {
		return
	}
	h.mu.Lock()
	delete(h.waiters, r)
	h.mu.Unlock()
}

// wakeChan receives a value when some lane was woken (nil without a hub: never).
func (h *watchHub) wakeChan() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.signal
}

// sync returns once every event the watches have received so far is judged.
func (h *watchHub) sync() {
	if h == nil {
		return
	}
	for _, kw := range h.kinds {
		h.mu.Lock()
		running, ended := kw.healthy, kw.ended
		h.mu.Unlock()
		if !running {
			continue
		}
		done := make(chan struct{})
		select {
		case kw.syncReqs <- done:
			<-done
		case <-h.ctx.Done():
		case <-ended: // the watch just ended: nothing more to judge from it
		}
	}
}

// dispatch judges one event for every waiting lane.
func (h *watchHub) dispatch(ev watchEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	woke := false
	for _, w := range h.waiters {
		if w.inUnit {
			for _, i := range w.interests {
				if i.concerns(ev.kind, ev.obj) {
					w.buf = append(w.buf, ev)
					break
				}
			}
			continue
		}
		if w.take(ev, w.missed) {
			woke = true
		}
	}
	if woke {
		h.notify()
	}
}

// wakeAll wakes every lane that waits on the kind: its watch missed events or broke.
func (h *watchHub) wakeAll(k watchKind) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.waiters {
		for _, i := range w.interests {
			if i.kind == k {
				w.woken, w.missed, w.proof = true, w.inUnit, nil
			}
		}
	}
	h.notify()
}

func (h *watchHub) notify() {
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

// ensure starts the kind's watch unless it runs, is refused, or broke less than its backoff ago.
func (h *watchHub) ensure(ctx context.Context, kw *kindWatch) {
	kw.start.Lock()
	defer kw.start.Unlock()
	h.mu.Lock()
	skip := kw.healthy || kw.refused || h.e.clock.Now().Before(kw.retryAt)
	h.mu.Unlock()
	if skip {
		return
	}
	w, err := h.open(ctx, kw, "")
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.broke(kw, err)
		return
	}
	kw.healthy = true
	kw.backoff.Duration = time.Second
	kw.ended = make(chan struct{})
	h.wg.Add(1)
	go h.loop(kw, w, kw.ended)
}

// open starts a watch of the kind from rv, or from a fresh LIST (limit 1; whole, filling the store, for a kind that keeps its objects) when rv is "".
func (h *watchHub) open(ctx context.Context, kw *kindWatch, rv string) (watch.Interface, error) {
	k := watchKinds[kw.kind]
	if rv == "" {
		l := k.list()
		var opts []client.ListOption
		if !k.keeps {
			opts = append(opts, client.Limit(1))
		}
		if err := h.c.List(ctx, l, opts...); err != nil {
			return nil, fmt.Errorf("list %s to start watching them: %w", k.name, err)
		}
		rv = l.(metav1.ListInterface).GetResourceVersion()
		if k.keeps {
			objs, err := meta.ExtractList(l)
			if err != nil {
				return nil, fmt.Errorf("list %s to start watching them: %w", k.name, err)
			}
			store := make(map[client.ObjectKey]client.Object, len(objs))
			for _, o := range objs {
				if co, ok := o.(client.Object); ok {
					store[client.ObjectKeyFromObject(co)] = co
				}
			}
			h.mu.Lock()
			kw.store = store
			h.mu.Unlock()
		}
	}
	w, err := h.c.Watch(h.ctx, k.list(), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", k.name, err)
	}
	kw.rv = rv
	return w, nil
}

// broke marks a watch that failed to start or ended with an error; called with h.mu held.
func (h *watchHub) broke(kw *kindWatch, err error) {
	kw.healthy, kw.store = false, nil
	if apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) || isStatus(err, http.StatusNotImplemented) {
		kw.refused = true
	}
	kw.retryAt = h.e.clock.Now().Add(kw.backoff.Step())
	h.e.log.Info("watch unavailable: waits on it poll", "kind", watchKinds[kw.kind].name, "refused", kw.refused, "retryAt", kw.retryAt, "error", err)
}

func isStatus(err error, code int32) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s) && s.Status().Code == code
}

// loop receives a watch's events until the run ends; a watch the API server ends is continued from
// the last resourceVersion, one that expired from a fresh LIST (waking every lane waiting on its
// kind, which may have missed events).
func (h *watchHub) loop(kw *kindWatch, w watch.Interface, ended chan struct{}) {
	defer h.wg.Done()
	defer close(ended)
	defer func() { w.Stop() }()
	for {
		select {
		case <-h.ctx.Done():
			return
		case req := <-kw.syncReqs:
			h.drain(kw, w)
			close(req)
		case ev, ok := <-w.ResultChan():
			if ok && h.handle(kw, ev) {
				continue
			}
			w.Stop()
			rv := kw.rv
			if ok { // an error event: the resourceVersion expired
				rv = ""
			}
			nw, err := h.open(h.ctx, kw, rv)
			if err != nil && rv != "" {
				nw, err = h.open(h.ctx, kw, "")
				rv = ""
			}
			if err != nil {
				h.mu.Lock()
				h.broke(kw, err)
				h.mu.Unlock()
				h.wakeAll(kw.kind)
				return
			}
			if rv == "" {
				h.wakeAll(kw.kind)
			}
			w = nw
		}
	}
}

// drain judges the events already received, without waiting for more.
func (h *watchHub) drain(kw *kindWatch, w watch.Interface) {
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || !h.handle(kw, ev) {
				return
			}
		default:
			return
		}
	}
}

// handle takes one event; false for an error event.
func (h *watchHub) handle(kw *kindWatch, ev watch.Event) bool {
	switch ev.Type {
	case watch.Error:
		h.e.log.Debug("watch error event", "kind", watchKinds[kw.kind].name, "error", apierrors.FromObject(ev.Object))
		return false
	case watch.Bookmark:
		if m, err := meta.Accessor(ev.Object); err == nil {
			kw.rv = m.GetResourceVersion()
		}
		return true
	}
	obj, ok := ev.Object.(client.Object)
	if !ok {
		return true
	}
	kw.rv = obj.GetResourceVersion()
	if watchKinds[kw.kind].keeps {
		h.mu.Lock()
		if kw.store != nil {
			if ev.Type == watch.Deleted {
				delete(kw.store, client.ObjectKeyFromObject(obj))
			} else {
				kw.store[client.ObjectKeyFromObject(obj)] = obj
			}
		}
		h.mu.Unlock()
	}
	h.dispatch(watchEvent{kind: kw.kind, typ: ev.Type, obj: obj})
	return true
}

// cached copies the kind's latest object of key into into, as the watch has it, once every event
// received so far is applied (sync). ok is false when the kind keeps no objects or its watch is not
// healthy: the caller then reads the API server. A key the watch has no object of is not found.
func (h *watchHub) cached(k watchKind, key client.ObjectKey, into client.Object) (found, ok bool) {
	if h == nil || !watchKinds[k].keeps {
		return false, false
	}
	h.sync()
	h.mu.Lock()
	defer h.mu.Unlock()
	kw := h.kinds[k]
	if !kw.healthy || kw.store == nil {
		return false, false
	}
	obj, found := kw.store[key]
	if !found {
		return false, true
	}
	switch t := into.(type) {
	case *appsv1.Deployment:
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return false, false
		}
		d.DeepCopyInto(t)
	case *appsv1.StatefulSet:
		s, ok := obj.(*appsv1.StatefulSet)
		if !ok {
			return false, false
		}
		s.DeepCopyInto(t)
	default:
		return false, false
	}
	return true, true
}
