//go:build e2e

package main

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// counter counts requests by key.
type counter struct {
	mu    sync.Mutex
	byKey map[string]int64
	n     int64
}

func newCounter() *counter { return &counter{byKey: map[string]int64{}} }

func (c *counter) add(key string) {
	c.mu.Lock()
	c.byKey[key]++
	c.n++
	c.mu.Unlock()
}

func (c *counter) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *counter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byKey)
}

// attribution gives every request to the step it was made for: the requests since the previous step
// finished (or was skipped) are the finishing step's, so precondition checks, lease renewals and
// journal writes count too.
type attribution struct {
	c      *counter
	mu     sync.Mutex
	last   map[string]int64
	byStep map[string]map[string]int64
}

func newAttribution(c *counter) *attribution {
	return &attribution{c: c, last: c.snapshot(), byStep: map[string]map[string]int64{}}
}

func (a *attribution) observe(ev execute.Event) {
	if ev.Type != execute.EventStepFinished && ev.Type != execute.EventStepSkipped {
		return
	}
	now := a.c.snapshot()
	a.mu.Lock()
	defer a.mu.Unlock()
	d := a.byStep[ev.StepID]
	if d == nil {
		d = map[string]int64{}
		a.byStep[ev.StepID] = d
	}
	for k, v := range now {
		if n := v - a.last[k]; n > 0 {
			d[k] += n
		}
	}
	a.last = now
}

// group is the requests of some steps, by key.
type group struct {
	Steps    int              `json:"steps"`
	Requests map[string]int64 `json:"requests"`
}

func (g group) total(except string) int64 {
	var n int64
	for k, v := range g.Requests {
		if k != except {
			n += v
		}
	}
	return n
}

// Report is what one run measured.
type Report struct {
	Strategy string `json:"strategy"`
	Steps    int    `json:"steps"`
	Nodes    int    `json:"nodes"`
	// NodeSteps are the steps that work on one node; Gates the batch health gates; Other every other
	// step (whole-mesh steps); Run every request of the Apply.
	NodeSteps group `json:"nodeSteps"`
	Gates     group `json:"gates"`
	Other     group `json:"other"`
	Run       group `json:"run"`
	// CPUSeconds is the process's CPU time during the Apply, WallSeconds its wall time.
	CPUSeconds  float64 `json:"cpuSeconds"`
	WallSeconds float64 `json:"wallSeconds"`
	// PerNode is each node's requests beyond evictions in its own steps, lowest first.
	PerNode []int64 `json:"perNode"`
	// Timing is the waves' wall time against their physical limit.
	Timing Timing `json:"timing"`
}

const evictions = "CREATE pods/eviction"

// nodeOf returns the node a step of the ztunnel plans works on, or "".
func nodeOf(id string) string {
	for _, prefix := range []string{"ztunnel/node/", "ztunnel/bluegreen/cordon/", "ztunnel/bluegreen/drain/"} {
		if rest, ok := strings.CutPrefix(id, prefix); ok {
			node, _, _ := strings.Cut(rest, "/")
			return node
		}
	}
	return ""
}

func (a *attribution) report(strategy string, p *plan.Plan, before, after map[string]int64, cpu, wall time.Duration) Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := Report{Strategy: strategy, Steps: len(p.Steps), CPUSeconds: cpu.Seconds(), WallSeconds: wall.Seconds()}
	for _, g := range []*group{&r.NodeSteps, &r.Gates, &r.Other, &r.Run} {
		g.Requests = map[string]int64{}
	}
	nodes := map[string]int64{}
	for id, d := range a.byStep {
		g := &r.Other
		switch {
		case nodeOf(id) != "":
			g = &r.NodeSteps
			nodes[nodeOf(id)] += group{Requests: d}.total(evictions)
		case strings.Contains(id, "/batch/"):
			g = &r.Gates
		}
		g.Steps++
		for k, v := range d {
			g.Requests[k] += v
		}
	}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			r.Run.Requests[k] = d
		}
	}
	r.Run.Steps = len(p.Steps)
	r.Nodes = len(nodes)
	for _, v := range nodes {
		r.PerNode = append(r.PerNode, v)
	}
	sort.Slice(r.PerNode, func(i, j int) bool { return r.PerNode[i] < r.PerNode[j] })
	return r
}

