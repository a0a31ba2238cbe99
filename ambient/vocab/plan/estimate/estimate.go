package estimate

import (
	"sort"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/words"
)

// How long a plan takes, by one model: the runbook's Phases (at least, expected, at most) are
// computed with it from the plan, and the executor bench divides the wall time it measures by the
// same model computed from what its cluster did (Limit).
//
// The executor runs a wave's node units at the same time (plan.Step.Wave) and everything else one step
// after another. A wave lasts as long as its slowest unit; a unit's drain lasts until its last
// evicted pod is gone, all the wave's evictions starting together, except as PodDisruptionBudgets
// forbid: an evicted pod takes one of its budget's allowed disruptions for its Hold, and a budget
// allowing k disruptions has at most k taken at a time (the next of its pods in the wave is evicted
// when one is given back). A pod is gone its Grace after its eviction (its termination grace period,
// when it uses all of it). Hold is what a budget really waits for: the disruption controller counts
// a pod healthy again once a ready pod replaces it. A StatefulSet recreates a pod only once the old
// one is gone, so its pods hold for their grace period and the new pod's start; a ReplicaSet replaces
// a pod the moment its eviction is accepted, so its budget is free again once the replacement is
// ready. Inside a budget the pods are scheduled longest hold first on the earliest free disruption:
// exact when the budget's pods hold alike (one workload per budget, the usual case), within 4/3 of
// the best order otherwise. After its drain, a node whose ztunnel the unit replaces waits for the new
// one to turn ready; then the health gate after the wave lets the mesh settle.
//
// What the model leaves out, as no executor can shorten it: API latency, controller and scheduler
// reaction times. Outside the waves EstimateTime counts each Helm change, restart and new node at a
// typical duration (Options), and each health gate's settle.

// LimitPod is one evicted pod.
type LimitPod struct {
	// Name identifies the pod in reports ("namespace/name").
	Name string
	// Grace is its termination grace period: from its eviction until it is gone.
	Grace time.Duration
	// Budget names the PodDisruptionBudget selecting it ("namespace/name"), or "" for none.
	Budget string
	// Hold is how long its eviction takes one of its budget's allowed disruptions; ignored without
	// a Budget.
	Hold time.Duration
}

// LimitNode is one node of a wave and the pods its drain evicts.
type LimitNode struct {
	Name string
	Pods []LimitPod
	// ZtunnelReady is how long its new ztunnel takes to turn ready once the node is drained (0 when
	// the unit replaces no ztunnel).
	ZtunnelReady time.Duration
}

// LimitWave is the nodes of one wave and the settle time of the health gate that closes it.
type LimitWave struct {
	Nodes  []LimitNode
	Settle time.Duration
}

// LimitInput is a plan's waves and the disruptions each budget allows when the plan starts.
type LimitInput struct {
	Waves []LimitWave
	// Allowed is each budget's allowed disruptions (status.disruptionsAllowed with every pod
	// healthy). A budget missing here or allowing none counts as allowing one: with none, no
	// executor can drain the node at all.
	Allowed map[string]int
}

// WaveLimit is one wave's part of the limit.
type WaveLimit struct {
	// Drain is when the wave's slowest node is drained; SlowestNode names it.
	Drain       time.Duration
	SlowestNode string
	// Longest is the longest grace period of a pod evicted in the wave: Drain beyond it is budget
	// serialisation.
	Longest time.Duration
	// Ztunnel is the ztunnel readiness added after the drain of the node that ends last.
	Ztunnel time.Duration
	Settle  time.Duration
	// Total is the wave's limit: the last node's drain and ztunnel, then the settle.
	Total time.Duration
	Pods  int
}

// LimitResult is the limit of a plan's waves.
type LimitResult struct {
	Total time.Duration
	Waves []WaveLimit
}

// Limit computes the shortest time any executor could take for the waves of in (see the model
// above).
func Limit(in LimitInput) LimitResult {
	var r LimitResult
	for _, w := range in.Waves {
		wl := waveLimit(w, in.Allowed)
		r.Waves = append(r.Waves, wl)
		r.Total += wl.Total
	}
	return r
}

