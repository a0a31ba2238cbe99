package steps

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Index holds a snapshot's workloads by node and its PodDisruptionBudgets by namespace, built once
// for the many drain decisions of a plan.
type Index struct {
	byNode  map[string][]*mesh.Workload
	budgets map[string][]mesh.PodDisruptionBudget
}

// NewIndex indexes the snapshot. It keeps pointers into s, which must not change while it is used.
func NewIndex(s *mesh.Snapshot) *Index {
	ix := &Index{byNode: map[string][]*mesh.Workload{}, budgets: map[string][]mesh.PodDisruptionBudget{}}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		for _, n := range w.Nodes {
			ix.byNode[n] = append(ix.byNode[n], w)
		}
	}
	for _, b := range s.PodDisruptionBudgets {
		ix.budgets[b.Namespace] = append(ix.budgets[b.Namespace], b)
	}
	return ix
}

// On returns the workloads with pods on the node.
func (ix *Index) On(node string) []*mesh.Workload { return ix.byNode[node] }

// DrainNode is one node to drain, with what may hold the drain up.
type DrainNode struct {
	Node mesh.Node
	// Ambient is true when ambient pods ran on the node when the plan was made.
	Ambient bool
	// Stateful counts the StatefulSets, Jobs and pods with local storage on the node.
	Stateful int
	// Blocked is true when a PodDisruptionBudget covering a pod on the node allows no disruption.
	Blocked bool
	// MayHold says what may hold the drain, by name, as plan.NodeDrain.MayHold does.
	MayHold []string
	// Expect is what the drain is expected to evict, for the runbook's time estimate.
	Expect *plan.DrainExpect
	// KeepJobs is true when the drain waits for Jobs' pods to finish rather than evicting them: the
	// placement does not put them anywhere again.
	KeepJobs bool
}

// DrainOrder returns the nodes in the order to drain them: nodes no budget blocks first, then fewer
// stateful workloads first, then by pool and name. What may hold each drain is named, and what blocks
// one (a budget allowing no disruption, a pod no controller owns) is added to the plan as a finding.
// ambient counts ambient workloads per node (mesh.Snapshot.AmbientNodes); only nodes with ambient
// pods are examined, because only their drains evict every pod.
func (b *Builder) DrainOrder(s *mesh.Snapshot, ix *Index, nodes []mesh.Node, ambient map[string]int) []DrainNode {
	out := make([]DrainNode, 0, len(nodes))
	for _, n := range nodes {
		d := DrainNode{Node: n, Ambient: ambient[n.Name] > 0}
		if d.Ambient {
			d.MayHold, d.Stateful, d.Blocked = b.mayHold(ix, n.Name)
			d.Expect = ix.expect(n.Name)
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, c := out[i], out[j]
		if a.Blocked != c.Blocked {
			return !a.Blocked
		}
		if a.Stateful != c.Stateful {
			return a.Stateful < c.Stateful
		}
		if a.Node.Pool != c.Node.Pool {
			return a.Node.Pool < c.Node.Pool
		}
		return a.Node.Name < c.Node.Name
	})
	return out
}

// mayHold lists what may hold a node's drain, by name, and adds the findings of what blocks it: one
// finding per PodDisruptionBudget allowing no disruption, however many nodes it holds (blockedBy).
func (b *Builder) mayHold(ix *Index, node string) (hold []string, stateful int, blocked bool) {
	for _, w := range ix.byNode[node] {
		if w.Kind == "DaemonSet" {
			continue
		}
		for _, bud := range ix.budgets[w.Namespace] {
			if !bud.Selector.Matches(w.Labels) {
				continue
			}
			if bud.DisruptionsAllowed == 0 {
				blocked = true
				hold = append(hold, fmt.Sprintf("%s: allows 0 disruptions and covers %s", bud.Ref(), w.Ref()))
				b.blockedBy(bud, node, w.Ref())
			}
		}
		switch {
		case w.Kind == "Pod":
			hold = append(hold, fmt.Sprintf("%s: has no controller, so eviction deletes it for good", w.Ref()))
			b.Finding(plan.Finding{Code: plan.CodeUnmanagedPodBlocksDrain, Severity: plan.Waivable, Object: w.Ref(), Component: "node/" + node,
				Message: fmt.Sprintf("pod %s/%s on %s has no controller; draining the node deletes it for good", w.Namespace, w.Name, node),
				Remedy:  "run it under a Deployment or Job, or waive"})
		case w.Kind == "Job" || w.Kind == "CronJob":
			hold = append(hold, fmt.Sprintf("%s: runs; eviction stops it, and it starts over only if its backoffLimit allows", w.Ref()))
		case w.Kind == "StatefulSet":
			hold = append(hold, fmt.Sprintf("%s: restarts elsewhere with the same identity", w.Ref()))
		}
		if w.LocalStorage {
			hold = append(hold, fmt.Sprintf("%s: loses the data of its emptyDir volumes", w.Ref()))
		}
		if w.Stateful() {
			stateful++
		}
	}
	sort.Strings(hold)
	return hold, stateful, blocked
}