func (r Report) text() string {
	var b strings.Builder
	n := float64(max(1, r.Nodes))
	per := func(g group) float64 { return float64(g.total(evictions)) / n }
	fmt.Fprintf(&b, "\n%s: %d steps over %d nodes\n", r.Strategy, r.Steps, r.Nodes)
	fmt.Fprintf(&b, "  requests per node beyond evictions: node steps %.2f + batch gates %.2f = %.2f; other (whole-mesh) steps %.2f; whole run %.2f\n",
		per(r.NodeSteps), per(r.Gates), per(r.NodeSteps)+per(r.Gates), per(r.Other), per(r.Run))
	if k := len(r.PerNode); k > 0 {
		fmt.Fprintf(&b, "  one node's own steps, beyond evictions: min %d, median %d, max %d\n", r.PerNode[0], r.PerNode[k/2], r.PerNode[k-1])
	}
	fmt.Fprintf(&b, "  evictions: %d (%.2f per node)\n", r.Run.Requests[evictions], float64(r.Run.Requests[evictions])/n)
	fmt.Fprintf(&b, "  executor CPU %.1fs over %.1fs wall: %.2f%% of wall\n", r.CPUSeconds, r.WallSeconds, 100*r.CPUSeconds/max(r.WallSeconds, 1e-9))
	for _, s := range []struct {
		name string
		g    group
	}{{"node steps", r.NodeSteps}, {"batch gates", r.Gates}, {"other steps", r.Other}, {"whole run", r.Run}} {
		fmt.Fprintf(&b, "  %s (%d steps), per node by request:\n", s.name, s.g.Steps)
		keys := make([]string, 0, len(s.g.Requests))
		for k := range s.g.Requests {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "    %-36s %8d  %7.2f/node\n", k, s.g.Requests[k], float64(s.g.Requests[k])/n)
		}
	}
	t := r.Timing
	fmt.Fprintf(&b, "  waves against the physical limit (drain = slowest node's last evicted pod gone, each pod terminating as long as the cluster took, with budget serialisation; ztunnel = its readiness after that drain):\n")
	for i, w := range t.Model.Waves {
		pw := t.PerWave[i]
		fmt.Fprintf(&b, "    wave %d: %d nodes, %d pods evicted: limit %.1fs (drain %.1fs on %s, longest termination %.1fs; ztunnel %.1fs; settle %.1fs), wall %.1fs, at most %d nodes draining at once\n",
			i+1, pw.Nodes, pw.Pods, w.Total.Seconds(), w.Drain.Seconds(), w.SlowestNode, w.Longest.Seconds(), w.Ztunnel.Seconds(), w.Settle.Seconds(), pw.WallSeconds, pw.MaxDraining)
	}
	fmt.Fprintf(&b, "  limit_s: %.1f (evicted pods went %.2fs after their grace period at the median, %.2fs at most: the cluster's deletion, counted", t.LimitSeconds, t.BeyondGraceMedian, t.BeyondGraceMax)
	if t.ZtunnelSwaps > 0 {
		fmt.Fprintf(&b, "; %d ztunnel pods replaced, deletion to successor Ready %.2fs at the median, %.2fs at most: counted in place of the configured readiness", t.ZtunnelSwaps, t.ZtunnelMedian, t.ZtunnelMax)
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "  estimate_s: at least %.1f, expected %.1f, at most %.1f (the runbook's Phases model on the plan's snapshot; limit_s is the same model on what the cluster did)\n",
		t.Estimate.Least.Seconds(), t.Estimate.Expected.Seconds(), t.Estimate.Most.Seconds())
	fmt.Fprintf(&b, "  wall_s: %.1f (first wave's first node step started to last batch gate finished; whole Apply %.1f)\n", t.WallSeconds, r.WallSeconds)
	fmt.Fprintf(&b, "  requests_per_node_beyond_evictions: %.2f (node steps and batch gates)\n", per(r.NodeSteps)+per(r.Gates))
	fmt.Fprintf(&b, "  executor_cpu_share: %.2f%% (%.1fs CPU over %.1fs wall)\n", 100*r.CPUSeconds/max(r.WallSeconds, 1e-9), r.CPUSeconds, r.WallSeconds)
	fmt.Fprintf(&b, "  max_nodes_draining: %d (%d waves, %d nodes drained, %d pods evicted, %d of them deleted at once by kwok and counted without grace)\n", t.MaxDraining, t.Waves, t.NodesDrained, t.Evicted, t.Instant)
	fmt.Fprintf(&b, "ratio: %.2f\n", t.Ratio)
	return b.String()
}
