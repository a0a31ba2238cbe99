package ztunnel

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

func nodeObject(name string) mesh.ObjectRef { return mesh.ObjectRef{Kind: "Node", Name: name} }

func (x *bg) labelStep(id, node string, set map[string]string, remove []string, desc string) plan.Step {
	st := plan.Step{ID: id, Description: desc, Risk: plan.RiskLow,
		PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: nodeObject(node), Set: set, Remove: remove}}
	undo := &plan.PatchLabels{APIVersion: "v1", Object: nodeObject(node)}
	for k := range set {
		undo.Remove = append(undo.Remove, k)
	}
	sort.Strings(undo.Remove)
	if len(undo.Remove) > 0 {
		st.Rollback = &plan.Step{ID: id + "/undo", Description: "remove label " + strings.Join(undo.Remove, ", ") + " from " + node, Risk: plan.RiskLow, PatchLabels: undo}
	}
	return st
}

// labelBlue labels every node blue runs on with the blue colour, in one step. Blue's affinity
// excludes green rather than requiring blue, so a node that joins unlabelled keeps a ztunnel.
func (x *bg) labelBlue() {
	var objs []mesh.ObjectRef
	for _, n := range append(append([]mesh.Node(nil), x.blueNodes...), x.relabelNodes()...) {
		if n.Labels[x.label] != x.blueVal {
			objs = append(objs, nodeObject(n.Name))
		}
	}
	if len(objs) == 0 {
		return
	}
	id := x.base + "label-blue"
	set := map[string]string{x.label: x.blueVal}
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("label the %d node(s) blue runs on %s=%s", len(objs), x.label, x.blueVal), Risk: plan.RiskLow,
		Reason:      "the colours are visible on every node (kubectl get nodes -L " + x.label + ") before anything moves",
		PatchLabels: &plan.PatchLabels{APIVersion: "v1", Objects: objs, Set: set},
		Rollback: &plan.Step{ID: id + "/undo", Description: "remove label " + x.label + " from those nodes", Risk: plan.RiskLow,
			PatchLabels: &plan.PatchLabels{APIVersion: "v1", Objects: objs, Remove: []string{x.label}}}})
}

func (x *bg) relabelNodes() []mesh.Node {
	var out []mesh.Node
	for _, name := range x.g.Capacity.Relabel {
		n, _ := x.s.Node(name)
		out = append(out, n)
	}
	return out
}

// affinity returns the chart's affinity value with a required node affinity expression added to
// every node selector term of the release's own (terms are ORed, expressions within one ANDed), or a
// new one.
func affinity(current any, expr map[string]any) map[string]any {
	out := map[string]any{}
	if m, ok := current.(map[string]any); ok {
		steps.Merge(out, m)
	}
	na, _ := out["nodeAffinity"].(map[string]any)
	if na == nil {
		na = map[string]any{}
		out["nodeAffinity"] = na
	}
	req, _ := na["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)
	if req == nil {
		req = map[string]any{}
		na["requiredDuringSchedulingIgnoredDuringExecution"] = req
	}
	terms, _ := req["nodeSelectorTerms"].([]any)
	if len(terms) == 0 {
		terms = []any{map[string]any{}}
	}
	var withExpr []any
	for _, t := range terms {
		tm := map[string]any{}
		if m, ok := t.(map[string]any); ok {
			steps.Merge(tm, m)
		}
		exprs, _ := tm["matchExpressions"].([]any)
		tm["matchExpressions"] = append(append([]any(nil), exprs...), expr)
		withExpr = append(withExpr, tm)
	}
	req["nodeSelectorTerms"] = withExpr
	return out
}

// pinBlue keeps blue on the non-green nodes: a required node affinity that excludes green (and
// nodes being switched), under updateStrategy OnDelete so the template change restarts no pod. The
// DaemonSet controller removes a pod only from a node that stops matching (pkg/controller/daemon),
// whatever the strategy; no blue node does here.
func (x *bg) pinBlue() {
	h := x.blueRel
	v := x.chartVersion(h, x.blue.Version)
	set := map[string]any{
		"affinity": affinity(h.Values["affinity"], map[string]any{"key": x.label, "operator": "NotIn", "values": []any{x.greenVal, switchingValue}}),
	}
	if !v.Less(updateStrategyValue) {
		set["updateStrategy"] = map[string]any{"type": "OnDelete", "rollingUpdate": nil}
	}
	if !v.Less(resourceNameSince) {
		set["resourceName"] = x.blue.Name // pinned: a default that changed across versions must not rename it (see ChartNames)
	}
	st := x.b.Upgrade(x.base+"pin-blue", fmt.Sprintf("pin ztunnel %s to the nodes that are not %s=%s (node affinity, updateStrategy OnDelete)", x.blue.Name, x.label, x.greenVal),
		"blue must stay off green nodes before green exists: two ztunnels on one node split its pods' traffic (istio-cni hands new pods to the newest)",
		h, v, set, plan.RiskMedium,
		plan.NewCheck(x.blue.Ref(), plan.NodeAgentReadyArgs{All: true, Version: x.blue.Version.String()},
			fmt.Sprintf("every blue node still runs a ready ztunnel %s (none restarted)", x.blue.Version)))
	if v.Less(affinityValue) {
		st.Blocked = fmt.Sprintf("ztunnel chart %s does not read the affinity value (from %s); upgrade ztunnel in place first", v, affinityValue.MinorString())
	}
	x.b.Add(st)
}
