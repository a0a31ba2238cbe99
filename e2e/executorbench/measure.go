//go:build e2e

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/executorbench/limit"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
	"github.com/ambientkit/ambientkit/e2e/internal/kwokstages"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/estimate"
)

// evictedPod is a pod the run took off a node: seen first with a deletionTimestamp, then gone.
type evictedPod struct {
	NS         string            `json:"namespace"`
	Name       string            `json:"name"`
	Node       string            `json:"node"`
	Labels     map[string]string `json:"labels,omitempty"`
	Owner      string            `json:"owner,omitempty"` // the controller's kind
	ReadyAfter time.Duration     `json:"readyAfter,omitempty"`
	Grace      time.Duration     `json:"grace"`
	// Timing is its kwokstages.AnnotationTiming: whether kwok makes it honour its grace period.
	Timing   string    `json:"timing,omitempty"`
	Deadline time.Time `json:"deletionTimestamp"`
	Seen     time.Time `json:"seen"` // by the watching process's clock
	Gone     time.Time `json:"gone"`
}

// podWatch watches every pod (through the bench's own client: not the executor's requests) and
// records the pods evicted while the run goes on: those that get a deletionTimestamp carrying the
// condition DisruptionTarget=True, reason EvictionByEvictionAPI, which the API server's eviction
// handler sets. Pods deleted otherwise (the ztunnel pods the plans replace, istiod's pods when a Helm
// upgrade rolls it) are no drain's.
type podWatch struct {
	mu   sync.Mutex
	pods map[types.UID]*evictedPod
	// allowed is each budget's last status.disruptionsAllowed, returns when it went up: a disruption
	// given back, as the disruption controller played it.
	allowed map[string]int32
	returns map[string][]time.Time
	// swaps are the node agents replaced, by node: a pod of the DaemonSet seen deleted, then another
	// of it seen Ready on the node.
	swaps map[string]*ztunnelSwap
	stop  chan struct{}
}

// ztunnelSwapDaemonSet is the DaemonSet whose pods node by node replaces: the ztunnel chart's.
const ztunnelSwapDaemonSet = "ztunnel"

// ztunnelSwap is one node's ztunnel replacement as the cluster played it: from the old pod's
// deletion (the executor's) to its successor Ready (the DaemonSet controller's, the scheduler's, the
// kubelet's, and its readiness probe).
type ztunnelSwap struct {
	Old     types.UID `json:"old"`
	Deleted time.Time `json:"deleted"`
	Ready   time.Time `json:"ready,omitzero"`
}

// took is how long the swap took; false until the successor was seen Ready.
func (s *ztunnelSwap) took() (time.Duration, bool) {
	if s == nil || s.Ready.IsZero() || s.Ready.Before(s.Deleted) {
		return 0, false
	}
	return s.Ready.Sub(s.Deleted), true
}

// ztunnelSeen records a node agent's deletion and its successor's readiness; called with w.mu held,
// once the watch is synced.
func (w *podWatch) ztunnelSeen(p *corev1.Pod, deleted bool) {
	c := metav1.GetControllerOf(p)
	if c == nil || c.Kind != "DaemonSet" || c.Name != ztunnelSwapDaemonSet || p.Spec.NodeName == "" {
		return
	}
	s := w.swaps[p.Spec.NodeName]
	switch {
	case deleted || p.DeletionTimestamp != nil:
		if s == nil {
			w.swaps[p.Spec.NodeName] = &ztunnelSwap{Old: p.UID, Deleted: time.Now()}
		}
	case s != nil && s.Ready.IsZero() && p.UID != s.Old && kube.PodReady(p):
		s.Ready = time.Now()
	}
}

// watchResult is what the watch process prints: the evicted pods and the budgets' returns.
type watchResult struct {
	Pods    []*evictedPod          `json:"pods"`
	Returns map[string][]time.Time `json:"returns"`
	Ztunnel map[string]ztunnelSwap `json:"ztunnel"`
}

// budgetSeen records a budget's allowed disruptions, and the instant they went up.
func (w *podWatch) budgetSeen(o any, synced func() bool) {
	b, ok := o.(*policyv1.PodDisruptionBudget)
	if !ok || b.Status.ObservedGeneration < b.Generation {
		return
	}
	key := b.Namespace + "/" + b.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, had := w.allowed[key]
	w.allowed[key] = b.Status.DisruptionsAllowed
	if had && b.Status.DisruptionsAllowed > prev && synced() {
		w.returns[key] = append(w.returns[key], time.Now())
	}
}

