package execute

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// noSandboxFailures: one LIST of Events with reason FailedCreatePodSandBox. A pod whose sandbox
// creation through istio-cni has kept failing for longer than the retry window, and failed within the
// window, fails the check; shorter failure runs are the retries a CNI rollout causes and are reported
// as SandboxRetry events.
func checkNoSandboxFailures(cp *checkPass, ctx context.Context, _ plan.Check, a plan.NoSandboxFailuresArgs) (bool, string, error) {
	e := cp.e
	window := 120 * time.Second
	if a.RetryWindowSeconds > 0 {
		window = time.Duration(a.RetryWindowSeconds) * time.Second
	}
	plugin := a.Plugin
	if plugin == "" {
		plugin = "istio-cni"
	}
	var since time.Time
	if rec := cp.r.record(cp.st.ID); rec != nil {
		since = rec.Started
	}
	var evs corev1.EventList
	if err := e.list(ctx, "FailedCreatePodSandBox events", &evs, client.MatchingFields{"reason": "FailedCreatePodSandBox"}); err != nil {
		return false, "", err
	}
	type span struct{ first, last time.Time }
	spans := map[string]*span{}
	for _, ev := range evs.Items {
		if ev.Reason != "FailedCreatePodSandBox" || ev.InvolvedObject.Kind != "Pod" || !strings.Contains(ev.Message, plugin) {
			continue
		}
		first, last := eventTimes(&ev)
		if last.Before(since) {
			continue
		}
		key := ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
		s, ok := spans[key]
		if !ok {
			s = &span{first: first, last: last}
			spans[key] = s
		}
		if first.Before(s.first) {
			s.first = first
		}
		if last.After(s.last) {
			s.last = last
		}
	}
	now := e.clock.Now()
	var failing, transientPods []string
	for pod, s := range spans {
		if s.last.Sub(s.first) >= window && now.Sub(s.last) < window {
			failing = append(failing, fmt.Sprintf("%s (failing for %s)", pod, s.last.Sub(s.first).Round(time.Second)))
		} else if cp.r.reportOnce(pod) {
			transientPods = append(transientPods, pod)
		}
	}
	sort.Strings(failing)
	sort.Strings(transientPods)
	if len(transientPods) > 0 {
		ev := e.stepEvent(cp.r, cp.st, EventSandboxRetry, fmt.Sprintf("%s retried sandbox creation through %s within the %s window (expected during a CNI rollout): %s",
			plural(len(transientPods), "pod", "pods"), plugin, window, plan.ListSome(transientPods, 8)))
		ev.Pods = transientPods
		e.emit(ev)
	}
	if len(failing) > 0 {
		return false, fmt.Sprintf("%s keep failing sandbox creation through %s beyond %s: %s; look at the istio-cni agent on their nodes",
			plural(len(failing), "pod", "pods"), plugin, window, plan.ListSome(failing, 8)), nil
	}
	return true, "", nil
}

func eventTimes(ev *corev1.Event) (first, last time.Time) {
	first, last = ev.FirstTimestamp.Time, ev.LastTimestamp.Time
	if !ev.EventTime.IsZero() {
		if first.IsZero() {
			first = ev.EventTime.Time
		}
		if last.IsZero() || ev.EventTime.After(last) {
			last = ev.EventTime.Time
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(last) {
		last = ev.Series.LastObservedTime.Time
	}
	if first.IsZero() {
		first = last
	}
	return first, last
}