func waveLimit(w LimitWave, allowed map[string]int) WaveLimit {
	wl := WaveLimit{Settle: w.Settle}
	type job struct {
		node int
		pod  LimitPod
	}
	budgets := map[string][]job{}
	drained := make([]time.Duration, len(w.Nodes))
	for i, n := range w.Nodes {
		for _, p := range n.Pods {
			wl.Pods++
			wl.Longest = max(wl.Longest, p.Grace)
			if p.Budget == "" {
				drained[i] = max(drained[i], p.Grace)
				continue
			}
			budgets[p.Budget] = append(budgets[p.Budget], job{i, p})
		}
	}
	for _, b := range words.SortedKeys(budgets) {
		jobs := budgets[b]
		// Longest hold first, ties by the later end (longer grace) first, then by name for a stable result.
		sort.SliceStable(jobs, func(i, j int) bool {
			if jobs[i].pod.Hold != jobs[j].pod.Hold {
				return jobs[i].pod.Hold > jobs[j].pod.Hold
			}
			if jobs[i].pod.Grace != jobs[j].pod.Grace {
				return jobs[i].pod.Grace > jobs[j].pod.Grace
			}
			return jobs[i].pod.Name < jobs[j].pod.Name
		})
		slots := make([]time.Duration, max(1, allowed[b])) // when each allowed disruption is free again
		for _, j := range jobs {
			k := 0
			for s := range slots {
				if slots[s] < slots[k] {
					k = s
				}
			}
			start := slots[k]
			slots[k] = start + j.pod.Hold
			drained[j.node] = max(drained[j.node], start+j.pod.Grace)
		}
	}
	for i, n := range w.Nodes {
		if end := drained[i] + n.ZtunnelReady; end > wl.Drain+wl.Ztunnel || wl.SlowestNode == "" {
			wl.Drain, wl.Ztunnel, wl.SlowestNode = drained[i], n.ZtunnelReady, n.Name
		}
	}
	wl.Total = wl.Drain + wl.Ztunnel + wl.Settle
	return wl
}

// Options are the typical durations EstimateTime counts for what a plan cannot know; zero
// values mean the defaults.
type Options struct {
	// ZtunnelReady is a new ztunnel pod's time to turn ready on its node; 0 means 5s.
	ZtunnelReady time.Duration
	// ReplacementReady is an evicted pod's replacement's time to turn ready elsewhere (what a
	// ReplicaSet's budget waits for); 0 means 5s.
	ReplacementReady time.Duration
	// HelmChange is one Helm install, upgrade, rollback or uninstall with its rollout; 0 means 1m.
	HelmChange time.Duration
	// Restart is one batch of a restart's rollouts (Restart.BatchSize workloads at once); 0 means 1m.
	Restart time.Duration
	// NodeProvisioning is new nodes joining the cluster (a wait for nodes to be ready); 0 means 3m.
	NodeProvisioning time.Duration
}

// Defaults of Options.
const (
	DefaultZtunnelReady     = 5 * time.Second
	DefaultReplacementReady = 5 * time.Second
	DefaultHelmChange       = time.Minute
	DefaultRestart          = time.Minute
	DefaultNodeProvisioning = 3 * time.Minute
	// defaultGrace is the API server's termination grace period when a pod sets none.
	defaultGrace = 30 * time.Second
)

// WithDefaults returns o with every zero duration set to its default.
func (o Options) WithDefaults() Options {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&o.ZtunnelReady, DefaultZtunnelReady)
	set(&o.ReplacementReady, DefaultReplacementReady)
	set(&o.HelmChange, DefaultHelmChange)
	set(&o.Restart, DefaultRestart)
	set(&o.NodeProvisioning, DefaultNodeProvisioning)
	return o
}

// Span is how long some steps take: at least (only the waits nothing shortens: health-gate settles,
// new ztunnels turning ready; every pod gone at once), expected (every evicted pod takes its whole
// grace period, budgets let pods go as fast as they allow, Helm changes, restarts and new nodes take
// their typical time), at most (every drain and wait runs to its timeout). Open says some drain or
// wait leaves its timeout to the executor: at most is then more. A person's approval counts as
// nothing.
type Span struct {
	Least, Expected, Most time.Duration
	Open                  bool
}

// Add adds o to s.
func (s *Span) Add(o Span) {
	s.Least += o.Least
	s.Expected += o.Expected
	s.Most += o.Most
	s.Open = s.Open || o.Open
}

// WaveEstimate is one wave of a plan.
type WaveEstimate struct {
	// ID names the wave; Start and End are its steps, [Start, End).
	ID         string
	Start, End int
	Nodes      []string
	Span
	// Expected is the model's wave (its settle is the health gate's, counted with that step).
	Model WaveLimit
}

// Estimate is how long a plan takes.
type Estimate struct {
	// Total is the whole plan; Steps each step outside a wave; Waves each wave.
	Total Span
	Steps []Span
	Waves []WaveEstimate
}

// EstimateTime estimates how long the executor takes for the plan (see the model above).
func Time(p *plan.Plan, o Options) Estimate {
	o = o.WithDefaults()
	est := Estimate{Steps: make([]Span, len(p.Steps))}
	for i := 0; i < len(p.Steps); {
		if p.Steps[i].Wave == nil {
			est.Steps[i] = stepSpan(&p.Steps[i], o)
			est.Total.Add(est.Steps[i])
			i++
			continue
		}
		w := waveEstimate(p, i, o)
		est.Waves = append(est.Waves, w)
		est.Total.Add(w.Span)
		i = w.End
	}
	return est
}