func watchPods(ctx context.Context, cs kubernetes.Interface) (*podWatch, error) {
	w := &podWatch{pods: map[types.UID]*evictedPod{}, allowed: map[string]int32{}, returns: map[string][]time.Time{},
		swaps: map[string]*ztunnelSwap{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().Pods().Informer()
	budgets := f.Policy().V1().PodDisruptionBudgets().Informer()
	synced := false
	isSynced := func() bool { return synced } // called with w.mu held
	if _, err := budgets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.budgetSeen(o, isSynced) },
		UpdateFunc: func(_, o any) { w.budgetSeen(o, isSynced) },
	}); err != nil {
		return nil, err
	}
	var before map[types.UID]bool // terminating when the watch started: not this run's
	ztunnel := func(p *corev1.Pod, deleted bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if synced {
			w.ztunnelSeen(p, deleted)
		}
	}
	seen := func(p *corev1.Pod) {
		ztunnel(p, false)
		if !kube.Evicted(p) {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if !synced {
			if before == nil {
				before = map[types.UID]bool{}
			}
			before[p.UID] = true
			return
		}
		if before[p.UID] || w.pods[p.UID] != nil {
			return
		}
		e := &evictedPod{NS: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Labels: p.Labels, Seen: time.Now(),
			Deadline: p.DeletionTimestamp.Time}
		if c := metav1.GetControllerOf(p); c != nil {
			e.Owner = c.Kind
		}
		if g := p.DeletionGracePeriodSeconds; g != nil {
			e.Grace = time.Duration(*g) * time.Second
		} else if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
			e.Grace = time.Duration(*g) * time.Second
		}
		if d, err := time.ParseDuration(p.Annotations[kwokstages.AnnotationReadyAfter]); err == nil {
			e.ReadyAfter = d
		}
		e.Timing = p.Annotations[kwokstages.AnnotationTiming]
		w.pods[p.UID] = e
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { seenPod(o, seen) },
		UpdateFunc: func(_, o any) { seenPod(o, seen) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			p, ok := o.(*corev1.Pod)
			if !ok {
				return
			}
			seen(p) // a deletion the watch saw only as DELETED still counts, seen and gone at once
			ztunnel(p, true)
			w.mu.Lock()
			if e := w.pods[p.UID]; e != nil && e.Gone.IsZero() {
				e.Gone = time.Now()
			}
			w.mu.Unlock()
		},
	})
	if err != nil {
		return nil, err
	}
	go inf.Run(w.stop)
	go budgets.Run(w.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, budgets.HasSynced) {
		close(w.stop)
		return nil, fmt.Errorf("pod watch: cache not synced")
	}
	w.mu.Lock()
	synced = true
	w.mu.Unlock()
	return w, nil
}

// watchCmd is the pod watch in a process of its own, so its decoding is not counted as the executor's
// CPU: it prints "ready" once the watch is synced, records until its stdin closes, then prints the
// evicted pods as JSON and exits.
func watchCmd(args []string) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig of the kwok cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rc, err := connect(*kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	w, err := watchPods(ctx, cs)
	cancel()
	if err != nil {
		return err
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return json.NewEncoder(os.Stdout).Encode(w.evicted())
}

// podWatcher is the watch process of a run.
type podWatcher struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startPodWatcher(kubeconfig, logFile string) (*podWatcher, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "watch", "-kubeconfig", kubeconfig)
	if cmd.Stderr, err = os.Create(logFile); err != nil {
		return nil, err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &podWatcher{cmd: cmd, stdin: in, out: bufio.NewReader(out)}
	line, err := w.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = in.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("pod watch process did not get ready (%q, %v); see %s", line, err, logFile)
	}
	return w, nil
}

// evicted ends the watch process and returns what it recorded.
func (w *podWatcher) evicted() (watchResult, error) {
	_ = w.stdin.Close()
	var out watchResult
	derr := json.NewDecoder(w.out).Decode(&out)
	if err := w.cmd.Wait(); err != nil {
		return out, fmt.Errorf("pod watch process: %w", err)
	}
	return out, derr
}

func seenPod(o any, f func(*corev1.Pod)) {
	if p, ok := o.(*corev1.Pod); ok {
		f(p)
	}
}

