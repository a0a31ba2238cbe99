package upgrade

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/helmsdk"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// EnvChild, when set in a process's environment, holds the JSON Config of an apply that process runs
// (see RunChild).
const EnvChild = "E2E_UPGRADE_APPLY"

// Config is what one apply process does.
type Config struct {
	// Kubeconfig of the cluster and PlanFile holding the plan (plan.EncodeYAML).
	Kubeconfig string `json:"kubeconfig"`
	PlanFile   string `json:"planFile"`
	// Resume asks Apply to continue the plan's journal (execute.ApplyOptions.Resume).
	Resume bool `json:"resume,omitempty"`
	// Identity on the Lease, and how long the Lease lasts without renewal.
	Identity      string        `json:"identity"`
	LeaseDuration time.Duration `json:"leaseDuration"`
	// WaitLocked keeps trying while another run holds the Lease (execute.ErrLocked), up to this long.
	WaitLocked time.Duration `json:"waitLocked,omitempty"`
	// PollInterval and VerifyTimeout of the executor.
	PollInterval  time.Duration `json:"pollInterval"`
	VerifyTimeout time.Duration `json:"verifyTimeout"`
	// HelmDir keeps Helm's repository cache and configuration out of the home folder.
	HelmDir string `json:"helmDir"`
	// QPS and Burst of the process's API client.
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
}

// Line is one JSON line the apply process writes on its standard output: an execute.Event, or one of
// the process's own lines (LineLocked, LineApproved, LineExit).
type Line struct {
	Type    string    `json:"type"`
	Time    time.Time `json:"time"`
	StepID  string    `json:"stepID,omitempty"`
	Kind    string    `json:"kind,omitempty"`
	Index   int       `json:"index,omitempty"`
	Total   int       `json:"total,omitempty"`
	Message string    `json:"message,omitempty"`
	Done    int       `json:"done,omitempty"`
	Of      int       `json:"of,omitempty"`
	PDBs    []string  `json:"pdbs,omitempty"`
	Pods    []string  `json:"pods,omitempty"`
	Err     string    `json:"err,omitempty"`
	// Requests is the number of API requests the process had made when the line was written.
	Requests int64 `json:"requests"`
	// StepRequests, on StepFinished lines, counts the API requests made since the step's StepStarted,
	// by "VERB resource[/subresource]".
	StepRequests map[string]int64 `json:"stepRequests,omitempty"`
	// Resumed and Steps, on LineExit lines, are the Result's.
	Resumed bool `json:"resumed,omitempty"`
	Steps   int  `json:"steps,omitempty"`
}

// Lines the apply process writes besides execute's events.
const (
	// LineLocked: Apply returned execute.ErrLocked; the process tries again (Config.WaitLocked).
	LineLocked = "Locked"
	// LineApproved: the Approve hook approved an Approval step.
	LineApproved = "Approved"
	// LineExit: Apply returned (Err set when it failed).
	LineExit = "Exit"
)

