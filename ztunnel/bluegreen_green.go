package ztunnel

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// greenValues are blue's values with green's identity and placement: the same mesh settings
// (profile, variant, global cluster and network, env, proxy metadata, trust bundle, network policy,
// resource quotas, node selector, update strategy), its own resourceName and revision, and blue's
// required node affinity narrowed to green nodes. Explicit xdsAddress and caAddress are dropped when
// green connects to another revision than blue, so the chart derives them from the revision
// (istio/istio@1.30.3: manifests/charts/ztunnel/templates/daemonset.yaml, XDS_ADDRESS and CA_ADDRESS).
func (x *bg) greenValues() (map[string]any, []string) {
	out := map[string]any{}
	steps.Merge(out, x.blueRel.Values)
	delete(out, "resourceName")
	delete(out, "revision")
	out["resourceName"] = x.greenName
	if x.opts.Revision != "" && x.opts.Revision != "default" {
		out["revision"] = x.opts.Revision
	}
	var notes []string
	blueRev, _ := x.blueRel.Values["revision"].(string)
	if x.opts.Revision != "" && steps.OrDefault(blueRev, "default") != x.opts.Revision {
		for _, k := range []string{"xdsAddress", "caAddress"} {
			if v, ok := out[k]; ok {
				delete(out, k)
				notes = append(notes, fmt.Sprintf("blue's %s %v is not copied: green connects to revision %s, whose address the chart derives", k, v, x.opts.Revision))
			}
		}
	}
	if r, ok := x.s.Revision(x.opts.Revision); ok {
		out["istioNamespace"] = r.Namespace
	}
	out["affinity"] = affinity(x.blueRel.Values["affinity"], map[string]any{"key": x.label, "operator": "In", "values": []any{x.greenVal}})
	return out, notes
}

// installGreen creates green's namespace and installs green there.
func (x *bg) installGreen() {
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": x.greenNS}}
	if l := x.namespaceLabels(); len(l) > 0 {
		labels := map[string]any{}
		for k, v := range l {
			labels[k] = v
		}
		ns["metadata"].(map[string]any)["labels"] = labels
	}
	st := plan.Step{ID: x.base + "namespace", Description: "create namespace " + x.greenNS + " for the green ztunnel",
		Reason: "a second ztunnel needs its own namespace: the chart's DaemonSet always selects app=ztunnel", Risk: plan.RiskLow,
		ApplyObject: &plan.ApplyObject{Object: ns}}
	if _, exists := x.s.Namespace(x.greenNS); !exists {
		st.Rollback = &plan.Step{ID: st.ID + "/undo", Description: "delete the namespace the plan created (green is not installed yet)", Risk: plan.RiskLow,
			DeleteObject: &plan.DeleteObject{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "Namespace", Name: x.greenNS}}}
	}
	x.b.Add(st)
	green, notes := x.greenValues()
	values, moved := x.b.ChartValues(green, "ztunnel", x.greenRel, x.greenNS, x.opts.Target, nil)
	if note := steps.MovedNote(moved, x.opts.Target); note != "" {
		notes = append(notes, note)
	}
	if x.priorityQuota(values) {
		rq := map[string]any{}
		if cur, ok := values["resourceQuotas"].(map[string]any); ok {
			steps.Merge(rq, cur)
		}
		rq["enabled"] = true
		values["resourceQuotas"] = rq
		notes = append(notes, "resourceQuotas.enabled=true: on this platform pods of priority class system-node-critical need a ResourceQuota for it outside kube-system")
	}
	x.b.Track(mesh.HelmRelease{Name: x.greenRel, Namespace: x.greenNS, Chart: "ztunnel", ChartVersion: x.opts.Target.String(),
		AppVersion: x.opts.Target.String(), Revision: 1, Status: "deployed", Values: values})
	id := x.base + "install-green"
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("install the green ztunnel %s (%s) in %s, on nodes labelled %s=%s only", x.greenName, x.opts.Target, x.greenNS, x.label, x.greenVal),
		Reason: "green runs only where no blue does; no green node exists yet, so nothing changes for running pods", Risk: plan.RiskLow,
		HelmInstall: &plan.HelmRelease{Release: x.greenRel, Namespace: x.greenNS, Chart: x.b.Chart("ztunnel", x.opts.Target), Values: values, Moved: moved},
		Postconditions: []plan.Check{steps.ReleaseCheck(mesh.HelmRelease{Name: x.greenRel, Namespace: x.greenNS}, x.opts.Target),
			plan.NewCheck(x.blue.Ref(), plan.NodeAgentReadyArgs{All: true, Version: x.blue.Version.String()}, "every blue node still runs a ready blue ztunnel")},
		Notes: notes,
		Rollback: &plan.Step{ID: id + "/undo", Description: "uninstall the green ztunnel (no pod uses it yet)", Risk: plan.RiskLow,
			HelmUninstall: &plan.HelmUninstall{Release: x.greenRel, Namespace: x.greenNS}}})
}