// expect is what a drain of the node evicts, for the time model: its pods (a workload's pods spread
// evenly over its nodes), the longest grace period of those no budget covers, and the pods each
// budget covers. A grace period of the API server's default (30s, also when a pod sets none) is left
// out (0), which keeps the plan of a thousand nodes short.
func (ix *Index) expect(node string) *plan.DrainExpect {
	e := &plan.DrainExpect{}
	for _, w := range ix.byNode[node] {
		if w.Kind == "DaemonSet" {
			continue
		}
		pods := 1
		if n := len(w.Nodes); n > 0 && w.Pods > n {
			pods = (w.Pods + n - 1) / n
		}
		grace := w.TerminationSeconds()
		if grace == mesh.DefaultTerminationGracePeriodSeconds {
			grace = 0
		}
		e.Pods += pods
		bud, ok := ix.budgetOf(w)
		if !ok {
			e.GraceSeconds = longerGrace(e.GraceSeconds, grace)
			continue
		}
		e.Budgets = addExpected(e.Budgets, plan.ExpectedBudget{Budget: bud.Namespace + "/" + bud.Name, Allowed: bud.DisruptionsAllowed,
			Pods: pods, GraceSeconds: grace, Stateful: w.Kind == "StatefulSet"})
	}
	if e.Pods == 0 {
		return nil
	}
	return e
}

// budgetOf is the budget covering the workload's pods, if any.
func (ix *Index) budgetOf(w *mesh.Workload) (mesh.PodDisruptionBudget, bool) {
	for _, bud := range ix.budgets[w.Namespace] {
		if bud.Selector.Matches(w.Labels) {
			return bud, true
		}
	}
	return mesh.PodDisruptionBudget{}, false
}

// longerGrace is the longer of two grace periods in seconds, 0 standing for the default (30).
func longerGrace(a, b int64) int64 {
	eff := func(g int64) int64 {
		if g == 0 {
			return 30
		}
		return g
	}
	if l := max(eff(a), eff(b)); l != 30 {
		return l
	}
	return 0
}

// addExpected adds a budget's pods, merging them with those of the same budget.
func addExpected(bs []plan.ExpectedBudget, b plan.ExpectedBudget) []plan.ExpectedBudget {
	for i := range bs {
		if bs[i].Budget == b.Budget {
			bs[i].Pods += b.Pods
			bs[i].GraceSeconds = longerGrace(bs[i].GraceSeconds, b.GraceSeconds)
			bs[i].Stateful = bs[i].Stateful || b.Stateful
			return bs
		}
	}
	return append(bs, b)
}

