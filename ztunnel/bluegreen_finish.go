package ztunnel

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// removeBlue removes blue once no node it runs on has an ambient pod: when ambient DaemonSets stay on
// blue nodes, only once those nodes are gone. Blue is backed up and the backup read back first.
func (x *bg) removeBlue() {
	// Blue places pods on every node not labelled green: a node that joined uncoloured during the move
	// counts as blue too. DaemonSet pods count: a drain leaves them, and they break once blue goes.
	sel := x.label + "!=" + x.greenVal
	empty := plan.NewCheck(mesh.ObjectRef{}, plan.NoAmbientPodsArgs{Selector: sel}, "no ambient pod, DaemonSet pods included, runs on a node that is not labelled "+x.label+"="+x.greenVal)
	if len(x.stuck) > 0 {
		x.nodesGone(empty)
	} else {
		x.b.Add(plan.Step{ID: x.base + "blue-empty", Description: "verify that no node blue runs on has an ambient pod any more", Risk: plan.RiskNone,
			Notes:  []string{"a node that joined during the move without the green label runs blue: cordon and drain it (kubectl drain), then resume"},
			Verify: &plan.Verification{Checks: []plan.Check{empty}}})
	}
	h := x.blueRel
	x.b.RequireDeployed(h)
	id := x.base + "blue/"
	x.b.Add(plan.Step{ID: id + "backup", Description: fmt.Sprintf("back up the blue ztunnel %s (Helm release, DaemonSet) and read the backup back", x.blue.Name), Risk: plan.RiskNone,
		Backup: &plan.Backup{Objects: []plan.BackupObject{{HelmRelease: h.Name, Object: steps.HelmRef(h)},
			{APIVersion: "apps/v1", Object: x.blue.Ref()}}},
		Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.BackupReadableArgs{}, "every backed-up object reads back equal")}})
	x.b.Add(plan.Step{ID: id + "uninstall", Description: fmt.Sprintf("uninstall the blue ztunnel %s/%s", x.blue.Namespace, x.blue.Name),
		Reason: "no pod uses it: every ambient pod runs on a green node", Risk: plan.RiskMedium,
		Preconditions: []plan.Check{empty},
		HelmUninstall: &plan.HelmUninstall{Release: h.Name, Namespace: h.Namespace, Chart: h.Chart, BackupStep: id + "backup", FromVersion: h.ChartVersion,
			Reinstall: x.b.Charts().Reinstall(h.Chart, h.ChartVersion)},
		// istiod stops trusting blue next: none of its pods may still run, terminating ones included.
		Postconditions: []plan.Check{plan.NewCheck(x.blue.Ref(), plan.NodeAgentAbsentArgs{}, "no pod of the blue ztunnel is left on any node")}})
	gone := h
	gone.Status = steps.StatusUninstalled
	x.b.Track(gone)
}

// finish, once blue is gone, makes istiod trust green alone, removes the probe, drops the colour
// label and the Karpenter hold from the blue nodes, and says which nodes can go.
func (x *bg) finish() {
	x.trust(false)
	x.removeProbe()
	var objs []mesh.ObjectRef
	pools := map[string][]string{}
	for _, n := range x.blueNodes {
		objs = append(objs, nodeObject(n.Name))
		pool := steps.OrDefault(n.Pool, "(no pool)")
		pools[pool] = append(pools[pool], n.Name)
	}
	if len(objs) > 0 {
		x.b.Add(plan.Step{ID: x.base + "unlabel-blue", Description: fmt.Sprintf("remove label %s from the %d blue node(s)", x.label, len(objs)), Risk: plan.RiskLow,
			PatchLabels: &plan.PatchLabels{APIVersion: "v1", Objects: objs, Remove: []string{x.label}}})
	}
	x.releaseHeld(nil)
	if np := x.g.ScaleDownNodePool; np != "" {
		x.scaleDown(np)
	}
	x.nodesToRemove(pools)
}

// releaseHeld lets Karpenter disrupt again the held blue nodes among names (nil: every held node not
// released yet), in one step; the first release is for the nodes that must go before blue does.
func (x *bg) releaseHeld(names []string) {
	var held []mesh.ObjectRef
	for _, np := range x.g.Capacity.NodePools {
		for _, n := range x.heldNodes(np) {
			if !x.released[n.Name] && (names == nil || steps.Contains(names, n.Name)) {
				held = append(held, n)
			}
		}
	}
	if len(held) == 0 {
		return
	}
	if x.released == nil {
		x.released = map[string]bool{}
	}
	for _, n := range held {
		x.released[n.Name] = true
	}
	id, desc := x.base+"release", fmt.Sprintf("let Karpenter consolidate the %d empty blue node(s) it launched", len(held))
	if names != nil {
		id, desc = x.base+"release-daemonset-nodes", fmt.Sprintf("let Karpenter consolidate the %d drained blue node(s) that still run ambient DaemonSet pods", len(held))
	}
	x.b.Add(plan.Step{ID: id, Description: desc, Risk: plan.RiskLow,
		Annotate: &plan.Annotate{APIVersion: "v1", Objects: held, Remove: []string{annotationDoNotDisrupt}}})
}

// nodesToRemove says which nodes can go once the plan is done.
func (x *bg) nodesToRemove(pools map[string][]string) {
	var names []string
	for pool, ns := range pools {
		names = append(names, fmt.Sprintf("pool %s: %d node(s) (%s)", pool, len(ns), plan.ListSome(ns, 10)))
	}
	sort.Strings(names)
	x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenNodesToRemove, Severity: plan.Info, Object: x.blue.Ref(),
		Message: "once the plan is done, the blue nodes are empty and cordoned and can go: " + strings.Join(names, "; "),
		Remedy:  "delete them with their node group (or let Karpenter consolidate them); the plan deletes no node"})
}

// scaleDown stops a NodePool from launching nodes: spec.limits.cpu 0. Undo puts the limit back as it
// was (or drops it: server-side apply releases a field the applier no longer sets).
func (x *bg) scaleDown(name string) {
	p, _ := x.s.NodePool(name)
	obj := func(limits map[string]any) map[string]any {
		return map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"limits": limits}}
	}
	undo := map[string]any{}
	if cpu, ok := p.Limits["cpu"]; ok {
		undo["cpu"] = cpu
	}
	id := x.base + "scale-down/" + name
	x.b.Add(plan.Step{ID: id, Description: "stop NodePool " + name + " from launching nodes (spec.limits.cpu 0)", Risk: plan.RiskMedium,
		Reason:      "asked for: its nodes ran the blue ztunnel and are empty now",
		ApplyObject: &plan.ApplyObject{Object: obj(map[string]any{"cpu": "0"})},
		Rollback: &plan.Step{ID: id + "/undo", Description: "give NodePool " + name + " its cpu limit back", Risk: plan.RiskMedium,
			ApplyObject: &plan.ApplyObject{Object: obj(undo)}}})
}
