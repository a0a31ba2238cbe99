//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/kwokstages"
)

const timingNS = "kwok-timing-e2e"

// TestKwokTiming proves the kwok stages' real timing (internal/kwokstages) on the live cluster, from
// what the API objects say and the order a watch saw them in:
//
//   - in the shared cluster, which stays fast for every other suite, a Deployment's pod annotated
//     timing=realistic with a grace period of 5s, evicted through the Eviction API, stays Terminating
//     until its deletionTimestamp and is gone then; its replacement, made at once by the real
//     ReplicaSet controller, is placed by the real scheduler on the other node of the two it may use,
//     the first being cordoned;
//   - a ztunnel-labelled pod annotated ready-after=3s runs at once but turns Ready no earlier than 3s
//     after it was created; a pod without the annotation turns Ready at once (and so does a ztunnel
//     pod without it, unless the cluster delays ztunnel);
//   - the cluster-wide mode (cluster.Options.Timing realistic, what E2E_TIMING=realistic selects):
//     every pod honours its grace period unless annotated timing=fast, and every app=ztunnel pod turns
//     Ready only after the ztunnel delay. Unless the shared cluster runs in that mode, this part runs
//     on a small cluster of its own (one node, about 10s), so the shared one stays fast.
func TestKwokTiming(t *testing.T) {
	if h.Cluster.Provider() != cluster.ProviderKwok {
		failCannotRun(t, "TestKwokTiming tests kwok's stages; the cluster is "+h.Cluster.Provider())
	}
	const grace = 5 * time.Second
	var nodeA, nodeB string
	var wasUnschedulable map[string]bool
	f := features.New("kwok stages with real timing").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			pool := h.Nodes[harness.PoolGeneral]
			if len(pool) < 2 {
				t.Fatalf("pool %s has %d nodes, want 2", harness.PoolGeneral, len(pool))
			}
			nodeA, nodeB = pool[0], pool[1]
			wasUnschedulable = map[string]bool{}
			for _, n := range []string{nodeA, nodeB} {
				nd, err := h.Clientset.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				wasUnschedulable[n] = nd.Spec.Unschedulable
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: timingNS}}
			if _, err := h.Clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The Deployment's pod starts on A (B cordoned meanwhile), then A is cordoned and B opened.
			cordon(ctx, t, h.Clientset, nodeB, true)
			dep := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "graceful", Namespace: timingNS},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "graceful"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "graceful"},
							Annotations: map[string]string{kwokstages.AnnotationTiming: kwokstages.TimingRealistic}},
						Spec: corev1.PodSpec{
							Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
								NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
									Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{nodeA, nodeB}}}}},
							}}},
							Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1.0"}},
							TerminationGracePeriodSeconds: ptr.To(int64(grace / time.Second)),
						},
					},
				},
			}
			if _, err := h.Clientset.AppsV1().Deployments(timingNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			p := waitPod(ctx, t, h.Clientset, timingNS, "app=graceful", func(p *corev1.Pod) bool { return podReady(p) })
			if p.Spec.NodeName != nodeA {
				t.Fatalf("pod %s runs on %s, want %s (the only schedulable node of the two)", p.Name, p.Spec.NodeName, nodeA)
			}
			cordon(ctx, t, h.Clientset, nodeB, false)
			cordon(ctx, t, h.Clientset, nodeA, true)
			return ctx
		}).
		Assess("an evicted pod stays Terminating until its deletionTimestamp; its replacement lands on the other node", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			old := waitPod(ctx, t, h.Clientset, timingNS, "app=graceful", podReady)
			rec := recordPods(ctx, t, h.Clientset, timingNS)
			defer rec.stop()
			evictedAt := time.Now()
			if err := h.Clientset.PolicyV1().Evictions(timingNS).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: timingNS}}); err != nil {
				t.Fatalf("evict %s: %v", old.Name, err)
			}
			rec.waitFor(t, time.Minute, "the evicted pod gone and its replacement ready", func(evs []podEvent) bool {
				_, gone := deletedAt(evs, old.UID)
				return gone && replacementOf(evs, old.UID) != nil && podReady(replacementOf(evs, old.UID).pod)
			})
			evs := rec.events()
			checkTerminating(t, evs, old.UID, evictedAt, grace)
			goneAt, _ := deletedAt(evs, old.UID)
			first := firstEvent(evs, func(e podEvent) bool { return e.pod.UID != old.UID && e.typ == watch.Added })
			if first == nil || !first.at.Before(goneAt) {
				t.Errorf("the ReplicaSet made no replacement while %s was terminating (replacement first seen %v, old pod gone %s)", old.Name, first, goneAt.Format(time.RFC3339Nano))
			} else if first.pod.Spec.NodeName != "" {
				t.Errorf("replacement %s was created bound to %s: the scheduler did not place it", first.pod.Name, first.pod.Spec.NodeName)
			}
			repl := replacementOf(evs, old.UID).pod
			if repl.Spec.NodeName != nodeB {
				t.Errorf("replacement %s runs on %s, want %s (%s is cordoned)", repl.Name, repl.Spec.NodeName, nodeB, nodeA)
			}
			if c := condition(repl, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionTrue {
				t.Errorf("replacement %s has no PodScheduled=True condition from the scheduler: %+v", repl.Name, repl.Status.Conditions)
			}
			t.Logf("evicted %s at %s: deletionTimestamp %s, gone %s (watch); replacement %s created %s, on %s",
				old.Name, evictedAt.Format(time.RFC3339Nano), deletionTimestampOf(evs, old.UID).Format(time.RFC3339), goneAt.Format(time.RFC3339Nano),
				repl.Name, first.at.Format(time.RFC3339Nano), repl.Spec.NodeName)
			return ctx
		}).
		Assess("a pod annotated ready-after turns Ready no earlier than its delay; others at once", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			_, ztDelay := h.Cluster.Timing()
			checkReadiness(ctx, t, h.Clientset, timingNS, nodeB, ztDelay)
			return ctx
		}).
		Assess("cluster-wide realistic timing: every pod honours its grace, ztunnel turns Ready late", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if mode, zt := h.Cluster.Timing(); mode == cluster.TimingRealistic {
				checkClusterWide(ctx, t, h.Clientset, timingNS, nodeB, zt)
				return ctx
			}
			c, err := cluster.New(cluster.Options{
				Provider: cluster.ProviderKwok, Name: "ambientkit-e2e-timing", RunDir: filepath.Join(h.Cluster.RunDir(), "timing-cluster"),
				BinDir: h.Opts.Cluster.BinDir, Timing: cluster.TimingRealistic, Logf: h.Logf,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := c.Destroy(ctx); err != nil {
					t.Error(err)
				}
			}()
			if _, err := c.Create(ctx); err != nil {
				t.Fatal(err)
			}
			cs, err := c.Clientset()
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := cluster.CreateNodes(ctx, cs, []cluster.Pool{{Name: harness.PoolGeneral, Nodes: 1}}, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			mode, zt := c.Timing()
			if mode != cluster.TimingRealistic || zt != kwokstages.DefaultZtunnelReady {
				t.Fatalf("cluster timing %s, ztunnel %s; want %s, %s", mode, zt, cluster.TimingRealistic, kwokstages.DefaultZtunnelReady)
			}
			checkClusterWide(ctx, t, cs, "default", nodes[harness.PoolGeneral][0], zt)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			for n, was := range wasUnschedulable {
				cordon(ctx, t, h.Clientset, n, was)
			}
			err := h.Clientset.CoreV1().Namespaces().Delete(ctx, timingNS, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
			// Its pods honour their grace periods: wait until they are gone, so later suites never see them.
			err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				_, err := h.Clientset.CoreV1().Namespaces().Get(ctx, timingNS, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
			if err != nil {
				t.Errorf("namespace %s not gone: %v", timingNS, err)
			}
			return ctx
		})
	testenv.Test(t, f.Feature())
}

// checkReadiness creates, on node, a ztunnel-labelled pod annotated ready-after=3s and a plain pod
// (and, when the cluster does not delay ztunnel, a ztunnel pod without the annotation), and checks
// from the watch that the annotated one ran unready first and turned Ready no earlier than 3s after
// its creation, and the others at once.
func checkReadiness(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, node string, ztDelay time.Duration) {
	t.Helper()
	const delay = 3 * time.Second
	rec := recordPods(ctx, t, cs, ns)
	defer rec.stop()
	late := barePod(ns, "ztunnel-late", node, map[string]string{"app": "ztunnel"}, map[string]string{kwokstages.AnnotationReadyAfter: delay.String()}, 0)
	plain := barePod(ns, "plain", node, map[string]string{"app": "plain"}, nil, 0)
	pods := []*corev1.Pod{late, plain}
	if ztDelay == 0 {
		pods = append(pods, barePod(ns, "ztunnel-fast", node, map[string]string{"app": "ztunnel"}, nil, 0))
	}
	uids := createPods(ctx, t, cs, pods)
	rec.waitFor(t, time.Minute, "the pods Ready", func(evs []podEvent) bool {
		for _, uid := range uids {
			if last(evs, uid) == nil || !podReady(last(evs, uid).pod) {
				return false
			}
		}
		return true
	})
	evs := rec.events()
	checkReadyAfter(t, evs, uids[0], delay)
	for _, uid := range uids[1:] {
		checkReadyAtOnce(t, evs, uid)
	}
}

// checkClusterWide checks the cluster-wide realistic mode on node: a pod with no annotation honours
// its grace period, one annotated timing=fast is gone at once, and an app=ztunnel pod without
// annotations turns Ready no earlier than ztDelay after its creation, while other pods are Ready at
// once.
func checkClusterWide(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, node string, ztDelay time.Duration) {
	t.Helper()
	const grace = 3 * time.Second
	rec := recordPods(ctx, t, cs, ns)
	defer rec.stop()
	zt := barePod(ns, "ztunnel-wide", node, map[string]string{"app": "ztunnel"}, nil, 0)
	graceful := barePod(ns, "graceful-wide", node, map[string]string{"app": "plain"}, nil, grace)
	fast := barePod(ns, "fast-wide", node, map[string]string{"app": "plain"}, map[string]string{kwokstages.AnnotationTiming: kwokstages.TimingFast}, grace)
	uids := createPods(ctx, t, cs, []*corev1.Pod{zt, graceful, fast})
	rec.waitFor(t, time.Minute, "the pods Ready", func(evs []podEvent) bool {
		for _, uid := range uids {
			if last(evs, uid) == nil || !podReady(last(evs, uid).pod) {
				return false
			}
		}
		return true
	})
	evs := rec.events()
	checkReadyAfter(t, evs, uids[0], ztDelay)
	checkReadyAtOnce(t, evs, uids[1])
	deletedFrom := time.Now()
	for _, p := range []*corev1.Pod{graceful, fast} {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec.waitFor(t, time.Minute, "the deleted pods gone", func(evs []podEvent) bool {
		_, a := deletedAt(evs, uids[1])
		_, b := deletedAt(evs, uids[2])
		return a && b
	})
	evs = rec.events()
	checkTerminating(t, evs, uids[1], deletedFrom, grace)
	goneAt, _ := deletedAt(evs, uids[2])
	if dt := deletionTimestampOf(evs, uids[2]); !dt.IsZero() && !goneAt.Before(dt) {
		t.Errorf("pod %s annotated timing=fast was gone at %s, not before its deletionTimestamp %s", fast.Name, goneAt.Format(time.RFC3339Nano), dt.Format(time.RFC3339))
	}
}

// checkTerminating asserts from the watch that the pod got a deletionTimestamp of about now + grace
// (the API server's, in whole seconds) with the grace period asked for, stayed (Terminating) past
// that time and its grace period after from (just before the deletion was asked for), and was gone
// soon after.
func checkTerminating(t *testing.T, evs []podEvent, uid types.UID, from time.Time, grace time.Duration) {
	t.Helper()
	term := firstEvent(evs, func(e podEvent) bool { return e.pod.UID == uid && e.pod.DeletionTimestamp != nil })
	goneAt, gone := deletedAt(evs, uid)
	if term == nil || !gone {
		t.Fatalf("pod %s: terminating seen %v, gone %v", uid, term != nil, gone)
	}
	p := term.pod
	if g := p.DeletionGracePeriodSeconds; g == nil || *g != int64(grace/time.Second) {
		t.Errorf("pod %s: deletionGracePeriodSeconds %v, want %d", p.Name, p.DeletionGracePeriodSeconds, int64(grace/time.Second))
	}
	dt := p.DeletionTimestamp.Time
	// The API server sets it to the deletion's time + grace; serialised in whole seconds.
	if d := dt.Sub(from); d < grace-time.Second || d > grace+2*time.Second {
		t.Errorf("pod %s: deletionTimestamp %s is %s after the deletion, want about %s", p.Name, dt.Format(time.RFC3339), d, grace)
	}
	if term.typ == watch.Deleted {
		t.Errorf("pod %s: the watch saw it only as deleted, never Terminating", p.Name)
	}
	if goneAt.Before(dt) {
		t.Errorf("pod %s gone at %s, before its deletionTimestamp %s", p.Name, goneAt.Format(time.RFC3339Nano), dt.Format(time.RFC3339))
	}
	if after := goneAt.Sub(from); after < grace {
		t.Errorf("pod %s gone %s after its deletion, before its grace period of %s", p.Name, after, grace)
	}
	if goneAt.After(dt.Add(3 * time.Second)) {
		t.Errorf("pod %s gone at %s, more than 3s after its deletionTimestamp %s", p.Name, goneAt.Format(time.RFC3339Nano), dt.Format(time.RFC3339))
	}
	if stayed := goneAt.Sub(term.at); stayed < grace-2*time.Second {
		t.Errorf("pod %s was seen Terminating for only %s (grace %s)", p.Name, stayed, grace)
	}
}

// checkReadyAfter asserts the pod was seen Running and not Ready, then Ready with a Ready condition
// no earlier than delay after its creation (both API timestamps in whole seconds, so the comparison
// holds for whole-second delays; the watch's own times must agree within the watch's latency).
func checkReadyAfter(t *testing.T, evs []podEvent, uid types.UID, delay time.Duration) {
	t.Helper()
	added := firstEvent(evs, func(e podEvent) bool { return e.pod.UID == uid })
	unready := firstEvent(evs, func(e podEvent) bool {
		return e.pod.UID == uid && e.pod.Status.Phase == corev1.PodRunning && !podReady(e.pod)
	})
	ready := firstEvent(evs, func(e podEvent) bool { return e.pod.UID == uid && podReady(e.pod) })
	if added == nil || ready == nil {
		t.Fatalf("pod %s: never seen Ready", uid)
	}
	p := ready.pod
	if unready == nil || !unready.at.Before(ready.at) {
		t.Errorf("pod %s was not seen Running and unready before Ready", p.Name)
	}
	c := condition(p, corev1.PodReady)
	if after := c.LastTransitionTime.Sub(p.CreationTimestamp.Time); after < delay {
		t.Errorf("pod %s: Ready at %s, %s after its creation %s, want at least %s", p.Name, c.LastTransitionTime.Format(time.RFC3339),
			after, p.CreationTimestamp.Format(time.RFC3339), delay)
	}
	if seen := ready.at.Sub(added.at); seen < delay-200*time.Millisecond {
		t.Errorf("pod %s: the watch saw it Ready %s after it was created, want at least %s", p.Name, seen, delay)
	}
	t.Logf("pod %s: created %s, Ready %s (watch: %s after creation)", p.Name, p.CreationTimestamp.Format(time.RFC3339),
		c.LastTransitionTime.Format(time.RFC3339), ready.at.Sub(added.at).Round(time.Millisecond))
}

// checkReadyAtOnce asserts the pod's Ready condition came within a second of its creation.
func checkReadyAtOnce(t *testing.T, evs []podEvent, uid types.UID) {
	t.Helper()
	ready := firstEvent(evs, func(e podEvent) bool { return e.pod.UID == uid && podReady(e.pod) })
	if ready == nil {
		t.Fatalf("pod %s never Ready", uid)
	}
	p := ready.pod
	c := condition(p, corev1.PodReady)
	if after := c.LastTransitionTime.Sub(p.CreationTimestamp.Time); after > time.Second {
		t.Errorf("pod %s: Ready %s after its creation, want at once (it has no delay)", p.Name, after)
	}
}

func barePod(ns, name, node string, labels, annotations map[string]string, grace time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1.0"}},
			TerminationGracePeriodSeconds: ptr.To(int64(grace / time.Second))},
	}
}

func createPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, pods []*corev1.Pod) []types.UID {
	t.Helper()
	var uids []types.UID
	for _, p := range pods {
		c, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
		}
		uids = append(uids, c.UID)
	}
	return uids
}

