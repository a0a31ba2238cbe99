// Package limit is the physical limit of a plan that replaces ztunnel node by node or moves workloads
// off blue nodes: the shortest wall time any executor could reach for the plan's waves on a given
// cluster, from plain data (waves → nodes → evicted pods with their grace periods and budgets,
// ztunnel start, health-gate settle). The executor bench divides its measured wall time by it.
//
// The model is the library's (estimate.Limit, documented in ambient/vocab/plan/estimate.go), the one the
// runbook's Phases estimate uses: this package feeds it what the cluster did (the pods a watch saw
// evicted, their grace periods, the budgets and their allowed disruptions) where the runbook feeds
// it what the plan's snapshot expected. Per wave, summed over the waves:
//
//	wave = max over the wave's nodes of (drain(node) + ztunnelReady(node)) + settle
//
// drain(node) is when the node's last evicted pod is gone, every eviction of the wave starting at
// its start except as PodDisruptionBudgets forbid (a budget allowing k disruptions has at most k of
// its pods held at a time: a StatefulSet's pod for its grace and its successor's start, a
// ReplicaSet's until its replacement is ready).
package limit

import (
	"regexp"
	"sort"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/estimate"
)

// The model's types are the library's.
type (
	// Pod is one evicted pod.
	Pod = estimate.LimitPod
	// Node is one node of a wave and the pods its drain evicts.
	Node = estimate.LimitNode
	// Wave is the nodes of one batch and the settle time of the health gate that closes it.
	Wave = estimate.LimitWave
	// Input is a plan's waves and the disruptions each budget allows when the plan starts.
	Input = estimate.LimitInput
	// WaveLimit is one wave's part of the limit.
	WaveLimit = estimate.WaveLimit
	// Result is the limit of a plan.
	Result = estimate.LimitResult
)

// Limit computes the physical limit of in with the library's model.
func Limit(in Input) Result { return estimate.Limit(in) }

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
