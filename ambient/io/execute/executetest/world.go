package executetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ambientkit/ambientkit/ambient"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

func init() {
	// The fake API server's watches buffer what they have not delivered yet in a channel of this
	// size, and fail when it is full; the executor's watches read them as they come, but a test may
	// make thousands of changes at once.
	watch.DefaultChanSize = 1 << 14
}

// Start is when every World's clock starts.
var Start = time.Date(2026, 9, 15, 10, 0, 0, 0, time.UTC)

// World is a fake cluster to test code that drives an execute.Executor the way this library tests
// its own: a controller-runtime fake client behind interceptors that count every call and can fail
// them, and small simulations of what the real cluster does in reply to an upgrade:
//
//   - the DaemonSet controller: a deleted DaemonSet pod comes back on its node from the DaemonSet's
//     current template; a template change rolls every pod unless the strategy is OnDelete; a node
//     that joins gets a pod of every DaemonSet whose node selector it matches;
//   - the ReplicaSet, StatefulSet and Job controllers and the scheduler: an evicted or deleted pod is
//     replaced on a schedulable node, and a rollout restart replaces every pod of the workload;
//   - the Eviction API with PodDisruptionBudgets: an eviction the budgets do not allow gets 429;
//   - istiod's injection and istio-cni: new pods get the sidecar of the revision their namespace's
//     tag or revision resolves to, or the ambient redirection annotation;
//   - istiod's waypoint deployment controller: the revision that controls a waypoint Gateway
//     renders its Deployment with its own proxy, so a tag move or an istiod upgrade rolls it;
//   - the Istio charts (through FakeHelm): base, istiod, istio-cni, ztunnel and gateway releases
//     change the objects they own, and every release is kept in Helm's storage Secrets, so that
//     observe.Live sees the cluster as it would be.
//
// Snapshot observes it with observe.Live. The world is safe for one executor at a time.
type World struct {
	// Base is the store itself: reads and writes here are not counted and never fail.
	Base client.WithWatch
	// Client is what the executor uses: every call is counted and may fail (InjectFaults, Kill).
	Client client.WithWatch
	// Helm is the Helm client, wired to the world (its changes play the charts).
	Helm *FakeHelm
	// Clock is the executor's clock.
	Clock *FakeClock
	// Model, when set, is what Snapshot returns (a fresh copy each call) instead of observing Base:
	// for tests with a hand-kept mesh state.
	Model *mesh.Snapshot
	// OnChart, when set, is called after the world played a chart change.
	OnChart func(ctx context.Context, op string, rel execute.Release)

	t Reporter
	// api serves the requests of Client one at a time.
	api sync.Mutex
	mu  sync.Mutex
	// calls counts every call that reached the fake API server, "verb Kind"; bookkeeping the
	// journal, lease and backup calls; effects the writes that changed the mesh, "verb object".
	calls, bookkeeping, effects map[string]int
	faultRate, loseRate         float64
	rnd                         *rand.Rand
	faults                      int
	refuse                      map[string]int // pod → evictions still refused (negative: forever)
	dead                        bool
	gen                         map[string]int
	writes                      int
	killAfter                   int
	onKill                      func()
	snapCalls                   int
	tamperBackups               bool
	// slowAgents turns on SlowNodeAgents; unready are the DaemonSet pods not yet Ready.
	slowAgents bool
	unready    map[types.UID]bool
	// migration turns on SimulateMigration; unprogrammed lists waypoints that never get Programmed.
	migration    bool
	unprogrammed map[string]bool
	// denied are the rules reviews refuse (Deny); reviews and requests what was asked (access.go).
	denied   []rbac.Rule
	reviews  []rbac.Permission
	requests map[rbac.Permission]bool
}

// Reporter is where a World reports what goes wrong in it: a *testing.T (or any testing.TB) in tests,
// PanicReporter in examples and programs.
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// PanicReporter is a Reporter for code that has no *testing.T (Example functions, programs): it
// panics with the message.
type PanicReporter struct{}

// Helper does nothing.
func (PanicReporter) Helper() {}

// Errorf panics with the message.
func (PanicReporter) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Fatal panics with the message.
func (PanicReporter) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

