package execute

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// What steps and checks wait on (see watch.go).

// stepInterests are what a unit of st may wait on: what its kind says (a drain its node's pods and
// the budgets that refuse its evictions, a wait its check, a restart its workloads), and every step
// its postconditions. They are registered before the unit runs.
func stepInterests(st *plan.Step) []interest {
	var out []interest
	if a, ok := actions[st.Kind()]; ok && a.interests != nil {
		out = append(out, a.interests(st)...)
	}
	for _, c := range st.Postconditions {
		out = append(out, checkInterests(c)...)
	}
	return out
}

// checkInterests are the events that may make a check hold that does not; nil for checks no watch
// serves (they poll).
func checkInterests(c plan.Check) []interest {
	switch c.Type {
	case plan.CheckNodeAgentReady:
		a, err := plan.ArgsOf[plan.NodeAgentReadyArgs](c)
		if err != nil {
			return nil
		}
		if a.All {
			return []interest{{kind: watchDaemonSets, namespace: c.Object.Namespace, name: c.Object.Name}}
		}
		ds, version := c.Object.Name, a.Version
		return []interest{{kind: watchPods, namespace: c.Object.Namespace, node: a.Node, wake: func(t watch.EventType, obj client.Object) bool {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return false
			}
			ctl := metav1.GetControllerOf(p)
			return t != watch.Deleted && ctl != nil && ctl.Kind == "DaemonSet" && ctl.Name == ds && p.DeletionTimestamp == nil &&
				podReady(p) && (version == "" || tagMatches(podTag(p), version))
		}}}
	case plan.CheckNodeDrained:
		a, err := plan.ArgsOf[plan.NodeDrainedArgs](c)
		if err != nil {
			return nil
		}
		return []interest{{kind: watchPods, node: nodeOf(c, a.Node), wake: func(t watch.EventType, _ client.Object) bool { return t == watch.Deleted }}}
	case plan.CheckDeploymentReady:
		return []interest{{kind: watchDeployments, namespace: c.Object.Namespace, name: c.Object.Name}}
	case plan.CheckDaemonSetRolledOut:
		return []interest{{kind: watchDaemonSets, namespace: c.Object.Namespace, name: c.Object.Name}}
	case plan.CheckWorkloadsReady:
		a, err := plan.ArgsOf[plan.WorkloadsReadyArgs](c)
		if err != nil {
			return nil
		}
		var out []interest
		for _, w := range a.Workloads {
			if parts := strings.SplitN(w, "/", 3); len(parts) == 3 {
				out = append(out, workloadInterest(parts[0], parts[1], parts[2])...)
			}
		}
		return out
	}
	return nil
}

// workloadInterest is the events of a Deployment, StatefulSet or DaemonSet.
func workloadInterest(kind, ns, name string) []interest {
	k := map[string]watchKind{"Deployment": watchDeployments, "StatefulSet": watchStatefulSets, "DaemonSet": watchDaemonSets}
	if wk, ok := k[kind]; ok {
		return []interest{{kind: wk, namespace: ns, name: name}}
	}
	return nil
}

// watchedKinds are the kinds the executor may watch for the plan's steps, for its permissions.
func watchedKinds(p *plan.Plan) []watchKind {
	var seen [numWatchKinds]bool
	for i := range p.Steps {
		for _, in := range stepInterests(&p.Steps[i]) {
			seen[in.kind] = true
		}
	}
	var out []watchKind
	for k, ok := range seen {
		if ok {
			out = append(out, watchKind(k))
		}
	}
	return out
}

// waitOn says the lane's in-progress step waits for these events (added to what it waits for).
func (r *run) waitOn(ints ...interest) {
	if r.waiting == nil {
		r.waiting = &waiter{}
	}
	r.waiting.interests = append(r.waiting.interests, ints...)
}

// waitPoll says the lane's step also waits for something no watch serves: it polls.
func (r *run) waitPoll() {
	r.waitOn()
	r.waiting.poll = true
}

// waitUntil says the lane's step must look again by t at the latest (a timeout of its own).
func (r *run) waitUntil(t time.Time) {
	r.waitOn()
	if r.waiting.deadline.IsZero() || t.Before(r.waiting.deadline) {
		r.waiting.deadline = t
	}
}

// unitHold is what holds a lane's step, for wave progress: the pods a drain waits on (the longest
// grace period left of those terminating), the budgets refusing it, or what a wait waits for.
type unitHold struct {
	// what says it in words ("PDB shop/db", "pod shop/db-0 terminating, 42s of grace left").
	what string
	// left is the time the slowest terminating pod may still take (its grace period left).
	left time.Duration
	// evicted and of count the drain's pods.
	evicted, of int
}
