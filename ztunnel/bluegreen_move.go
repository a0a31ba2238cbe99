package ztunnel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// Drain classes of a blue node, in the order the seed runbook moves workloads: stateless first, then
// stateful (StatefulSets, emptyDir data, PodDisruptionBudgets that allow no disruption: their
// drains take long or lose something), then the nodes running Jobs, which drains wait for. A wave
// holds nodes of one class only.
const (
	classStateless = iota
	classStateful
	classJobs
)

var classNames = [...]string{"stateless", "stateful", "Jobs"}

// class is the drain class of a blue node: that of its most demanding workload.
func (x *bg) class(ix *steps.Index, n mesh.Node) int {
	c := classStateless
	for _, w := range ix.On(n.Name) {
		switch {
		case w.Kind == "DaemonSet":
			continue // a drain leaves it
		case w.Kind == "Job" || w.Kind == "CronJob":
			return classJobs
		case w.Kind == "StatefulSet" || w.LocalStorage || x.heldByBudget(*w):
			c = classStateful
		}
	}
	return c
}

func (x *bg) heldByBudget(w mesh.Workload) bool {
	for _, b := range x.s.BudgetsFor(w) {
		if b.DisruptionsAllowed == 0 {
			return true
		}
	}
	return false
}

// order sorts the blue nodes as workloads should move: by class (stateless, stateful, Jobs), then by
// pool and name.
func (x *bg) order(ix *steps.Index) []mesh.Node {
	out := append([]mesh.Node(nil), x.blueNodes...)
	class := map[string]int{}
	for _, n := range out {
		class[n.Name] = x.class(ix, n)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, c := class[out[i].Name], class[out[j].Name]
		if a != c {
			return a < c
		}
		if out[i].Pool != out[j].Pool {
			return out[i].Pool < out[j].Pool
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// wave is one batch of blue nodes drained together, all of one class.
type wave struct {
	class int
	nodes []mesh.Node
}

// waves cuts the ordered blue nodes into waves of at most BatchSize nodes that never mix classes:
// a stateful node never drains before the last stateless one, nor a Job's node before the last
// stateful one.
func (x *bg) waves(ix *steps.Index) []wave {
	batch := max(1, x.g.BatchSize)
	var out []wave
	for _, n := range x.order(ix) {
		c := x.class(ix, n)
		if len(out) == 0 || out[len(out)-1].class != c || len(out[len(out)-1].nodes) == batch {
			out = append(out, wave{class: c})
		}
		out[len(out)-1].nodes = append(out[len(out)-1].nodes, n)
	}
	return out
}

func (x *bg) drainSeconds() int64 {
	if x.g.DrainTimeout > 0 {
		return int64(x.g.DrainTimeout.Seconds())
	}
	return int64(DefaultDrainTimeout.Seconds())
}

func (x *bg) pace() int64 {
	if x.g.Pace > 0 {
		return int64(x.g.Pace.Seconds())
	}
	return 30
}

// moveWorkloads moves the workloads off the blue nodes in waves, stateless first, with a health gate
// after each. Every node of a wave is a unit (cordon, then drain) that an executor may run beside the
// others. With CordonAll every blue node is cordoned first instead, so evicted pods land on green
// nodes only, and a unit is its drain.
func (x *bg) moveWorkloads() {
	ix := steps.NewIndex(x.s)
	waves := x.waves(ix)
	if x.g.CordonAll {
		for _, w := range waves {
			for _, n := range w.nodes {
				if !n.Unschedulable {
					x.b.Add(steps.CordonStep(x.base+"cordon/"+n.Name, n))
				}
			}
		}
	}
	drains := map[string]steps.DrainNode{}
	order := x.b.DrainOrder(x.s, ix, x.order(ix), x.s.AmbientNodes())
	for _, d := range order {
		drains[d.Node.Name] = d
	}
	keepJobs := x.g.Jobs == "" || x.g.Jobs == JobsWait
	x.b.GraceBeyondTimeout(ix, order, x.drainSeconds(), "BlueGreen.DrainTimeout", keepJobs)
	if keepJobs {
		x.b.JobsBeyondTimeout(ix, order, x.drainSeconds(), "BlueGreen.DrainTimeout", "BlueGreen.Jobs")
	}
	placed, added := x.placement(ix, waves, drains)
	x.capacityReport(waves, placed, added)
	before := []string{x.b.Last()}
	for i, w := range waves {
		wid := fmt.Sprintf("%sbatch/%d", x.base, i+1)
		if st, ok := x.askLocalStorage(ix, w.nodes, wid+"/approve-local-storage"); ok {
			x.b.Add(st, before...)
			before = []string{st.ID}
		}
		var done []string
		for _, n := range w.nodes {
			done = append(done, x.moveNode(ix, drains[n.Name], &plan.WaveUnit{ID: wid, Node: n.Name}, before))
		}
		gate := plan.Step{ID: wid + "/health", Risk: plan.RiskNone,
			Description: fmt.Sprintf("health gate after moving batch %d of %d", i+1, len(waves)),
			HealthGate:  &plan.HealthGate{Probe: x.b.Probe(), Scope: "blue-green batch", SettleSeconds: x.pace()}}
		x.b.Add(gate, done...)
		before = []string{gate.ID}
	}
}

// moveNode adds one node's unit of a wave, its cordon (unless CordonAll did it, or it was cordoned
// already) and its drain, after the steps before; it returns the drain's ID.
func (x *bg) moveNode(ix *steps.Index, d steps.DrainNode, unit *plan.WaveUnit, before []string) string {
	n := d.Node
	first := before
	if !x.g.CordonAll && !n.Unschedulable {
		c := steps.CordonStep(x.base+"cordon/"+n.Name, n)
		c.Wave = unit
		x.b.Add(c, before...)
		first = []string{c.ID}
	}
	d.Ambient = true // workloads leave blue nodes entirely
	st := steps.DrainStep(x.base+"drain/"+n.Name, d, x.drainSeconds(), "move the node's workloads to green nodes; the node is cordoned and goes away with blue")
	x.keepJobs(&st, ix, n.Name)
	if ws := movable(ix, n.Name); len(ws) > 0 {
		st.Postconditions = append(st.Postconditions, plan.NewCheck(mesh.ObjectRef{}, plan.WorkloadsReadyArgs{Workloads: ws},
			"the workloads evicted from "+n.Name+" are ready again elsewhere"))
	}
	st.Wave = unit
	x.b.Add(st, first...)
	return st.ID
}

// keepJobs makes a drain leave running Jobs alone (JobsWait, the default): it waits for them to
// finish within its timeout. Every drain of the plan does so, the relabelled nodes' too.
func (x *bg) keepJobs(st *plan.Step, ix *steps.Index, node string) {
	if x.g.Jobs == JobsEvict || !hasJobs(ix, node) {
		return
	}
	st.Drain.KeepJobs = true
	st.Notes = append(st.Notes, "running Jobs are not evicted: the drain waits for them to finish, within its timeout")
}

// capacityReport says how much of blue must fit on green before each wave: the pods of every blue
// node drained so far. A wave cordons only its own nodes, so some evicted pods may land on blue nodes
// a later wave drains again; with CordonAll they all land on green.
//
// placed is what the placement found of green's room ("" when it was not assessed), added the new
// green nodes it needs.
func (x *bg) capacityReport(waves []wave, placed string, added int) {
	if len(waves) == 0 {
		return
	}
	var need, parts, said []string
	total := 0
	for i, w := range waves {
		total += len(w.nodes)
		need = append(need, strconv.Itoa(total))
		if i == 0 || waves[i-1].class != w.class {
			parts = append(parts, fmt.Sprintf("%s from wave %d", classNames[w.class], i+1))
		}
		switch {
		case i == 0:
			said = append(said, fmt.Sprintf("%d blue node(s)' worth in wave 1", total))
		case len(waves) <= 6 || i == len(waves)-1:
			said = append(said, fmt.Sprintf("%d in all by the end of wave %d", total, i+1))
		case i == 1:
			said = append(said, "…")
		}
	}
	msg := "green must take the pods of the blue nodes drained so far: " + strings.Join(said, ", ") +
		" (" + strings.Join(parts, ", ") + "); " + x.capacitySource(total)
	if placed != "" {
		msg += "; " + placed
	}
	if !x.g.CordonAll {
		msg += "; each wave cordons only its own nodes, so some evicted pods land on blue nodes a later wave drains again (CordonAll cordons every blue node first: then every evicted pod lands on green)"
	}
	details := map[string]string{"waves": strconv.Itoa(len(waves)), "nodes": strconv.Itoa(total), "byWave": strings.Join(need, ",")}
	if placed != "" {
		details["greenNodesAdded"] = strconv.Itoa(added)
	}
	x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenCapacityNeeded, Severity: plan.Info, Object: x.blue.Ref(),
		Details: details,
		Message: msg,
		Remedy:  "make sure green can grow that far (NodePool limits, node group sizes, quotas) before each wave; the health gate after each wave is the place to stop"})
}

// capacitySource says where the capacity comes from.
func (x *bg) capacitySource(total int) string {
	c := x.g.Capacity
	switch {
	case len(c.NodePools) > 0:
		return fmt.Sprintf("Karpenter launches green nodes (NodePools %s) for the evicted pods as they pend, so their limits must allow %d blue nodes' worth more", strings.Join(c.NodePools, ", "), total)
	case len(c.Relabel) > 0:
		return fmt.Sprintf("the %d relabelled node(s) are green before wave 1; add green nodes (labelled %s=%s) as the waves go", len(c.Relabel), x.label, x.greenVal)
	}
	return fmt.Sprintf("the plan waits for %d ready green node(s) before wave 1; add more (labelled %s=%s) as the waves go", max(1, c.Nodes), x.label, x.greenVal)
}

// movable lists the Deployments and StatefulSets with pods on the node, as "Kind/namespace/name".
func movable(ix *steps.Index, node string) []string {
	var out []string
	for _, w := range ix.On(node) {
		if w.Kind == "Deployment" || w.Kind == "StatefulSet" {
			out = append(out, w.Kind+"/"+w.Namespace+"/"+w.Name)
		}
	}
	sort.Strings(out)
	return out
}

func hasJobs(ix *steps.Index, node string) bool {
	for _, w := range ix.On(node) {
		if w.Kind == "Job" || w.Kind == "CronJob" {
			return true
		}
	}
	return false
}
