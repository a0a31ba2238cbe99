package execute

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventsController is the reportingController of the Kubernetes Events KubernetesEvents writes.
const EventsController = "ambientkit.io/executor"

// Defaults of KubernetesEventsOptions.
const (
	DefaultEventsQPS     = 1.0
	DefaultEventsBurst   = 50
	DefaultEventsTimeout = 5 * time.Second
	// eventsCooldown is how long writes pause after one failed.
	eventsCooldown = 10 * time.Second
	// eventsLookup is how often the journal ConfigMap's UID is looked up until it is found.
	eventsLookup = 30 * time.Second
	// noteLimit is the longest note the API server takes.
	noteLimit = 1024
)

// KubernetesEventsOptions configure KubernetesEvents. Only PlanHash is required.
type KubernetesEventsOptions struct {
	// PlanHash identifies the run's plan (PlanHash): the Events regard its journal ConfigMap,
	// ambientkit-journal-<short hash> (ConfigMapJournal.Name).
	PlanHash string
	// Namespace of the journal ConfigMap and of the Events: the executor's Options.Namespace; empty
	// means istio-system.
	Namespace string
	// Instance is the reportingInstance, the executor's Options.Identity; empty means
	// "<hostname>-<pid>".
	Instance string
	// QPS and Burst bound the writes: Burst at once, then QPS a second; an event over the bound is
	// dropped (and counted in the log). Zero means 1 and 50.
	QPS   float64
	Burst int
	// Timeout bounds each API call; zero means 5 seconds.
	Timeout time.Duration
	// Logger receives the events dropped and the writes that failed; nil means none.
	Logger *slog.Logger
	// Clock times the events that carry no time, the rate bound and the pause after an error: the
	// executor's Options.Clock; nil means the wall clock.
	Clock Clock
}

// KubernetesEvents returns an Options.Observer that records the run's events in the cluster as
// events.k8s.io/v1 Events, so `kubectl get events -n <namespace>` shows what the run did:
//
//   - regarding the plan's journal ConfigMap (with its UID once the journal is written, so `kubectl
//     describe configmap` lists them too), related to the
//     node concerned, if any; reason is the event type (StepStarted, WaitingOnPDB, ...), action the
//     step's kind, type Warning for failures, retries, unhealthy gates, budgets holding a drain and
//     sandbox retries, Normal otherwise; the note is "[index/total] step: message", at most 1 kB;
//   - named "<journal ConfigMap>.<hash of type, step and message>", so an event that happens again (a
//     drain waiting on the same budget, a step started again by a resumed run, in this process or
//     another) continues the same Event's series (count, lastObservedTime), as client-go's recorder
//     does, instead of adding one;
//   - at most Burst writes at once and QPS a second after that; the rest are dropped.
//
// Only the event's type, step, kind, position, node and message are written: never Changes, Err
// values, Helm values or plan payloads. Recording never fails or stops the run: an error is logged,
// the event dropped and writes pause for 10 seconds; each call is bounded by Timeout. It is called
// synchronously, like every Observer. Compose it with other observers with Observers. Do not attach
// it to a dry run, which writes nothing.
//
// The client needs events.k8s.io events (create, get, patch) and configmaps (get) in Namespace.
func KubernetesEvents(c client.Client, opts KubernetesEventsOptions) func(Event) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Instance == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "ambientkit"
		}
		opts.Instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if len(opts.Instance) > 128 {
		opts.Instance = opts.Instance[:128]
	}
	if opts.QPS <= 0 {
		opts.QPS = DefaultEventsQPS
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultEventsBurst
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultEventsTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	r := &eventRecorder{c: c, opts: opts, journal: (&ConfigMapJournal{}).Name(opts.PlanHash),
		tokens: float64(opts.Burst), series: map[string]int32{}}
	return r.record
}

// Observers returns an Observer that passes every event to each observer in turn (nil ones are
// skipped): the program's own progress output and KubernetesEvents, for example.
func Observers(obs ...func(Event)) func(Event) {
	return func(ev Event) {
		for _, o := range obs {
			if o != nil {
				o(ev)
			}
		}
	}
}

type eventRecorder struct {
	c       client.Client
	opts    KubernetesEventsOptions
	journal string

	mu sync.Mutex
	// series counts the occurrences of each event written, by name.
	series map[string]int32
	// tokens and filled are the rate bound's bucket; paused the end of a pause after an error.
	tokens         float64
	filled, paused time.Time
	dropped        int
	// uid of the journal ConfigMap, once found; looked the last time it was looked up.
	uid    types.UID
	looked time.Time
}

