// Package limit is the physical limit of a plan that replaces ztunnel node by node or moves workloads
// off blue nodes: the shortest wall time any executor could reach for the plan's waves on a given
// cluster, from plain data (waves → nodes → evicted pods with their grace periods and budgets,
// ztunnel start, health-gate settle). The executor bench divides its measured wall time by it; the
// model is meant to move into the library so a plan's Markdown estimate uses the same numbers.
//
// The model, per wave (the node steps between two batch health gates), summed over the waves:
//
//	wave = max over the wave's nodes of (drain(node) + ztunnelReady(node)) + settle
//
// drain(node) is when the node's last evicted pod is gone, all of the wave's evictions starting at the
// wave's start, except as PodDisruptionBudgets forbid: an evicted pod takes one of its budget's
// allowed disruptions for its Hold, and a budget allowing k disruptions has at most k taken at a time
// (the next of its pods in the wave is evicted when one is given back). A pod is gone its Grace after
// its eviction (the kubelet's termination grace period: the deletionTimestamp the API server sets).
// ztunnelReady is how long a node's new ztunnel takes to turn ready after the drain (node by node;
// blue-green swaps no ztunnel per node: 0). settle is the plan's health-gate settle time of the wave.
//
// Hold is what a budget really waits for: the disruption controller counts a pod healthy again once
// a ready pod replaces it. A StatefulSet recreates a pod only after the old one is gone, so its pods
// hold for their grace period and a budget of k lets only k of them terminate at a time (Hold =
// Grace, plus the new pod's start). A ReplicaSet replaces a pod the moment its eviction is accepted,
// so its budget is free again once the replacement is ready (Hold = the replacement's readiness,
// about nothing on kwok). Inside a budget the pods are scheduled longest hold first on the earliest
// free disruption: exact when the budget's pods hold alike (one workload per budget, the usual case),
// within 4/3 of the best order otherwise.
//
// What the model leaves out, as no executor can shorten it: API latency, controller and scheduler
// reaction times, and the steps outside the waves (Helm upgrades, installing and removing green).
package limit

import (
	"regexp"
	"sort"
	"time"
)

// Pod is one evicted pod.
type Pod struct {
	// Name identifies the pod in reports ("namespace/name").
	Name string
	// Grace is its termination grace period: from its eviction until it is gone.
	Grace time.Duration
	// Budget names the PodDisruptionBudget selecting it ("namespace/name"), or "" for none.
	Budget string
	// Hold is how long its eviction takes one of its budget's allowed disruptions (see the package
	// documentation); ignored without a Budget.
	Hold time.Duration
}

// Node is one node of a wave and the pods its drain evicts.
type Node struct {
	Name string
	Pods []Pod
	// ZtunnelReady is how long its new ztunnel takes to turn ready once the node is drained (0 when
	// the plan swaps no ztunnel on the node).
	ZtunnelReady time.Duration
}

// Wave is the nodes of one batch and the settle time of the health gate that closes it.
type Wave struct {
	Nodes  []Node
	Settle time.Duration
}

// Input is a plan's waves and the disruptions each budget allows when the plan starts.
type Input struct {
	Waves []Wave
	// Allowed is each budget's allowed disruptions (status.disruptionsAllowed with every pod
	// healthy). A budget missing here or allowing none counts as allowing one: with none, no executor
	// can drain the node at all, and the measured run says so.
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

// Result is the limit of a plan.
type Result struct {
	Total time.Duration
	Waves []WaveLimit
}

// Limit computes the physical limit of in.
func Limit(in Input) Result {
	var r Result
	for _, w := range in.Waves {
		wl := waveLimit(w, in.Allowed)
		r.Waves = append(r.Waves, wl)
		r.Total += wl.Total
	}
	return r
}

func waveLimit(w Wave, allowed map[string]int) WaveLimit {
	wl := WaveLimit{Settle: w.Settle}
	type job struct {
		node int
		pod  Pod
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
	names := make([]string, 0, len(budgets))
	for b := range budgets {
		names = append(names, b)
	}
	sort.Strings(names)
	for _, b := range names {
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

// Step is what WavesOf needs of a plan step.
type Step struct {
	ID string
	// Gate is set on a batch health gate (a HealthGate step whose ID has a /batch/<n>/ part), with
	// its settle time.
	Gate   bool
	Settle time.Duration
}

// WaveNodes is one wave of a plan: its nodes in plan order and its gate's settle time.
type WaveNodes struct {
	Nodes  []string
	Settle time.Duration
}

// The node a step works on: ".../node/<name>/..." (ztunnel.PlanUpgrade, node by node),
// ".../drain/<name>" (ztunnel.BlueGreenZtunnel's drains), ".../relabel/<name>/..." (blue-green nodes
// switched in place). Blue-green's cordons (".../cordon/<name>") all come before the first wave and
// belong to none.
var nodeStep = regexp.MustCompile(`(?:^|/)(?:node|relabel)/([^/]+)/|(?:^|/)drain/([^/]+)$`)

// NodeOf returns the node a step of a ztunnel plan works on in a wave, or "".
func NodeOf(id string) string {
	m := nodeStep.FindStringSubmatch(id)
	if m == nil {
		return ""
	}
	if m[1] != "" {
		return m[1]
	}
	return m[2]
}

// WavesOf groups a plan's node steps into waves: the nodes met since the previous batch gate, closed
// by the next one (a last group without a gate is a wave without settle). Gates that close no node
// step are left out.
func WavesOf(steps []Step) []WaveNodes {
	var out []WaveNodes
	var cur WaveNodes
	seen := map[string]bool{}
	for _, s := range steps {
		if s.Gate {
			if len(cur.Nodes) > 0 {
				cur.Settle = s.Settle
				out = append(out, cur)
			}
			cur, seen = WaveNodes{}, map[string]bool{}
			continue
		}
		if n := NodeOf(s.ID); n != "" && !seen[n] {
			seen[n] = true
			cur.Nodes = append(cur.Nodes, n)
		}
	}
	if len(cur.Nodes) > 0 {
		out = append(out, cur)
	}
	return out
}

// Interval is a span of time, e.g. a node's drain from its first eviction to its last evicted pod gone.
type Interval struct {
	Start, End time.Time
}

// MaxOverlap is the largest number of intervals that hold at one instant (an interval ending at the
// instant another starts does not overlap it).
func MaxOverlap(ivs []Interval) int {
	type edge struct {
		t time.Time
		d int
	}
	var es []edge
	for _, iv := range ivs {
		if iv.End.Before(iv.Start) {
			continue
		}
		es = append(es, edge{iv.Start, +1}, edge{iv.End, -1})
	}
	sort.Slice(es, func(i, j int) bool {
		if !es[i].t.Equal(es[j].t) {
			return es[i].t.Before(es[j].t)
		}
		return es[i].d < es[j].d // ends before starts at the same instant
	})
	n, best := 0, 0
	for _, e := range es {
		n += e.d
		best = max(best, n)
	}
	return best
}