func cordon(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("cordon %s=%t: %v", node, on, err)
	}
}

// waitPod waits for the one pod matching selector for which ok holds.
func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, selector string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(l.Items) != 1 {
			return false, nil
		}
		found = &l.Items[0]
		return found.DeletionTimestamp == nil && ok(found), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %v (last %v)", ns, selector, err, found)
	}
	return found
}

func podReady(p *corev1.Pod) bool {
	c := condition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func condition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podEvent is one watch event on a pod, with the time this process received it.
type podEvent struct {
	typ watch.EventType
	at  time.Time
	pod *corev1.Pod
}

func (e *podEvent) String() string {
	return fmt.Sprintf("%s %s at %s", e.typ, e.pod.Name, e.at.Format(time.RFC3339Nano))
}

// podRecorder keeps every event of a watch on a namespace's pods.
type podRecorder struct {
	mu     sync.Mutex
	evs    []podEvent
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

// recordPods starts a watch on ns's pods from the current state (its pods come as ADDED first).
func recordPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) *podRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	r := &podRecorder{cancel: cancel, done: make(chan struct{})}
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	now := time.Now()
	for i := range l.Items {
		r.evs = append(r.evs, podEvent{watch.Added, now, &l.Items[i]})
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			at := time.Now()
			p, ok := ev.Object.(*corev1.Pod)
			r.mu.Lock()
			if !ok {
				if ev.Type == watch.Error {
					r.err = apierrors.FromObject(ev.Object)
				}
				r.mu.Unlock()
				continue
			}
			r.evs = append(r.evs, podEvent{ev.Type, at, p})
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *podRecorder) stop() {
	r.cancel()
	<-r.done
}

func (r *podRecorder) events() []podEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]podEvent(nil), r.evs...)
}