// blockedBy records that a budget allowing no disruption holds the drain of node (where it covers
// w): the plan's one PDB_BLOCKS_DRAIN finding of that budget gets the node in Related and in its
// message, so a budget spread over many nodes is one finding, as it is one cause.
func (b *Builder) blockedBy(bud mesh.PodDisruptionBudget, node string, w mesh.ObjectRef) {
	f := b.budgetFinding(bud)
	nodeRef := mesh.ObjectRef{Kind: "Node", Name: node}
	if slices.Contains(f.Related, nodeRef) {
		return
	}
	f.Related = append(f.Related, nodeRef)
	sort.Slice(f.Related, func(i, j int) bool { return f.Related[i].Name < f.Related[j].Name })
	covers := strings.Split(f.Details["covers"], ",")
	if !slices.Contains(covers, w.String()) {
		covers = append(covers, w.String())
	}
	covers = slices.DeleteFunc(covers, func(s string) bool { return s == "" })
	sort.Strings(covers)
	var nodes []string
	for _, r := range f.Related {
		nodes = append(nodes, r.Name)
	}
	f.Details = map[string]string{"nodes": fmt.Sprint(len(nodes)), "covers": strings.Join(covers, ",")}
	which := "node " + nodes[0]
	if len(nodes) > 1 {
		which = fmt.Sprintf("%d nodes (%s)", len(nodes), plan.ListSome(nodes, 8))
	}
	f.Message = fmt.Sprintf("%s allows 0 disruptions (%d healthy, %d desired); draining %s will wait on %s",
		bud.Ref(), bud.CurrentHealthy, bud.DesiredHealthy, which, strings.Join(covers, ", "))
	if why := neverAllows(bud); why != "" {
		f.Details["never"] = "true"
		f.Message += "; with " + why + " it never allows one, however many pods run, so the drain can only time out"
		f.Remedy = "relax the budget before the drain (scaling the workload up does not help), or waive and let the drain time out and report"
		return
	}
	if bud.ShortBlocksUnready() {
		f.Details["short"] = fmt.Sprint(max(0, bud.DesiredHealthy-bud.CurrentHealthy))
		f.Message += fmt.Sprintf("; with %d healthy of %d desired and unhealthyPodEvictionPolicy IfHealthyBudget (the default when unset), not even its unready pods can be evicted until enough of them turn ready",
			bud.CurrentHealthy, bud.DesiredHealthy)
		f.Remedy = "make the budget's pods ready before the drain, or set spec.unhealthyPodEvictionPolicy: AlwaysAllow on it so that its unready pods can be evicted (its ready ones still wait for the budget); or waive and let the drain time out and report"
	}
}

// neverAllows says why a budget can never allow an eviction, "" when it can: maxUnavailable 0
// (or 0%), or minAvailable 100% or at least the pods it expects (k8s.io/kubernetes@v1.37.2
// pkg/controller/disruption: disruptionsAllowed = currentHealthy - desiredHealthy, and desiredHealthy
// is expectedCount for such a minAvailable).
func neverAllows(bud mesh.PodDisruptionBudget) string {
	switch {
	case bud.MaxUnavailable == "0" || bud.MaxUnavailable == "0%":
		return "maxUnavailable " + bud.MaxUnavailable
	case bud.MinAvailable == "100%":
		return "minAvailable 100%"
	}
	if n, err := strconv.Atoi(bud.MinAvailable); err == nil && bud.ExpectedPods > 0 && int32(n) >= bud.ExpectedPods {
		return fmt.Sprintf("minAvailable %d of %d pods", n, bud.ExpectedPods)
	}
	return ""
}

// budgetFinding returns the plan's PDB_BLOCKS_DRAIN finding of the budget, adding it first.
func (b *Builder) budgetFinding(bud mesh.PodDisruptionBudget) *plan.Finding {
	for i := range b.p.Findings {
		if f := &b.p.Findings[i]; f.Code == plan.CodePDBBlocksDrain && f.Object == bud.Ref() {
			return f
		}
	}
	b.Finding(plan.Finding{Code: plan.CodePDBBlocksDrain, Severity: plan.Waivable, Object: bud.Ref(),
		Remedy: "scale the workload up or relax the budget before the drain, or waive and let the drain time out and report"})
	return &b.p.Findings[len(b.p.Findings)-1]
}