// Fatalf panics with the message.
func (PanicReporter) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// NewWorld returns a world holding objs, reporting to t (a *testing.T, or PanicReporter outside
// tests). Helm releases stored in the objects' Helm storage Secrets become FakeHelm's releases.
func NewWorld(t Reporter, objs ...client.Object) *World {
	t.Helper()
	w := &World{t: t, Clock: NewFakeClock(Start), calls: map[string]int{}, bookkeeping: map[string]int{}, effects: map[string]int{},
		refuse: map[string]int{}, gen: map[string]int{}}
	w.Base = newListCache(fake.NewClientBuilder().
		WithScheme(Scheme()).
		WithObjects(objs...).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithIndex(&corev1.Event{}, "reason", func(o client.Object) []string { return []string{o.(*corev1.Event).Reason} }).
		// observe.Live reads ConfigMap istio-cni-config by name; a real API server supports metadata.name for every kind.
		WithIndex(&corev1.ConfigMap{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		Build())
	w.Client = interceptor.NewClient(w.Base, w.recorded(w.funcs()))
	if err := w.establishCRDs(context.Background()); err != nil {
		t.Fatalf("executetest: %v", err)
	}
	rels, err := storedReleases(context.Background(), w.Base)
	if err != nil {
		t.Fatalf("executetest: read the Helm releases stored in the objects: %v", err)
	}
	w.Helm = w.NewHelm(rels...)
	return w
}

// NewHelm returns a FakeHelm holding the releases, wired to the world: its changes play the charts
// and are stored as Helm storage Secrets, its calls are counted and fail like API calls.
func (w *World) NewHelm(releases ...execute.Release) *FakeHelm {
	h := NewFakeHelm(releases...)
	h.OnChange = w.chart
	h.Fault = func(op, rel string) (error, bool) {
		if err := w.pre(context.Background(), "helm-"+op, "HelmRelease", false); err != nil {
			return err, false
		}
		if op != "get" {
			if err := w.wrote(); err != nil {
				return err, true
			}
		}
		return nil, false
	}
	return h
}

// Options returns executor options over the world: its Helm, Snapshot and Clock, this module's
// gates (ambient.Gates), a probe
// "mesh-health" that always says healthy, approvals granted, identity "test-run", and 12 attempts
// for transient errors. tweak adjusts them.
func (w *World) Options(tweak ...func(*execute.Options)) execute.Options {
	opts := execute.Options{
		Helm:     w.Helm,
		Gates:    ambient.Gates(),
		Snapshot: w.Snapshot,
		Clock:    w.Clock,
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
	return opts
}

// Executor returns an executor over the world's Client with Options(tweak...).
func (w *World) Executor(tweak ...func(*execute.Options)) *execute.Executor {
	w.t.Helper()
	e, err := execute.New(w.Client, w.Options(tweak...))
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

// Snapshot observes the world as the executor would (observe.Live through the counted Client), or
// returns a copy of Model when one is set.
func (w *World) Snapshot(ctx context.Context) (*mesh.Snapshot, error) {
	if err := w.pre(ctx, "observe", "Snapshot", false); err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.snapCalls++
	model := w.Model
	w.mu.Unlock()
	if model == nil {
		return observe.Live(ctx, w.Base, observe.Options{})
	}
	b, _ := json.Marshal(model)
	var s mesh.Snapshot
	_ = json.Unmarshal(b, &s)
	return &s, nil
}

// SnapshotCalls counts Snapshot calls.
func (w *World) SnapshotCalls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snapCalls
}

// InjectFaults makes a share of all calls (API, Helm, Snapshot) fail with 409, 429, 500 or a
// timeout, drawn from a source seeded with seed (print it, so a failing run can be repeated).
func (w *World) InjectFaults(rate float64, seed int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faultRate, w.rnd = rate, rand.New(rand.NewSource(seed))
}

// LoseResponses makes a share of the writes that succeed answer with a timeout anyway.
func (w *World) LoseResponses(rate float64, seed int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loseRate, w.rnd = rate, rand.New(rand.NewSource(seed))
}

// Faults counts the faults injected so far.
func (w *World) Faults() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.faults
}

// Kill makes every later call fail, as if the process driving the world died.
func (w *World) Kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = true
}

// Revive undoes Kill: a new process may now talk to the cluster.
func (w *World) Revive() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = false
	w.killAfter = 0
}

// KillAfterWrites kills the world right after the n-th successful write from now on takes effect
// (API writes, Helm changes and journal saves through Journal all count): the write is made, its
// caller gets an error, every later call fails, and then is called (to cancel the run's context).
func (w *World) KillAfterWrites(n int, then func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.killAfter, w.onKill = w.writes+n, then
}

// Writes counts the successful writes so far.
func (w *World) Writes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// TamperBackups makes every backup Secret read after the first two reads come back changed, as if
// someone edited it.
func (w *World) TamperBackups() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tamperBackups = true
}

