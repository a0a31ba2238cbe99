package ztunnel

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/ambient/steps"
)

// order sorts the blue nodes as workloads should move: nodes with only stateless workloads first,
// then those with PodDisruptionBudget-bound or stateful workloads, then those running Jobs; within a
// group by pool and name.
func (x *bg) order(ix *steps.Index) []mesh.Node {
	rank := func(n mesh.Node) int {
		r := 0
		for _, w := range ix.On(n.Name) {
			switch {
			case w.Kind == "Job" || w.Kind == "CronJob":
				return 2
			case w.Kind == "StatefulSet" || w.LocalStorage || len(x.s.BudgetsFor(*w)) > 0:
				r = 1
			}
		}
		return r
	}
	out := append([]mesh.Node(nil), x.blueNodes...)
	sort.SliceStable(out, func(i, j int) bool {
		a, c := rank(out[i]), rank(out[j])
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

func (x *bg) drainSeconds() int64 {
	if x.g.DrainTimeout > 0 {
		return int64(x.g.DrainTimeout.Seconds())
	}
	return int64(DefaultDrainTimeout.Seconds())
}

// moveWorkloads moves the workloads off the blue nodes in batches, stateless first, with a health
// gate after each batch. Each batch is a wave: every node of it a unit (cordon, then drain) that an
// executor may run beside the others. With CordonAll every blue node is cordoned first instead, so
// evicted pods land on green nodes only, and a unit is its drain.
func (x *bg) moveWorkloads() {
	ix := steps.NewIndex(x.s)
	order := x.order(ix)
	if x.g.CordonAll {
		for _, n := range order {
			if n.Unschedulable {
				continue
			}
			x.b.Add(steps.CordonStep(x.base+"cordon/"+n.Name, n))
		}
	}
	ambient := x.s.AmbientNodes()
	drains := map[string]steps.DrainNode{}
	for _, d := range x.b.DrainOrder(x.s, ix, order, ambient) {
		drains[d.Node.Name] = d
	}
	batch := max(1, x.g.BatchSize)
	pace := int64(30)
	if x.g.Pace > 0 {
		pace = int64(x.g.Pace.Seconds())
	}
	asked := x.g.LocalStorage == LocalStorageEvict
	before := []string{x.b.Last()}
	for start := 0; start < len(order); start += batch {
		end := min(start+batch, len(order))
		var local []string
		for _, n := range order[start:end] {
			for _, w := range ix.On(n.Name) {
				if w.LocalStorage && w.Kind != "DaemonSet" {
					local = append(local, w.Ref().String()+" on "+n.Name)
				}
			}
		}
		if len(local) > 0 && !asked {
			sort.Strings(local)
			x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenLocalStorage, Severity: plan.Info, Object: x.blue.Ref(),
				Message:       "draining the blue nodes loses the emptyDir data of " + strings.Join(local, ", "),
				Remedy:        "the plan asks for approval before the first such drain (BlueGreen.LocalStorage: evict drains without asking)",
				RemedyOptions: []plan.RemedyOption{{Option: "BlueGreen.LocalStorage", Value: string(LocalStorageEvict)}}})
			st := plan.Step{ID: fmt.Sprintf("%sbatch/%d/approve-local-storage", x.base, start/batch+1), Risk: plan.RiskNone,
				Description: "approve losing the emptyDir data of the pods the next drains evict",
				Approval:    &plan.Approval{Message: "these pods lose their emptyDir data when their node is drained: " + strings.Join(local, ", ")}}
			x.b.Add(st, before...)
			before = []string{st.ID}
			asked = true
		}
		var done []string
		wave := fmt.Sprintf("%sbatch/%d", x.base, start/batch+1)
		for _, n := range order[start:end] {
			unit := &plan.WaveUnit{ID: wave, Node: n.Name}
			first := before
			if !x.g.CordonAll && !n.Unschedulable {
				c := steps.CordonStep(x.base+"cordon/"+n.Name, n)
				c.Wave = unit
				x.b.Add(c, before...)
				first = []string{c.ID}
			}
			d := drains[n.Name]
			d.Ambient = true // workloads leave blue nodes entirely
			st := steps.DrainStep(x.base+"drain/"+n.Name, d, x.drainSeconds(), "move the node's workloads to green nodes; the node is cordoned and goes away with blue")
			st.Drain.KeepJobs = x.g.Jobs != JobsEvict && hasJobs(ix, n.Name)
			if ws := movable(ix, n.Name); len(ws) > 0 {
				st.Postconditions = append(st.Postconditions, plan.NewCheck(mesh.ObjectRef{}, plan.WorkloadsReadyArgs{Workloads: ws},
					"the workloads evicted from "+n.Name+" are ready again elsewhere"))
			}
			if st.Drain.KeepJobs {
				st.Notes = append(st.Notes, "running Jobs are not evicted: the drain waits for them to finish, within its timeout")
			}
			st.Wave = unit
			x.b.Add(st, first...)
			done = append(done, st.ID)
		}
		gate := plan.Step{ID: fmt.Sprintf("%sbatch/%d/health", x.base, start/batch+1), Risk: plan.RiskNone,
			Description: fmt.Sprintf("health gate after moving batch %d of %d", start/batch+1, (len(order)+batch-1)/batch),
			HealthGate:  &plan.HealthGate{Probe: x.b.Probe(), Scope: "blue-green batch", SettleSeconds: pace}}
		x.b.Add(gate, done...)
		before = []string{gate.ID}
	}
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