// waitFor waits until done holds on the events so far; it fails the test after timeout or on a watch
// error. It asserts nothing itself: the checks read the recorded events.
func (r *podRecorder) waitFor(t *testing.T, timeout time.Duration, what string, done func([]podEvent) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		err := r.err
		r.mu.Unlock()
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if done(r.events()) {
			return
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, e := range r.events() {
				seen = append(seen, e.String())
			}
			t.Fatalf("%s: not within %s; events: %v", what, timeout, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func firstEvent(evs []podEvent, f func(podEvent) bool) *podEvent {
	for i := range evs {
		if f(evs[i]) {
			return &evs[i]
		}
	}
	return nil
}

func last(evs []podEvent, uid types.UID) *podEvent {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].pod.UID == uid {
			return &evs[i]
		}
	}
	return nil
}

func deletedAt(evs []podEvent, uid types.UID) (time.Time, bool) {
	if e := firstEvent(evs, func(e podEvent) bool { return e.pod.UID == uid && e.typ == watch.Deleted }); e != nil {
		return e.at, true
	}
	return time.Time{}, false
}

func deletionTimestampOf(evs []podEvent, uid types.UID) time.Time {
	if e := firstEvent(evs, func(e podEvent) bool { return e.pod.UID == uid && e.pod.DeletionTimestamp != nil }); e != nil {
		return e.pod.DeletionTimestamp.Time
	}
	return time.Time{}
}

// replacementOf returns the latest event of the other pod of the same ReplicaSet.
func replacementOf(evs []podEvent, uid types.UID) *podEvent {
	old := firstEvent(evs, func(e podEvent) bool { return e.pod.UID == uid })
	if old == nil {
		return nil
	}
	owner := metav1.GetControllerOf(old.pod)
	var out *podEvent
	for i := range evs {
		if c := metav1.GetControllerOf(evs[i].pod); evs[i].pod.UID != uid && c != nil && owner != nil && c.UID == owner.UID && evs[i].typ != watch.Deleted {
			out = &evs[i]
		}
	}
	return out
}
