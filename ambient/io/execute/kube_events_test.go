package execute_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func kubeEvents(t *testing.T, c client.Client, ns string) []eventsv1.Event {
	t.Helper()
	var l eventsv1.EventList
	if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestARunIsRecordedAsKubernetesEventsOnItsJournal(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	hash, err := execute.PlanHash(p)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	events := execute.KubernetesEvents(w.Base, execute.KubernetesEventsOptions{PlanHash: hash, Instance: "test-run", Burst: 100000})
	if _, err := w.Executor(func(o *execute.Options) { o.Observer = execute.Observers(rec.observe, nil, events) }).
		Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	journal := (&execute.ConfigMapJournal{}).Name(hash)
	var cm corev1.ConfigMap
	if err := w.Base.Get(context.Background(), client.ObjectKey{Namespace: "istio-system", Name: journal}, &cm); err != nil {
		t.Fatal(err)
	}
	got := kubeEvents(t, w.Base, "istio-system")
	byReason := map[string]int{}
	byName := map[string]eventsv1.Event{}
	for _, e := range got {
		byName[e.Name] = e
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		byReason[e.Reason] += n
		if e.Regarding.Kind != "ConfigMap" || e.Regarding.Namespace != "istio-system" || e.Regarding.Name != journal {
			t.Errorf("Event %s regards %+v, want the journal ConfigMap %s", e.Name, e.Regarding, journal)
		}
		if !strings.HasPrefix(e.Name, journal+".") || e.ReportingController != execute.EventsController || e.ReportingInstance != "test-run" ||
			e.EventTime.IsZero() || e.Action == "" || len(e.Note) > 1024 {
			t.Errorf("Event %s: controller %q instance %q time %v action %q note %d bytes", e.Name, e.ReportingController, e.ReportingInstance, e.EventTime, e.Action, len(e.Note))
		}
		wantType := corev1.EventTypeNormal
		if e.Reason == string(execute.EventWaitingOnPDB) || e.Reason == string(execute.EventRetry) || e.Reason == string(execute.EventSandboxRetry) {
			wantType = corev1.EventTypeWarning
		}
		if e.Type != wantType {
			t.Errorf("Event %s (%s) has type %s, want %s", e.Name, e.Reason, e.Type, wantType)
		}
	}
	// Every event the run emitted is counted once, in an Event or in an Event's series.
	for _, typ := range []execute.EventType{execute.EventRunStarted, execute.EventStepStarted, execute.EventStepFinished,
		execute.EventStepProgress, execute.EventWaitingOnPDB, execute.EventRunFinished} {
		if want := len(rec.of(typ)); want == 0 || byReason[string(typ)] != want {
			t.Errorf("%d %s events recorded in the cluster, the run emitted %d", byReason[string(typ)], typ, want)
		}
	}
	// From the first finished step on, the journal exists: the Events name the ConfigMap's UID.
	for _, e := range got {
		if (e.Reason == string(execute.EventStepFinished) || e.Reason == string(execute.EventRunFinished)) && e.Regarding.UID != cm.UID {
			t.Errorf("%s regards UID %q, want the journal's %q", e.Name, e.Regarding.UID, cm.UID)
		}
	}
	// A node's progress is related to the node.
	related := false
	for _, e := range got {
		related = related || (e.Related != nil && e.Related.Kind == "Node" && strings.Contains(e.Note, e.Related.Name))
	}
	if !related {
		t.Error("no Event is related to the node it concerns")
	}
}

func TestAnEventThatHappensAgainContinuesItsSeriesAcrossProcesses(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(observe.Scheme()).Build()
	opts := execute.KubernetesEventsOptions{PlanHash: "sha256:0123456789abcdef0123", Namespace: "ops"}
	ev := execute.Event{Type: execute.EventWaitingOnPDB, Time: t0, StepID: "ztunnel/node/a/drain", Kind: plan.KindDrain, Index: 3, Total: 9,
		Message: "node a: waiting on PodDisruptionBudget shop/db", Node: "a", PDBs: []string{"shop/db"}}
	first := execute.KubernetesEvents(c, opts)
	first(ev)
	ev.Time = t0.Add(time.Minute)
	first(ev)
	// A resumed run in another process sees it again.
	ev.Time = t0.Add(2 * time.Minute)
	execute.KubernetesEvents(c, opts)(ev)
	got := kubeEvents(t, c, "ops")
	if len(got) != 1 {
		t.Fatalf("%d Events, want one with a series", len(got))
	}
	e := got[0]
	if !strings.HasPrefix(e.Name, "ambientkit-journal-0123456789ab.") || e.Series == nil ||
		e.Series.Count != 3 || !e.Series.LastObservedTime.Time.Equal(t0.Add(2*time.Minute)) || !e.EventTime.Time.Equal(t0) {
		t.Fatalf("Event %s: series %+v, event time %v; want count 3 last seen at +2m, first at t0", e.Name, e.Series, e.EventTime)
	}
	if e.Type != corev1.EventTypeWarning || e.Reason != "WaitingOnPDB" || e.Action != "Drain" || e.Note != "[3/9] ztunnel/node/a/drain: node a: waiting on PodDisruptionBudget shop/db" {
		t.Errorf("Event: type %s reason %s action %s note %q", e.Type, e.Reason, e.Action, e.Note)
	}
	// Another message is another Event.
	ev.Message = "node a: 1/2 pods evicted"
	first(ev)
	if n := len(kubeEvents(t, c, "ops")); n != 2 {
		t.Errorf("%d Events after a new message, want 2", n)
	}
}

func TestKubernetesEventsAreBoundedAndTruncated(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(observe.Scheme()).Build()
	rec := execute.KubernetesEvents(c, execute.KubernetesEventsOptions{PlanHash: "sha256:aaaaaaaaaaaaaaaa", QPS: 1, Burst: 2})
	at := func(d time.Duration, msg string) execute.Event {
		return execute.Event{Type: execute.EventStepProgress, Time: t0.Add(d), StepID: "s", Message: msg}
	}
	rec(at(0, "one"))
	rec(at(0, "two"))
	rec(at(0, "three: over the burst, dropped"))
	rec(at(time.Second, "four: a second later, one more"))
	rec(at(time.Second, "five: dropped"))
	long := strings.Repeat("ü", 800) // 1,600 bytes
	rec(at(10*time.Second, long))
	var notes []string
	for _, e := range kubeEvents(t, c, "istio-system") {
		notes = append(notes, e.Note)
		if len(e.Note) > 1024 || !utf8.ValidString(e.Note) {
			t.Errorf("note of %d bytes (valid UTF-8: %v), want at most 1024", len(e.Note), utf8.ValidString(e.Note))
		}
	}
	if len(notes) != 4 {
		t.Fatalf("%d Events written, want 4 (two at once, one a second later, the long one): %q", len(notes), notes)
	}
	for _, n := range notes {
		if strings.Contains(n, "dropped") {
			t.Errorf("an event over the bound was written: %q", n)
		}
	}
}

func TestKubernetesEventsNeverFailTheRun(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	creates := 0
	broken := interceptor.NewClient(fake.NewClientBuilder().WithScheme(observe.Scheme()).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates++
			return apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, obj.GetName(), errors.New("RBAC: no create"))
		},
	})
	res, err := w.Executor(func(o *execute.Options) {
		o.Observer = execute.KubernetesEvents(broken, execute.KubernetesEventsOptions{PlanHash: "sha256:bbbbbbbbbbbbbbbb"})
	}).Apply(context.Background(), p, execute.ApplyOptions{})
	if err != nil || !res.Done {
		t.Fatalf("Apply with Events failing: %v (done %v), want the run to finish", err, res != nil && res.Done)
	}
	// After a failure writes pause for 10 seconds: far fewer attempts than events.
	if creates == 0 || creates > 40 {
		t.Errorf("%d Event creations attempted against a client that refuses them all; want a few (writes pause after a failure)", creates)
	}
}

// TestAnEventWithoutATimeIsTimedByTheOptionsClock: an event that carries no time is written at the
// time of KubernetesEventsOptions.Clock (the executor's), never the wall clock's.
func TestAnEventWithoutATimeIsTimedByTheOptionsClock(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(observe.Scheme()).Build()
	at := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	execute.KubernetesEvents(c, execute.KubernetesEventsOptions{PlanHash: "sha256:cccccccccccccccc", Clock: executetest.NewFakeClock(at)})(
		execute.Event{Type: execute.EventStepStarted, StepID: "prechecks", Kind: plan.KindVerify, Index: 1, Total: 1, Message: "started"})
	got := kubeEvents(t, c, execute.DefaultNamespace)
	if len(got) != 1 || !got[0].EventTime.Time.Equal(at) {
		t.Fatalf("Events %v; want one at the clock's %v", got, at)
	}
}
