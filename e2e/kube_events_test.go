//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
)

// checkRunEvents asserts that the apply processes recorded the run as Kubernetes Events on the plan's
// journal ConfigMap, accepted by the real API server's events.k8s.io/v1 validation: what
// `kubectl get events -n istio-system` shows. killedStep was started by the killed process and again
// by the resumed one; firstIdentity is the killed process's identity.
func checkRunEvents(ctx context.Context, t *testing.T, planHash string, steps, repeated int, killedStep, firstIdentity string) {
	t.Helper()
	journal := (&execute.ConfigMapJournal{}).Name(planHash)
	var cm corev1.ConfigMap
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: harness.IstioNamespace, Name: journal}, &cm); err != nil {
		t.Fatal(err)
	}
	var l eventsv1.EventList
	if err := h.Client.List(ctx, &l, client.InNamespace(harness.IstioNamespace)); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{} // occurrences by reason, series included
	objects, withUID := 0, 0
	var killed *eventsv1.Event
	var byTime []*eventsv1.Event
	for i := range l.Items {
		e := &l.Items[i]
		if e.ReportingController != execute.EventsController {
			continue
		}
		objects++
		if e.Regarding.Kind != "ConfigMap" || e.Regarding.Name != journal || e.Regarding.Namespace != harness.IstioNamespace {
			t.Errorf("Event %s regards %s %s/%s, want the journal ConfigMap %s", e.Name, e.Regarding.Kind, e.Regarding.Namespace, e.Regarding.Name, journal)
		}
		if e.Regarding.UID != "" {
			withUID++
		}
		if e.Regarding.UID != "" && e.Regarding.UID != cm.UID {
			t.Errorf("Event %s (%s) regards UID %q, the journal is %s", e.Name, e.Reason, e.Regarding.UID, cm.UID)
		}
		byTime = append(byTime, e)
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		count[e.Reason] += n
		if e.Reason == string(execute.EventStepStarted) && strings.HasPrefix(e.Note, "[") && strings.Contains(e.Note, "] "+killedStep+": ") {
			killed = e
		}
	}
	// Steps that a repetition would find done write their completion with the journal's next write,
	// so the first Events may come before the journal exists; once an Event names its UID, every
	// later one does.
	sort.SliceStable(byTime, func(i, j int) bool { return byTime[i].EventTime.Before(&byTime[j].EventTime) })
	var named *eventsv1.Event
	for _, e := range byTime {
		switch {
		case e.Regarding.UID != "" && named == nil:
			named = e
		case e.Regarding.UID == "" && named != nil && e.EventTime.After(named.EventTime.Time):
			t.Errorf("Event %s (%s) at %s regards no UID, though Event %s at %s named the journal's", e.Name, e.Reason,
				e.EventTime.Format(time.RFC3339Nano), named.Name, named.EventTime.Format(time.RFC3339Nano))
		}
	}
	if named == nil {
		t.Errorf("no Event names the journal's UID %s", cm.UID)
	}
	var reasons []string
	for r, n := range count {
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(reasons)
	t.Logf("kubectl get events -n %s: %d Events from %s regarding ConfigMap %s (%d with its UID): %s",
		harness.IstioNamespace, objects, execute.EventsController, journal, withUID, strings.Join(reasons, " "))
	// A step the killed run finished but had not recorded yet finishes again after the resume.
	if n := int(count[string(execute.EventStepFinished)]); n < steps || n > steps+repeated {
		t.Errorf("%d StepFinished events recorded, the plan has %d steps (%d finished again after the resume)", n, steps, repeated)
	}
	for _, r := range []execute.EventType{execute.EventRunStarted, execute.EventRunResumed, execute.EventRunFinished} {
		if count[string(r)] != 1 {
			t.Errorf("%d %s events recorded, want 1", count[string(r)], r)
		}
	}
	// The killed step was started twice, by two processes: one Event, a series of two, reported by the first.
	switch {
	case killed == nil:
		t.Errorf("no StepStarted Event for the killed step %s", killedStep)
	case killed.Series == nil || killed.Series.Count != 2 || killed.ReportingInstance != firstIdentity:
		t.Errorf("StepStarted Event of %s: series %+v, reported by %q; want a series of 2 reported by %q", killedStep, killed.Series, killed.ReportingInstance, firstIdentity)
	}
}