// stepSpan is the span of one step outside a wave. What no timeout bounds (a Helm change, a
// restart) counts its typical time as expected and at most; a drain or a wait for new nodes counts
// the model's or the typical time as expected, within its timeout.
func stepSpan(s *plan.Step, o Options) Span {
	var t Waits
	t.Add(s)
	settle := sec(t.Settle)
	sp := Span{Least: settle, Expected: settle, Most: settle + sec(t.Timeouts), Open: t.Defaults > 0}
	typical, bounded, timeout := takesNothing(s, o)
	if k, ok := kindTimes[s.Kind()]; ok {
		typical, bounded, timeout = k.takes(s, o)
	}
	if timeout > 0 {
		bounded = min(bounded, sec(timeout))
	}
	sp.Expected += typical + bounded
	sp.Most += typical
	if sp.Open {
		sp.Most = max(sp.Most, sp.Expected)
	}
	return sp
}

// waveEstimate is the span of the wave starting at step start: its slowest unit.
func waveEstimate(p *plan.Plan, start int, o Options) WaveEstimate {
	id := p.Steps[start].Wave.ID
	w := WaveEstimate{ID: id, Start: start, End: start}
	units := map[string]*LimitNode{}
	full, zero := map[string]*LimitNode{}, map[string]*LimitNode{}
	most := map[string]Span{}
	allowed := map[string]int{}
	var order []string
	for ; w.End < len(p.Steps) && p.Steps[w.End].Wave != nil && p.Steps[w.End].Wave.ID == id; w.End++ {
		s := &p.Steps[w.End]
		node := s.Wave.Node
		if _, ok := units[node]; !ok {
			units[node], full[node], zero[node] = &LimitNode{Name: node}, &LimitNode{Name: node}, &LimitNode{Name: node}
			order = append(order, node)
		}
		var t Waits
		t.Add(s)
		m := most[node]
		m.Most += sec(t.Settle + t.Timeouts)
		m.Open = m.Open || t.Defaults > 0
		most[node] = m
		if s.Drain != nil {
			full[node].Pods = append(full[node].Pods, limitNode(s.Drain, o, true).Pods...)
			zero[node].Pods = append(zero[node].Pods, limitNode(s.Drain, o, false).Pods...)
			for b, n := range allowedBy(s.Drain.Expect) {
				allowed[b] = n
			}
		}
		if s.WaitFor != nil && s.WaitFor.Check.Type == plan.CheckNodeAgentReady {
			full[node].ZtunnelReady, zero[node].ZtunnelReady = o.ZtunnelReady, o.ZtunnelReady
		}
	}
	w.Nodes = order
	var fw, zw LimitWave
	for _, n := range order {
		fw.Nodes = append(fw.Nodes, *full[n])
		zw.Nodes = append(zw.Nodes, *zero[n])
		w.Most = max(w.Most, most[n].Most)
		w.Open = w.Open || most[n].Open
	}
	w.Model = Limit(LimitInput{Waves: []LimitWave{fw}, Allowed: allowed}).Waves[0]
	w.Expected = w.Model.Total
	w.Least = Limit(LimitInput{Waves: []LimitWave{zw}, Allowed: allowed}).Total
	w.Most = max(w.Most, w.Expected)
	return w
}

// limitNode is what the model takes of a drain: the pods it is expected to evict, with their whole
// grace period (full) or none. The pods no budget covers count as one pod of their longest grace
// (they all go at once).
func limitNode(d *plan.NodeDrain, o Options, full bool) LimitNode {
	n := LimitNode{Name: d.Node}
	e := d.Expect
	if e == nil {
		return n
	}
	scale := func(d time.Duration) time.Duration {
		if !full {
			return 0
		}
		return d
	}
	free := e.Pods
	for _, b := range e.Budgets {
		free -= b.Pods
	}
	if free > 0 {
		n.Pods = append(n.Pods, LimitPod{Name: d.Node + " pods", Grace: scale(graceOf(e.GraceSeconds))})
	}
	for _, b := range e.Budgets {
		grace := graceOf(b.GraceSeconds)
		hold := o.ReplacementReady
		if b.Stateful {
			hold += grace
		}
		for i := range max(1, b.Pods) {
			n.Pods = append(n.Pods, LimitPod{Name: b.Budget + "#" + itoa(i), Grace: scale(grace), Budget: b.Budget, Hold: scale(hold)})
		}
	}
	return n
}

// graceOf is a grace period in seconds, the API server's default for 0.
func graceOf(s int64) time.Duration {
	if s <= 0 {
		return defaultGrace
	}
	return sec(s)
}

// allowedBy is the disruptions each budget of the drain allowed when the plan was made.
func allowedBy(e *plan.DrainExpect) map[string]int {
	out := map[string]int{}
	if e == nil {
		return out
	}
	for _, b := range e.Budgets {
		out[b.Budget] = int(b.Allowed)
	}
	return out
}

func sec(s int64) time.Duration { return time.Duration(s) * time.Second }

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