// evicted stops the watch and returns what it recorded.
func (w *podWatch) evicted() watchResult {
	close(w.stop)
	w.mu.Lock()
	defer w.mu.Unlock()
	out := watchResult{Pods: make([]*evictedPod, 0, len(w.pods)), Returns: map[string][]time.Time{}, Ztunnel: map[string]ztunnelSwap{}}
	for n, s := range w.swaps {
		out.Ztunnel[n] = *s
	}
	for _, e := range w.pods {
		c := *e
		out.Pods = append(out.Pods, &c)
	}
	sort.Slice(out.Pods, func(i, j int) bool { return out.Pods[i].Seen.Before(out.Pods[j].Seen) })
	for k, ts := range w.returns {
		out.Returns[k] = append([]time.Time(nil), ts...)
	}
	return out
}

// heldUntil is how long the pod's eviction held its budget as the cluster played it: until the
// budget's allowed disruptions next went up (a replacement ready, seen by the disruption controller).
func heldUntil(returns []time.Time, evicted time.Time) (time.Duration, bool) {
	i := sort.Search(len(returns), func(i int) bool { return returns[i].After(evicted) })
	if i == len(returns) {
		return 0, false
	}
	return returns[i].Sub(evicted), true
}

// budget is a PodDisruptionBudget as the run found it.
type budget struct {
	name     string // namespace/name
	ns       string
	selector labels.Selector
	allowed  int
}

func listBudgets(ctx context.Context, cs kubernetes.Interface) ([]budget, error) {
	l, err := cs.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []budget
	for _, p := range l.Items {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || p.Spec.Selector == nil {
			continue
		}
		out = append(out, budget{name: p.Namespace + "/" + p.Name, ns: p.Namespace, selector: sel, allowed: int(p.Status.DisruptionsAllowed)})
	}
	return out, nil
}

// stepTimes records when each step started and finished, by the executor's events.
type stepTimes struct {
	mu       sync.Mutex
	started  map[string]time.Time
	finished map[string]time.Time
}

func newStepTimes() *stepTimes {
	return &stepTimes{started: map[string]time.Time{}, finished: map[string]time.Time{}}
}

func (s *stepTimes) observe(ev execute.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Type {
	case execute.EventStepStarted:
		if _, ok := s.started[ev.StepID]; !ok {
			s.started[ev.StepID] = ev.Time
		}
	case execute.EventStepFinished, execute.EventStepSkipped:
		s.finished[ev.StepID] = ev.Time
	}
}

// Timing is what the run's timing measured against the physical limit.
type Timing struct {
	Waves int `json:"waves"`
	// LimitSeconds is the physical limit of the waves (package limit); WallSeconds the waves' wall
	// time: from the start of the first wave's first step to the end of the last wave's gate.
	LimitSeconds float64 `json:"limitSeconds"`
	WallSeconds  float64 `json:"wallSeconds"`
	Ratio        float64 `json:"ratio"`
	// MaxDraining is the largest number of nodes draining at one instant: a node drains from its
	// first pod's eviction to its last evicted pod gone, as the pod watch saw them.
	MaxDraining  int `json:"maxDraining"`
	NodesDrained int `json:"nodesDrained"`
	Evicted      int `json:"evicted"`
	// Instant counts the evicted pods this cluster deletes at once whatever their grace period (kwok
	// without the timing opt-in): the model counts them with no grace, as the cluster plays them.
	Instant int `json:"instant"`
	// BeyondGrace is how much longer than its grace period the cluster took to delete an evicted pod
	// that honours it (kwok deletes it after its deletionTimestamp, in whole seconds): median and
	// max, in seconds. The limit counts each pod's termination as it happened, this included.
	BeyondGraceMedian float64 `json:"beyondGraceMedian"`
	BeyondGraceMax    float64 `json:"beyondGraceMax"`
	// ZtunnelSwaps counts the node agents seen replaced (node by node): the old pod deleted, its
	// successor Ready; ZtunnelMedian and ZtunnelMax are how long that took, in seconds, which the
	// limit counts per node in place of the configured readiness.
	ZtunnelSwaps  int     `json:"ztunnelSwaps"`
	ZtunnelMedian float64 `json:"ztunnelMedian"`
	ZtunnelMax    float64 `json:"ztunnelMax"`
	// Estimate is the runbook's Phases estimate of the same waves and batch gates (estimate.Time
	// on what the plan's snapshot expected each drain to evict, with the bench's ztunnel readiness):
	// the same model as the limit, fed the plan instead of what the cluster did.
	Estimate estimate.Span  `json:"estimate"`
	PerWave  []WaveTiming   `json:"perWave"`
	Model    limit.Result   `json:"model"`
	Input    limit.Input    `json:"input"`
	Budgets  map[string]int `json:"budgets"`
}