func (r *eventRecorder) record(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := ev.Time
	if now.IsZero() {
		now = r.opts.Clock.Now()
	}
	if !r.allow(now) {
		r.dropped++
		return
	}
	if r.dropped > 0 {
		r.opts.Logger.Warn("Kubernetes Events were dropped to keep the write rate bounded", "dropped", r.dropped, "qps", r.opts.QPS, "burst", r.opts.Burst)
		r.dropped = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	if err := r.write(ctx, ev, now); err != nil {
		r.paused = now.Add(eventsCooldown)
		r.opts.Logger.Warn("could not record a Kubernetes Event; the run goes on", "event", ev.Type, "step", ev.StepID, "error", err)
	}
}

// allow takes a token from the bucket, refilled at QPS since it was last filled.
func (r *eventRecorder) allow(now time.Time) bool {
	if now.Before(r.paused) {
		return false
	}
	if r.filled.IsZero() {
		r.filled = now
	}
	if now.After(r.filled) {
		r.tokens = min(float64(r.opts.Burst), r.tokens+now.Sub(r.filled).Seconds()*r.opts.QPS)
		r.filled = now
	}
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}

// write creates the event's Event, or continues its series when it was written before.
func (r *eventRecorder) write(ctx context.Context, ev Event, now time.Time) error {
	sum := sha256.Sum256([]byte(string(ev.Type) + "\x00" + ev.StepID + "\x00" + ev.Message))
	name := r.journal + "." + hex.EncodeToString(sum[:5])
	for attempt := 0; ; attempt++ {
		n, ok := r.series[name]
		if !ok {
			err := r.c.Create(ctx, r.event(ctx, ev, name, now))
			if err == nil {
				r.series[name] = 1
				return nil
			}
			if !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create Event %s/%s: %w", r.opts.Namespace, name, err)
			}
			// Written before, by an earlier run of the plan: continue its series.
			var cur eventsv1.Event
			if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: name}, &cur); err != nil {
				return fmt.Errorf("read Event %s/%s: %w", r.opts.Namespace, name, err)
			}
			n = 1
			if cur.Series != nil {
				n = cur.Series.Count
			}
		}
		n++
		body, err := json.Marshal(map[string]any{"series": eventsv1.EventSeries{Count: n, LastObservedTime: metav1.NewMicroTime(now)}})
		if err != nil {
			return err
		}
		obj := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: name}}
		err = r.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body))
		if apierrors.IsNotFound(err) && attempt == 0 {
			delete(r.series, name) // expired (the API server keeps Events for an hour): start again
			continue
		}
		if err != nil {
			return fmt.Errorf("update Event %s/%s: %w", r.opts.Namespace, name, err)
		}
		r.series[name] = n
		return nil
	}
}

// event builds a new Event for ev.
func (r *eventRecorder) event(ctx context.Context, ev Event, name string, now time.Time) *eventsv1.Event {
	typ := corev1.EventTypeNormal
	switch ev.Type {
	case EventStepFailed, EventGateUnhealthy, EventRetry, EventWaitingOnPDB, EventSandboxRetry:
		typ = corev1.EventTypeWarning
	}
	action := string(ev.Kind)
	if action == "" {
		action = "Apply"
	}
	note := ev.Message
	if ev.StepID != "" {
		note = fmt.Sprintf("[%d/%d] %s: %s", ev.Index, ev.Total, ev.StepID, ev.Message)
	}
	out := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "ambientkit", "ambientkit.io/plan": shortHash(r.opts.PlanHash)}},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: EventsController,
		ReportingInstance:   r.opts.Instance,
		Action:              action,
		Reason:              string(ev.Type),
		Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: r.opts.Namespace, Name: r.journal, UID: r.journalUID(ctx, ev.Type, now)},
		Note:                truncate(note, noteLimit),
		Type:                typ,
	}
	if ev.Node != "" {
		out.Related = &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: ev.Node}
	}
	return out
}

// journalUID returns the UID of the journal ConfigMap once it exists. It looks at the first event, at
// every StepFinished until found (the executor saves the journal before it reports a finished step)
// and otherwise at most every 30 seconds.
func (r *eventRecorder) journalUID(ctx context.Context, typ EventType, now time.Time) types.UID {
	if r.uid != "" || (!r.looked.IsZero() && typ != EventStepFinished && now.Sub(r.looked) < eventsLookup) {
		return r.uid
	}
	r.looked = now
	var cm metav1.PartialObjectMetadata
	cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: r.journal}, &cm); err == nil {
		r.uid = cm.UID
	}
	return r.uid
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	s = s[:n-len(mark)]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + mark
}
