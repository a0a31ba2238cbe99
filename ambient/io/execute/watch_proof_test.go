package execute

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestAWaitersProofIsTheLatestStateOfTheObjectThatWokeIt(t *testing.T) {
	pod := func(name, uid string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: name, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: "n1"}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	ev := func(t watch.EventType, p *corev1.Pod) watchEvent { return watchEvent{kind: watchPods, typ: t, obj: p} }
	readyPod := interest{kind: watchPods, node: "n1", wake: func(t watch.EventType, obj client.Object) bool {
		return t != watch.Deleted && podReady(obj.(*corev1.Pod))
	}}
	tests := []struct {
		name   string
		missed bool
		events []watchEvent
		woken  bool
		proof  *corev1.Pod
	}{
		{name: "an event that wakes the waiter is its proof",
			events: []watchEvent{ev(watch.Added, pod("z-1", "u1", false)), ev(watch.Modified, pod("z-1", "u1", true))},
			woken:  true, proof: pod("z-1", "u1", true)},
		{name: "a later event of the same pod replaces the proof, even one that would not wake it",
			events: []watchEvent{ev(watch.Modified, pod("z-1", "u1", true)), ev(watch.Modified, pod("z-1", "u1", false))},
			woken:  true, proof: pod("z-1", "u1", false)},
		{name: "the pod's deletion drops the proof",
			events: []watchEvent{ev(watch.Modified, pod("z-1", "u1", true)), ev(watch.Deleted, pod("z-1", "u1", true))},
			woken:  true},
		{name: "events of other pods leave the proof alone",
			events: []watchEvent{ev(watch.Modified, pod("z-1", "u1", true)), ev(watch.Deleted, pod("z-2", "u2", true))},
			woken:  true, proof: pod("z-1", "u1", true)},
		{name: "a pod of the same name with another UID is another pod",
			events: []watchEvent{ev(watch.Modified, pod("z-1", "u1", true)), ev(watch.Added, pod("z-1", "u3", false))},
			woken:  true, proof: pod("z-1", "u1", true)},
		{name: "a waiter whose watch may have missed events wakes with no proof",
			missed: true, events: []watchEvent{ev(watch.Modified, pod("z-1", "u1", true))}, woken: true},
		{name: "events that do not wake the waiter prove nothing",
			events: []watchEvent{ev(watch.Added, pod("z-1", "u1", false))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &waiter{interests: []interest{readyPod}}
			for _, e := range tt.events {
				w.take(e, tt.missed)
			}
			if w.woken != tt.woken {
				t.Errorf("woken = %v, want %v", w.woken, tt.woken)
			}
			got, _ := w.proof.(*corev1.Pod)
			switch {
			case tt.proof == nil && got != nil:
				t.Errorf("proof = %s (uid %s, ready %v), want none", got.Name, got.UID, podReady(got))
			case tt.proof != nil && (got == nil || got.UID != tt.proof.UID || podReady(got) != podReady(tt.proof)):
				t.Errorf("proof = %v, want %s (uid %s, ready %v)", got, tt.proof.Name, tt.proof.UID, podReady(tt.proof))
			}
		})
	}
}