// capacity brings green nodes and waits for at least one ready green node, in every capacity mode:
// with NodePools the probe pod (startProbe) makes Karpenter launch it.
func (x *bg) capacity() {
	c := x.g.Capacity
	sel := x.label + "=" + x.greenVal
	want := max(1, c.Nodes)
	reason := "workloads move only once green nodes can take them"
	switch {
	case len(c.NodePools) > 0:
		x.hold()
		for _, np := range c.NodePools {
			x.nodePool(np)
		}
		reason = "no blue node is touched before green has run on a node: Karpenter launches the first one for the probe pod"
	case len(c.Relabel) > 0:
		want = max(len(c.Relabel), c.Nodes)
		// Before the first relabelled node is cordoned: their drains are the plan's first.
		if st, ok := x.askLocalStorage(steps.NewIndex(x.s), x.relabelNodes(), x.base+"relabel/approve-local-storage"); ok {
			x.b.Add(st)
		}
		for _, n := range c.Relabel {
			x.relabel(n)
		}
	}
	x.startProbe()
	x.b.Add(plan.Step{ID: x.base + "green-capacity", Description: fmt.Sprintf("wait for %d ready node(s) labelled %s", want, sel),
		Reason: reason, Risk: plan.RiskNone,
		WaitFor: &plan.WaitFor{TimeoutSeconds: 1800, Check: plan.NewCheck(mesh.ObjectRef{}, plan.NodesReadyArgs{Selector: sel, Min: want},
			fmt.Sprintf("at least %d ready node(s) carry %s", want, sel))}})
}

// hold keeps Karpenter from replacing the blue nodes the green NodePools launched: their new template
// label makes them drifted. One step annotates them all.
func (x *bg) hold() {
	var objs []mesh.ObjectRef
	for _, np := range x.g.Capacity.NodePools {
		objs = append(objs, x.heldNodes(np)...)
	}
	if len(objs) == 0 {
		return
	}
	id := x.base + "hold"
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("keep Karpenter from replacing %d blue node(s) as drifted while workloads move", len(objs)), Risk: plan.RiskLow,
		Reason:   "the nodes are drained by the plan, in its order, not by Karpenter at once",
		Annotate: &plan.Annotate{APIVersion: "v1", Objects: objs, Set: map[string]string{annotationDoNotDisrupt: "true"}},
		Rollback: &plan.Step{ID: id + "/undo", Description: "let Karpenter disrupt those nodes again", Risk: plan.RiskLow,
			Annotate: &plan.Annotate{APIVersion: "v1", Objects: objs, Remove: []string{annotationDoNotDisrupt}}}})
}

// nodePool labels a NodePool's template green: Karpenter gives the template's labels to every node
// it launches.
func (x *bg) nodePool(name string) {
	p, _ := x.s.NodePool(name)
	obj := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": labels}}}}
	}
	undo := map[string]any{}
	if old, ok := p.Labels[x.label]; ok {
		undo[x.label] = old
	}
	id := x.base + "nodepool/" + name
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("label the nodes NodePool %s launches from now on %s=%s", name, x.label, x.greenVal),
		Reason: "new capacity is green: the pods the drains evict land on nodes that run green only", Risk: plan.RiskMedium,
		ApplyObject: &plan.ApplyObject{Object: obj(map[string]any{x.label: x.greenVal})},
		Rollback: &plan.Step{ID: id + "/undo", Description: fmt.Sprintf("give NodePool %s's template its %s label back as it was", name, x.label), Risk: plan.RiskMedium,
			ApplyObject: &plan.ApplyObject{Object: obj(undo)}}})
}

// relabel switches one existing node from blue to green without two ztunnels on it at any moment:
// cordon, drain, label it "switching" (blue leaves, green does not come yet), wait until blue's pod
// is gone, label it green, wait for green, uncordon.
func (x *bg) relabel(name string) {
	n, _ := x.s.Node(name)
	id := x.base + "relabel/" + name + "/"
	ix := steps.NewIndex(x.s)
	x.b.Add(steps.CordonStep(id+"cordon", n))
	d := x.b.DrainOrder(x.s, ix, []mesh.Node{n}, x.s.AmbientNodes())[0]
	d.Ambient = true // every pod leaves a node whose ztunnel is switched
	drain := steps.DrainStep(id+"drain", d, x.drainSeconds(), "the node's ztunnel is switched: no pod may use it meanwhile")
	x.keepJobs(&drain, ix, name)
	x.b.Add(drain)
	x.b.Add(x.labelStep(id+"switching", name, map[string]string{x.label: switchingValue}, nil,
		fmt.Sprintf("label %s %s=%s: blue leaves it, green does not come yet", name, x.label, switchingValue)))
	x.b.Add(plan.Step{ID: id + "blue-gone", Description: "wait until blue's ztunnel pod is gone from " + name, Risk: plan.RiskNone,
		WaitFor: &plan.WaitFor{TimeoutSeconds: 300, Check: plan.NewCheck(x.blue.Ref(), plan.NodeAgentAbsentArgs{Node: name}, "no blue ztunnel pod is left on "+name)}})
	x.b.Add(x.labelStep(id+"green", name, map[string]string{x.label: x.greenVal}, nil, fmt.Sprintf("label %s %s=%s", name, x.label, x.greenVal)))
	x.b.Add(plan.Step{ID: id + "green-ready", Description: "wait until green's ztunnel is ready on " + name, Risk: plan.RiskNone,
		WaitFor: &plan.WaitFor{TimeoutSeconds: 300, Check: plan.NewCheck(x.green, plan.NodeAgentReadyArgs{Node: name, Version: x.opts.Target.String()},
			fmt.Sprintf("a ready green ztunnel %s runs on %s", x.opts.Target, name))}})
	x.b.Add(steps.UncordonStep(id+"uncordon", name))
}