// WaveTiming is one wave: its limit and its measured wall time.
type WaveTiming struct {
	Nodes        int     `json:"nodes"`
	Pods         int     `json:"pods"`
	LimitSeconds float64 `json:"limitSeconds"`
	WallSeconds  float64 `json:"wallSeconds"`
	MaxDraining  int     `json:"maxDraining"`
}

// timing puts the model's input together from the plan (waves, settle) and what the watch saw
// (evicted pods per node, grace periods, budgets), and measures the waves.
//
// The grace period counts only where the cluster honours it: on kwok a pod does only when annotated
// timing=realistic, or under the stages' cluster-wide mode unless annotated timing=fast (graceAll);
// other pods (the charts' own, e.g. the ingress gateway) vanish at once and count with none.
func timing(p *plan.Plan, st *stepTimes, seen watchResult, budgets []budget, ztunnelReady time.Duration, nodeByNode, graceAll bool) Timing {
	pods := seen.Pods
	var steps []limit.Step
	for _, s := range p.Steps {
		ls := limit.Step{ID: s.ID}
		if s.HealthGate != nil && strings.Contains(s.ID, "/batch/") {
			ls.Gate, ls.Settle = true, time.Duration(s.HealthGate.SettleSeconds)*time.Second
		}
		steps = append(steps, ls)
	}
	waves := limit.WavesOf(steps)
	gates := map[int]string{} // wave → the gate that closes it
	{
		w, nodes := 0, 0
		for _, s := range steps {
			if s.Gate {
				if nodes > 0 {
					gates[w] = s.ID
					w++
				}
				nodes = 0
			} else if limit.NodeOf(s.ID) != "" {
				nodes++
			}
		}
	}
	allowed := map[string]int{}
	for _, b := range budgets {
		allowed[b.name] = b.allowed
	}
	byNode := map[string][]*evictedPod{}
	for _, e := range pods {
		byNode[e.Node] = append(byNode[e.Node], e)
	}
	in := limit.Input{Allowed: allowed}
	t := Timing{Waves: len(waves), Budgets: allowed, Evicted: len(pods)}
	var all []limit.Interval
	var swaps []float64
	var wallStart, wallEnd time.Time
	for wi, w := range waves {
		lw := limit.Wave{Settle: w.Settle}
		var ivs []limit.Interval
		inWave := map[string]bool{}
		for _, n := range w.Nodes {
			inWave[n] = true
			var swap *ztunnelSwap
			if s, ok := seen.Ztunnel[n]; ok {
				swap = &s
			}
			ln, iv, instant := modelNode(n, byNode[n], budgets, seen.Returns, ztunnelReady, swap, nodeByNode, graceAll)
			if d, ok := swap.took(); ok && nodeByNode {
				swaps = append(swaps, d.Seconds())
			}
			t.Instant += instant
			if !iv.Start.IsZero() {
				ivs = append(ivs, iv)
				t.NodesDrained++
			}
			lw.Nodes = append(lw.Nodes, ln)
		}
		in.Waves = append(in.Waves, lw)
		all = append(all, ivs...)
		// The wave's wall time: its first node step's start to its gate's end.
		var start time.Time
		for _, s := range p.Steps {
			if n := limit.NodeOf(s.ID); n != "" && inWave[n] {
				if at, ok := st.started[s.ID]; ok && (start.IsZero() || at.Before(start)) {
					start = at
				}
			}
		}
		end := st.finished[gates[wi]]
		wt := WaveTiming{Nodes: len(w.Nodes), MaxDraining: limit.MaxOverlap(ivs)}
		for _, ln := range lw.Nodes {
			wt.Pods += len(ln.Pods)
		}
		if !start.IsZero() && !end.IsZero() {
			wt.WallSeconds = end.Sub(start).Seconds()
			if wallStart.IsZero() || start.Before(wallStart) {
				wallStart = start
			}
			if end.After(wallEnd) {
				wallEnd = end
			}
		}
		t.PerWave = append(t.PerWave, wt)
	}
	t.Input = in
	t.Model = limit.Limit(in)
	for i := range t.PerWave {
		t.PerWave[i].LimitSeconds = t.Model.Waves[i].Total.Seconds()
	}
	t.LimitSeconds = t.Model.Total.Seconds()
	if !wallStart.IsZero() {
		t.WallSeconds = wallEnd.Sub(wallStart).Seconds()
	}
	if t.LimitSeconds > 0 {
		t.Ratio = t.WallSeconds / t.LimitSeconds
	}
	t.MaxDraining = limit.MaxOverlap(all)
	t.BeyondGraceMedian, t.BeyondGraceMax = beyondGrace(pods, graceAll)
	if len(swaps) > 0 {
		sort.Float64s(swaps)
		t.ZtunnelSwaps, t.ZtunnelMedian, t.ZtunnelMax = len(swaps), swaps[len(swaps)/2], swaps[len(swaps)-1]
	}
	return t
}