// LocalStorageLoss names, sorted, the pods whose emptyDir data draining the nodes loses, as "Kind
// namespace/name on node": every pod but DaemonSet ones (a drain leaves them), and but those of Jobs
// when keepJobs (the drain waits for them instead of evicting them).
func LocalStorageLoss(ix *Index, nodes []mesh.Node, keepJobs bool) []string {
	var out []string
	for _, n := range nodes {
		for _, w := range ix.On(n.Name) {
			if !w.LocalStorage || w.Kind == "DaemonSet" || (keepJobs && (w.Kind == "Job" || w.Kind == "CronJob")) {
				continue
			}
			out = append(out, w.Ref().String()+" on "+n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// LocalStorageApproval is the approval step, put before the first drain that loses emptyDir data,
// that names every pod of the plan whose data is lost (LocalStorageLoss of all its drains).
func LocalStorageApproval(id string, lost []string) plan.Step {
	return plan.Step{ID: id, Risk: plan.RiskNone,
		Description: fmt.Sprintf("approve losing the emptyDir data of the %d pod(s) the plan's drains evict", len(lost)),
		Reason:      "a drain deletes emptyDir volumes with their pods (kubectl drain --delete-emptydir-data); the data is not moved",
		Approval:    &plan.Approval{Message: "these pods lose their emptyDir data when their node is drained: " + strings.Join(lost, ", ")}}
}

// GraceBeyondTimeout raises DRAIN_TIMEOUT_BELOW_GRACE_PERIOD for each workload the drains of nodes
// evict whose pods may take longer to terminate than the drain timeout (mesh.Workload's
// TerminationSeconds: the grace period, 30 when unset, and 2s more after a preStop hook): an
// eviction waits up to that long for the pod to go, so such a drain times out with the pod
// terminating.
// option names the caller's option that sets the timeout, for the remedy; keepJobs leaves out the
// pods of Jobs, which drains that wait for Jobs do not evict.
func (b *Builder) GraceBeyondTimeout(ix *Index, nodes []DrainNode, timeout int64, option string, keepJobs bool) {
	type hit struct {
		w     *mesh.Workload
		grace int64
		nodes int
	}
	var hits []*hit
	seen := map[*mesh.Workload]*hit{}
	for _, d := range nodes {
		for _, w := range ix.On(d.Node.Name) {
			if w.Kind == "DaemonSet" || keepJobs && (w.Kind == "Job" || w.Kind == "CronJob") {
				continue
			}
			grace := w.TerminationSeconds()
			if grace <= timeout {
				continue
			}
			h := seen[w]
			if h == nil {
				h = &hit{w: w, grace: grace}
				seen[w] = h
				hits = append(hits, h)
			}
			h.nodes++
		}
	}
	for _, h := range hits {
		needed := h.grace + 60
		opt := plan.RemedyOption{Option: option, Value: (time.Duration(needed) * time.Second).String()}
		why := "terminationGracePeriodSeconds"
		if h.w.PreStopHook {
			why = "terminationGracePeriodSeconds, and the 2s the kubelet gives a container after its preStop hook"
			if s := h.w.PreStopSleepSeconds; s > 0 {
				why += fmt.Sprintf(", which sleeps %ds of it", s)
			}
		}
		b.Finding(plan.Finding{Code: plan.CodeDrainTimeoutBelowGracePeriod, Severity: plan.Waivable, Object: h.w.Ref(),
			Message: fmt.Sprintf("the pods of %s may take %ds to terminate (%s), longer than the plan's drain timeout of %ds: each of the %d drain(s) that evicts one times out with the pod still terminating",
				h.w.Ref(), h.grace, why, timeout, h.nodes),
			Remedy:        fmt.Sprintf("give the drains at least the grace period and a minute (%s), or shorten the workload's grace period", opt.Text()),
			RemedyOptions: []plan.RemedyOption{opt},
			Details:       map[string]string{"grace": fmt.Sprint(h.grace), "timeout": fmt.Sprint(timeout), "needed": fmt.Sprint(needed), "nodes": fmt.Sprint(h.nodes)}})
	}
}

// JobsBeyondTimeout raises JOB_MAY_OUTLIVE_DRAIN_TIMEOUT for each Job or CronJob with pods on the
// nodes of drains that wait for Jobs (Drain.KeepJobs) whose pods may run longer than the drain
// timeout: waivable when its activeDeadlineSeconds is longer than the timeout (with the timeout
// that would do), info when nothing bounds it. A Job's pods are not evicted by such a drain, so the
// drain ends when they do or times out. option names the caller's option setting the timeout,
// jobsOption the one that evicts Jobs instead.
func (b *Builder) JobsBeyondTimeout(ix *Index, nodes []DrainNode, timeout int64, option, jobsOption string) {
	type hit struct {
		w     *mesh.Workload
		nodes int
	}
	var hits []*hit
	seen := map[*mesh.Workload]*hit{}
	for _, d := range nodes {
		for _, w := range ix.On(d.Node.Name) {
			if w.Kind != "Job" && w.Kind != "CronJob" || w.ActiveDeadlineSeconds > 0 && w.ActiveDeadlineSeconds+w.TerminationSeconds() <= timeout {
				continue
			}
			h := seen[w]
			if h == nil {
				h = &hit{w: w}
				seen[w] = h
				hits = append(hits, h)
			}
			h.nodes++
		}
	}
	evict := plan.RemedyOption{Option: jobsOption, Value: "evict"}
	evicted := "an evicted Job pod starts over only if its Job's backoffLimit allows"
	for _, h := range hits {
		f := plan.Finding{Code: plan.CodeJobMayOutliveDrainTimeout, Object: h.w.Ref(),
			Details: map[string]string{"timeout": fmt.Sprint(timeout), "nodes": fmt.Sprint(h.nodes)}}
		if d := h.w.ActiveDeadlineSeconds; d > 0 {
			needed := d + h.w.TerminationSeconds() + 60
			longer := plan.RemedyOption{Option: option, Value: (time.Duration(needed) * time.Second).String()}
			f.Severity = plan.Waivable
			f.Details["deadline"], f.Details["needed"] = fmt.Sprint(d), fmt.Sprint(needed)
			f.Message = fmt.Sprintf("the pods of %s may run up to %ds (activeDeadlineSeconds) and then take %ds to terminate, longer than the plan's drain timeout of %ds: each of the %d drain(s) that waits for them may time out with the Job still running, which stops the run there",
				h.w.Ref(), d, h.w.TerminationSeconds(), timeout, h.nodes)
			f.Remedy = fmt.Sprintf("give the drains the Job's deadline, its termination and a minute (%s), or evict Jobs instead of waiting (%s; %s), or run the plan when the Job is not running", longer.Text(), evict.Text(), evicted)
			f.RemedyOptions = []plan.RemedyOption{longer, evict}
		} else {
			f.Severity = plan.Info
			f.Message = fmt.Sprintf("no activeDeadlineSeconds bounds the pods of %s: each of the %d drain(s) that waits for them ends when they finish, or fails after its timeout of %ds and stops the run there (a later run resumes it from the journal)",
				h.w.Ref(), h.nodes, timeout)
			f.Remedy = fmt.Sprintf("if the Job may run longer than the timeout, run the plan when it is not running, or evict Jobs instead of waiting (%s; %s)", evict.Text(), evicted)
			f.RemedyOptions = []plan.RemedyOption{evict}
		}
		b.Finding(f)
	}
}

// DrainStep is the step that drains d.Node through the Eviction API, bounded by timeout seconds, with
// a rollback that uncordons it. A node that ran no ambient pod when the plan was made gets an
// ambient-only drain: pods evicted from earlier nodes may have been rescheduled onto it since.
func DrainStep(id string, d DrainNode, timeout int64, reason string) plan.Step {
	node := d.Node.Name
	nodeRef := mesh.ObjectRef{Kind: "Node", Name: node}
	st := plan.Step{ID: id, Description: fmt.Sprintf("drain %s through the Eviction API", node),
		Reason: reason,
		Risk:   plan.RiskHigh,
		Drain: &plan.NodeDrain{Node: node, TimeoutSeconds: timeout, IgnoreDaemonSets: true, DeleteEmptyDirData: true,
			MayHold: d.MayHold, Expect: d.Expect},
		Postconditions: []plan.Check{plan.NewCheck(nodeRef, plan.NodeDrainedArgs{}, fmt.Sprintf("only DaemonSet pods are left on %s", node))},
		Rollback: &plan.Step{ID: id + "/undo", Description: "uncordon " + node + " (evicted pods are rescheduled by their controllers)", Risk: plan.RiskLow,
			Uncordon: &plan.NodeRef{Node: node}},
	}
	if !d.Ambient {
		st.Description = fmt.Sprintf("evict the ambient pods rescheduled onto %s since planning, if any", node)
		st.Reason = "no ambient pod ran here when the plan was made, but the drains of earlier nodes may have moved some here"
		st.Risk = plan.RiskLow
		st.Drain.AmbientOnly = true
		st.Postconditions = []plan.Check{plan.NewCheck(nodeRef, plan.NodeDrainedArgs{AmbientOnly: true}, fmt.Sprintf("no ambient pod is left on %s", node))}
	}
	if d.Blocked {
		st.Notes = append(st.Notes, "a PodDisruptionBudget allows no disruption here: the drain waits until it does or times out, and names the budget")
	}
	return st
}

// CordonStep is the step that cordons a node, with a rollback that uncordons it.
func CordonStep(id string, n mesh.Node) plan.Step {
	return plan.Step{ID: id, Description: "cordon " + n.Name, Risk: plan.RiskLow,
		Cordon:   &plan.NodeRef{Node: n.Name, Pool: n.Pool},
		Rollback: &plan.Step{ID: id + "/undo", Description: "uncordon " + n.Name, Risk: plan.RiskLow, Uncordon: &plan.NodeRef{Node: n.Name}}}
}

// UncordonStep is the step that makes a node schedulable again.
func UncordonStep(id string, node string) plan.Step {
	return plan.Step{ID: id, Description: "uncordon " + node, Risk: plan.RiskLow,
		Uncordon: &plan.NodeRef{Node: node},
		Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{Kind: "Node", Name: node}, plan.NodeSchedulableArgs{},
			node+" is schedulable")}}
}