// SlowNodeAgents makes every DaemonSet pod the world recreates after a deletion start Running but not
// Ready, and turn Ready right after the first LIST of pods that shows it so (as a kubelet's readiness
// probe passes a moment after the pod starts): a wait for it sees it unready once, and its turning
// Ready is a watch event.
func (w *World) SlowNodeAgents() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.slowAgents = true
}

// RefuseEvictions makes the next n evictions of the pod ("namespace/name") fail with 429, as a
// PodDisruptionBudget would; n < 0 refuses them forever.
func (w *World) RefuseEvictions(pod string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refuse[pod] = n
}

var gr = schema.GroupResource{Group: "test", Resource: "things"}

// pre runs before every call: the process may be dead, the context done, or a fault due.
func (w *World) pre(ctx context.Context, verb, kind string, book bool) error {
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

// wrote counts a successful write; it returns an error when the response is lost or the world dies
// with this write.
func (w *World) wrote() error {
	w.mu.Lock()
	w.writes++
	if w.killAfter > 0 && w.writes >= w.killAfter {
		w.dead, w.killAfter = true, 0
		then := w.onKill
		w.mu.Unlock()
		if then != nil {
			then()
		}
		return apierrors.NewServiceUnavailable("the process died right after this write took effect")
	}
	defer w.mu.Unlock()
	if w.rnd != nil && w.loseRate > 0 && w.rnd.Float64() < w.loseRate {
		w.faults++
		return apierrors.NewTimeoutError("injected: the change was made but the response was lost", 1)
	}
	return nil
}

func (w *World) effect(what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.effects[what]++
}

func (w *World) kindOf(obj runtime.Object) string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	if u, ok := obj.(*unstructured.UnstructuredList); ok {
		return u.GetKind()
	}
	gvk, err := apiutil.GVKForObject(obj, w.Base.Scheme())
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return gvk.Kind
}

// IsBookkeeping reports whether an object is the executor's own bookkeeping: its Lease, journal
// ConfigMaps and backup Secrets.
func IsBookkeeping(kind, name string) bool {
	return kind == "Lease" || (kind == "ConfigMap" && strings.HasPrefix(name, "ambientkit-journal-")) ||
		(kind == "Secret" && strings.HasPrefix(name, "ambientkit-backup-"))
}

func ref(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// Calls returns the calls that reached the fake API server, by "verb Kind" (bookkeeping excluded).
func (w *World) Calls() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.calls)
}

// Bookkeeping returns the journal, lease and backup calls, by "verb Kind".
func (w *World) Bookkeeping() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.bookkeeping)
}

// CallCount sums Calls and Bookkeeping.
func (w *World) CallCount() (cluster, book int) {
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

// ResetCounts forgets the counted calls and effects, Helm's changes included.
func (w *World) ResetCounts() {
	w.mu.Lock()
	w.calls, w.bookkeeping, w.effects = map[string]int{}, map[string]int{}, map[string]int{}
	w.mu.Unlock()
	w.Helm.ResetCalls()
}

// Effects returns every change made to the mesh, by "verb object" (restart stamps, which are times,
// read "<clock>"), with Helm changes as "helm <op> <namespace>/<name>". Two runs that did the same
// things have equal effects; a run that did something twice has a count of 2 where the other has 1.
func (w *World) Effects() map[string]int {
	w.mu.Lock()
	out := map[string]int{}
	for k, v := range w.effects {
		out[stampRE.ReplaceAllString(k, "<clock>")] += v
	}
	w.mu.Unlock()
	for k, v := range w.Helm.Calls() {
		out["helm "+k] = v
	}
	return out
}

// Journal returns an in-memory journal whose saves count as writes of the world (and fail once it
// is dead), for crash tests that kill a run between any two writes.
func (w *World) Journal() execute.Journal { return &worldJournal{w: w} }

type worldJournal struct {
	w *World
	m execute.MemoryJournal
}

func (j *worldJournal) Load(ctx context.Context, planHash string) (*execute.Record, error) {
	if err := j.w.pre(ctx, "load", "Journal", true); err != nil {
		return nil, err
	}
	return j.m.Load(ctx, planHash)
}

func (j *worldJournal) Save(ctx context.Context, r *execute.Record) error {
	if err := j.w.pre(ctx, "save", "Journal", true); err != nil {
		return err
	}
	if err := j.m.Save(ctx, r); err != nil {
		return err
	}
	return j.w.wrote()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
