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

// localStorageLoss names the pods whose emptyDir data the drains of the nodes lose (Jobs' only when
// they are evicted).
func (x *bg) localStorageLoss(ix *steps.Index, nodes []mesh.Node) []string {
	return steps.LocalStorageLoss(ix, nodes, x.g.Jobs != JobsEvict)
}

// lossOfPlan is what every drain of the plan loses: the relabelled nodes' and the blue nodes'.
func (x *bg) lossOfPlan(ix *steps.Index) []string {
	return x.localStorageLoss(ix, append(x.relabelNodes(), x.blueNodes...))
}

// localStorageReport names, in one finding, every pod of the plan whose emptyDir data is lost.
func (x *bg) localStorageReport() {
	lost := x.lossOfPlan(steps.NewIndex(x.s))
	if len(lost) == 0 {
		return
	}
	remedy := "the plan asks for approval, naming every one of them, before the first drain that loses data (BlueGreen.LocalStorage: evict drains without asking)"
	if x.g.LocalStorage == LocalStorageEvict {
		remedy = "the plan drains them without asking (BlueGreen.LocalStorage: evict); move the data elsewhere first if it matters"
	}
	x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenLocalStorageLost, Severity: plan.Info, Object: x.blue.Ref(),
		Details: map[string]string{"pods": strconv.Itoa(len(lost))},
		Message: fmt.Sprintf("draining the blue nodes loses the emptyDir data of %d pod(s): %s", len(lost), strings.Join(lost, ", ")),
		Remedy:  remedy, RemedyOptions: []plan.RemedyOption{{Option: "BlueGreen.LocalStorage", Value: string(LocalStorageEvict)}}})
}

// askLocalStorage returns, once per plan and only before the first drain of nodes that loses
// emptyDir data, the approval that names every pod of the plan whose data is lost.
func (x *bg) askLocalStorage(ix *steps.Index, nodes []mesh.Node, id string) (plan.Step, bool) {
	if x.asked || x.g.LocalStorage == LocalStorageEvict || len(x.localStorageLoss(ix, nodes)) == 0 {
		return plan.Step{}, false
	}
	x.asked = true
	return steps.LocalStorageApproval(id, x.lossOfPlan(ix)), true
}

// daemonSetsOnBlue finds the ambient DaemonSets with pods on blue nodes. Drains leave DaemonSet pods
// where they are (kubectl drain --ignore-daemonsets, the Eviction API's drains alike), so those pods
// keep running on the blue nodes after the move; their traffic is redirected into the node's ztunnel
// (istio-cni set that up in the pod's network namespace when it started), and once blue is
// uninstalled nothing listens there. One finding per DaemonSet says so; x.stuck keeps the nodes, which
// must be gone before blue is removed (finish).
func (x *bg) daemonSetsOnBlue() {
	blue := map[string]bool{}
	for _, n := range x.blueNodes {
		blue[n.Name] = true
	}
	stuck := map[string]bool{}
	for _, w := range x.s.Workloads {
		if w.Kind != "DaemonSet" || !x.s.AmbientWorkload(w) {
			continue
		}
		var on []mesh.ObjectRef
		var names []string
		for _, n := range w.Nodes {
			if blue[n] {
				on = append(on, nodeObject(n))
				names = append(names, n)
				stuck[n] = true
			}
		}
		if len(on) == 0 {
			continue
		}
		x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenDaemonSetOnBlue, Severity: plan.Info, Object: w.Ref(), Related: on,
			Details: map[string]string{"nodes": strconv.Itoa(len(on))},
			Message: fmt.Sprintf("%s runs ambient pods on %d blue node(s) (%s): drains leave DaemonSet pods, so they stay there after the move, and once blue is uninstalled their traffic goes to a ztunnel that no longer runs; the plan uninstalls blue only once these nodes are gone (it asks you to remove them after the last wave)",
				w.Ref(), len(on), plan.ListSome(names, 8)),
			Remedy: fmt.Sprintf("delete the drained blue nodes when the plan asks (or let Karpenter consolidate them), or keep the DaemonSet off blue nodes beforehand (node affinity %s=%s) or out of the mesh (istio.io/dataplane-mode=none on its pods)", x.label, x.greenVal)})
	}
	for _, n := range x.blueNodes {
		if stuck[n.Name] {
			x.stuck = append(x.stuck, n.Name)
		}
	}
	sort.Strings(x.stuck)
}

// nodesGone asks a person to remove the drained blue nodes that still run ambient DaemonSet pods,
// and waits until no ambient pod (DaemonSet pods included) runs on a node that is not green (the
// check the uninstall is gated on too), before blue is touched.
func (x *bg) nodesGone(empty plan.Check) {
	x.releaseHeld(x.stuck) // Karpenter may consolidate them now: they are drained
	cmd := "kubectl delete node " + strings.Join(x.stuck, " ")
	if len(x.stuck) > 10 {
		cmd = fmt.Sprintf("kubectl delete node %s ... (%d nodes, listed in the BLUEGREEN_DAEMONSET_ON_BLUE findings)", strings.Join(x.stuck[:10], " "), len(x.stuck))
	}
	x.b.Add(plan.Step{ID: x.base + "remove-blue-nodes", Risk: plan.RiskNone,
		Description: fmt.Sprintf("remove the %d drained blue node(s) that still run ambient DaemonSet pods", len(x.stuck)),
		Reason:      "their DaemonSet pods stay through a drain, and their traffic breaks once blue is uninstalled: the nodes must go first",
		Approval:    &plan.Approval{Message: fmt.Sprintf("delete these drained blue nodes with their node group (or let Karpenter consolidate them): %s; then approve. The next step waits until they are gone", cmd)}})
	x.b.Add(plan.Step{ID: x.base + "blue-empty", Description: "wait until no node blue runs on has an ambient pod any more, DaemonSet pods included", Risk: plan.RiskNone,
		Notes:   []string{"a node that joined during the move without the green label runs blue: cordon and drain it (kubectl drain), then delete it if ambient DaemonSet pods stay"},
		WaitFor: &plan.WaitFor{TimeoutSeconds: 1800, Check: empty}})
}