// beyondGrace is the median and the largest time, in seconds, an evicted pod that honours its grace
// period took to go beyond that period.
func beyondGrace(pods []*evictedPod, graceAll bool) (median, most float64) {
	var d []float64
	for _, e := range pods {
		honours := e.Timing == kwokstages.TimingRealistic || graceAll && e.Timing != kwokstages.TimingFast
		if honours && !e.Gone.IsZero() {
			d = append(d, (e.Gone.Sub(e.Seen) - e.Grace).Seconds())
		}
	}
	if len(d) == 0 {
		return 0, 0
	}
	sort.Float64s(d)
	return d[len(d)/2], d[len(d)-1]
}

// modelNode is one drained node as the model takes it (its evicted pods with the grace periods the
// cluster honoured, their budgets and how long each holds its budget; node by node, its ztunnel's
// replacement as the cluster played it, else the configured readiness) and the interval its pods
// were seen terminating; instant counts the pods whose grace the cluster did not honour.
func modelNode(n string, evicted []*evictedPod, budgets []budget, returns map[string][]time.Time, ztunnelReady time.Duration, swap *ztunnelSwap, nodeByNode, graceAll bool) (limit.Node, limit.Interval, int) {
	ln := limit.Node{Name: n}
	if nodeByNode {
		ln.ZtunnelReady = ztunnelReady
		if d, ok := swap.took(); ok {
			ln.ZtunnelReady = d
		}
	}
	var iv limit.Interval
	instant := 0
	for _, e := range evicted {
		lp := limit.Pod{Name: e.NS + "/" + e.Name, Grace: e.Grace}
		switch honours := e.Timing == kwokstages.TimingRealistic || graceAll && e.Timing != kwokstages.TimingFast; {
		case !honours:
			lp.Grace = 0
			instant++
		case !e.Gone.IsZero() && e.Gone.After(e.Seen):
			// The termination as the cluster played it: its grace period, plus the time kwok (a
			// kubelet, on a real node) took to delete the pod after it, which no executor shortens.
			lp.Grace = e.Gone.Sub(e.Seen)
		}
		for _, b := range budgets {
			if b.ns == e.NS && b.selector.Matches(labels.Set(e.Labels)) {
				lp.Budget = b.name
				break
			}
		}
		switch e.Owner {
		case "ReplicaSet":
			lp.Hold = e.ReadyAfter // replaced at once; the budget waits for the new pod's readiness
		default:
			lp.Hold = lp.Grace + e.ReadyAfter // recreated once gone (StatefulSet), or not at all
		}
		if held, ok := heldUntil(returns[lp.Budget], e.Seen); ok && lp.Budget != "" {
			// As the cluster played it: the disruption controller gives the disruption back only
			// once it has seen the replacement ready, which no executor hastens.
			lp.Hold = max(lp.Hold, held)
		}
		ln.Pods = append(ln.Pods, lp)
		gone := e.Gone
		if gone.IsZero() {
			gone = time.Now()
		}
		if iv.Start.IsZero() || e.Seen.Before(iv.Start) {
			iv.Start = e.Seen
		}
		if gone.After(iv.End) {
			iv.End = gone
		}
	}
	return ln, iv, instant
}

// planEstimate is the runbook's estimate of the plan's waves and of the batch health gates that
// close them: what limit_s measures, predicted from the plan alone.
func planEstimate(p *plan.Plan, ztunnelReady time.Duration) estimate.Span {
	est := estimate.Time(p, estimate.Options{ZtunnelReady: ztunnelReady})
	var sp estimate.Span
	for _, w := range est.Waves {
		sp.Least += w.Least
		sp.Expected += w.Expected
		sp.Most += w.Most
	}
	for i, s := range p.Steps {
		if s.HealthGate != nil && strings.Contains(s.ID, "/batch/") {
			sp.Least += est.Steps[i].Least
			sp.Expected += est.Steps[i].Expected
			sp.Most += est.Steps[i].Most
		}
	}
	return sp
}