// RunChild runs the apply described by the EnvChild variable and exits the process: 0 when the plan
// was applied, 1 otherwise. It never returns. Lines go to standard output, logs to standard error.
func RunChild() {
	var cfg Config
	if err := json.Unmarshal([]byte(os.Getenv(EnvChild)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "upgrade apply: %s: %v\n", EnvChild, err)
		os.Exit(2)
	}
	if err := Apply(context.Background(), cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "upgrade apply: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Apply applies the plan of cfg.PlanFile to the cluster as a user of the library would: a
// controller-runtime client, the helmsdk adapter, a Snapshot closure over observe.Live, the
// "mesh-health" probe (MeshHealth) and an Approve hook that approves. Every event is written to out as
// a JSON Line as soon as it happens, and recorded in the cluster by execute.KubernetesEvents.
func Apply(ctx context.Context, cfg Config, out, logs io.Writer) error {
	w := &lineWriter{w: bufio.NewWriter(out)}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	uncounted := rest.CopyConfig(rc) // the Kubernetes Events' requests are not the steps'
	counter := &requestCounter{byKey: map[string]int64{}}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, c: counter} })
	w.counter = counter

	b, err := os.ReadFile(cfg.PlanFile)
	if err != nil {
		return err
	}
	p, err := plan.Decode(b)
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(rc, client.Options{Scheme: observe.Scheme()})
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return err
	}
	live := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Live(ctx, c, observe.Options{ServerVersion: dc})
	}
	helm, err := helmsdk.New(helmsdk.Options{
		Config:           rc,
		RepositoryCache:  cfg.HelmDir + "/repository",
		RepositoryConfig: cfg.HelmDir + "/repositories.yaml",
		RegistryConfig:   cfg.HelmDir + "/registry.json",
	})
	if err != nil {
		return err
	}
	hash, err := execute.PlanHash(p)
	if err != nil {
		return err
	}
	ec, err := client.New(uncounted, client.Options{Scheme: observe.Scheme()})
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Every event also goes to the cluster, bounded well above what the plan emits so none is dropped.
	events := execute.KubernetesEvents(ec, execute.KubernetesEventsOptions{PlanHash: hash, Instance: cfg.Identity, QPS: 200, Burst: 5000, Logger: logger})
	ex, err := execute.New(c, execute.Options{Gates: ambient.Gates(),
		Helm:          helm,
		Snapshot:      live,
		Identity:      cfg.Identity,
		LeaseDuration: cfg.LeaseDuration,
		PollInterval:  cfg.PollInterval,
		VerifyTimeout: cfg.VerifyTimeout,
		Probes:        map[string]execute.Probe{"mesh-health": MeshHealth(live)},
		Approve: func(_ context.Context, st plan.Step) (bool, error) {
			w.write(Line{Type: LineApproved, StepID: st.ID, Message: st.Approval.Message})
			return true, nil
		},
		Observer: execute.Observers(w.event, events),
		Logger:   logger,
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(cfg.WaitLocked)
	for {
		res, err := ex.Apply(ctx, p, execute.ApplyOptions{Resume: cfg.Resume})
		if errors.Is(err, execute.ErrLocked) && time.Now().Before(deadline) {
			w.write(Line{Type: LineLocked, Err: err.Error()})
			time.Sleep(500 * time.Millisecond)
			continue
		}
		exit := Line{Type: LineExit}
		if res != nil {
			exit.Resumed, exit.Steps = res.Resumed, len(res.Steps)
		}
		if err != nil {
			exit.Err = err.Error()
		}
		w.write(exit)
		return err
	}
}

// lineWriter writes JSON lines, flushed one by one, and tracks each step's API requests.
type lineWriter struct {
	mu      sync.Mutex
	w       *bufio.Writer
	counter *requestCounter
	started map[string]map[string]int64
}

func (lw *lineWriter) event(ev execute.Event) {
	l := Line{Type: string(ev.Type), Time: ev.Time, StepID: ev.StepID, Kind: string(ev.Kind), Index: ev.Index, Total: ev.Total,
		Message: ev.Message, Done: ev.Done, Of: ev.Of, PDBs: ev.PDBs, Pods: ev.Pods}
	if ev.Err != nil {
		l.Err = ev.Err.Error()
	}
	lw.mu.Lock()
	if lw.started == nil {
		lw.started = map[string]map[string]int64{}
	}
	switch ev.Type {
	case execute.EventStepStarted:
		lw.started[ev.StepID] = lw.counter.snapshot()
	case execute.EventStepFinished:
		if before, ok := lw.started[ev.StepID]; ok {
			l.StepRequests = diff(lw.counter.snapshot(), before)
			delete(lw.started, ev.StepID)
		}
	}
	lw.mu.Unlock()
	lw.write(l)
}

func (lw *lineWriter) write(l Line) {
	if l.Time.IsZero() {
		l.Time = time.Now()
	}
	if lw.counter != nil {
		l.Requests = lw.counter.total()
	}
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	_, _ = lw.w.Write(append(b, '\n'))
	_ = lw.w.Flush()
}

func diff(now, before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// requestCounter counts API requests by "VERB resource[/subresource]".
type requestCounter struct {
	mu    sync.Mutex
	byKey map[string]int64
	n     int64
}

func (c *requestCounter) add(key string) {
	c.mu.Lock()
	c.byKey[key]++
	c.n++
	c.mu.Unlock()
}

func (c *requestCounter) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *requestCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.byKey))
	for k, v := range c.byKey {
		out[k] = v
	}
	return out
}

type countingTransport struct {
	rt http.RoundTripper
	c  *requestCounter
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.add(RequestKey(r.Method, r.URL.Path, r.URL.Query().Get("watch") == "true"))
	return t.rt.RoundTrip(r)
}

// RequestKey names an API request by verb and resource: "LIST pods", "GET nodes", "CREATE
// pods/eviction", "PATCH deployments", "GET /version".
func RequestKey(method, path string, watch bool) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/... or /apis/<group>/<version>/...
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return method + " " + path
	}
	if len(rest) > 2 && rest[0] == "namespaces" {
		rest = rest[2:] // a namespaced resource
	}
	if len(rest) == 0 {
		return method + " " + path // discovery
	}
	resource, named, sub := rest[0], len(rest) >= 2, ""
	if len(rest) >= 3 {
		sub = "/" + rest[2]
	}
	verb := map[string]string{http.MethodGet: "GET", http.MethodPost: "CREATE", http.MethodPut: "UPDATE", http.MethodPatch: "PATCH", http.MethodDelete: "DELETE"}[method]
	if verb == "" {
		verb = method
	}
	if method == http.MethodGet && !named {
		verb = "LIST"
		if watch {
			verb = "WATCH"
		}
	}
	return verb + " " + resource + sub
}

// SortedKeys returns the keys of a count map sorted by count, largest first.
func SortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
