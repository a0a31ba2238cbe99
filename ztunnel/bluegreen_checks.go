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

// findings adds what a reviewer must know before anything moves.
func (x *bg) findings() {
	b, s := x.b, x.s
	comp := "ztunnel/" + x.blue.Namespace + "/" + x.blue.Name
	if r, ok := s.Revision(x.opts.Revision); ok && !r.Version.IsZero() {
		switch d := r.Version.MinorsAhead(x.opts.Target); {
		case d < 0:
			b.Finding(plan.Finding{Code: plan.CodeZtunnelAheadOfControlPlane, Severity: plan.Blocking, Object: x.green, Component: comp,
				Message: fmt.Sprintf("green ztunnel %s would be newer than istiod %q (%s) it connects to; ztunnel 1.x needs control plane 1.x or 1.x+1", x.opts.Target, r.Name, r.Version),
				Remedy:  "upgrade the control plane first (ambient.PlanUpgrade with the blue-green ztunnel strategy does both)"})
		case d > 1:
			b.Finding(plan.Finding{Code: plan.CodeZtunnelTooFarBehindControlPlane, Severity: plan.Blocking, Object: x.green, Component: comp,
				Message: fmt.Sprintf("green ztunnel %s would be %d minors behind istiod %q (%s)", x.opts.Target, d, r.Name, r.Version),
				Remedy:  "pick a green version within one minor of the control plane"})
		}
	}
	blueChart := x.chartVersion(x.blueRel, x.blue.Version)
	if blueChart.Less(updateStrategyValue) {
		b.Finding(plan.Finding{Code: plan.CodeBlueGreenPinRestartsBlue, Severity: plan.Waivable, Object: x.blue.Ref(), Component: comp,
			Message: fmt.Sprintf("ztunnel %s runs chart %s, which has no updateStrategy value (from %s): pinning it to its nodes changes its template and restarts it once on every node, resetting long-lived connections",
				x.blue.Name, blueChart, updateStrategyValue.MinorString()),
			Remedy: "waive to accept one restart in a quiet window, or upgrade ztunnel to 1.26+ in place first"})
	}
	x.discovery()
	x.connectionReport()
	x.localStorageReport()
	x.daemonSetsOnBlue()
	for _, np := range x.g.Capacity.NodePools {
		if len(x.heldNodes(np)) > 0 {
			// Karpenter hashes spec.template (labels included) into each NodeClaim and replaces the ones
			// whose hash differs (kubernetes-sigs/karpenter@v1: pkg/apis/v1/nodepool.go, NodePool.Hash).
			b.Finding(plan.Finding{Code: plan.CodeBlueGreenNodePoolDriftHeld, Severity: plan.Info, Object: mesh.ObjectRef{Kind: "NodePool", Name: np},
				Message: fmt.Sprintf("NodePool %s launched %d of the blue nodes: labelling its template green makes Karpenter see them as drifted and replace them on its own schedule", np, len(x.heldNodes(np))),
				Remedy:  "the plan annotates those nodes karpenter.sh/do-not-disrupt=true while it moves workloads and removes the annotation at the end, so Karpenter consolidates them once they are empty"})
		}
	}
	if len(x.g.Capacity.NodePools) > 0 {
		for _, p := range x.s.NodePools {
			if steps.Contains(x.g.Capacity.NodePools, p.Name) || p.Labels[x.label] == x.greenVal || x.g.ScaleDownNodePool == p.Name {
				continue
			}
			b.Finding(plan.Finding{Code: plan.CodeBlueGreenNodePoolNotGreen, Severity: plan.Waivable, Object: mesh.ObjectRef{Kind: "NodePool", Name: p.Name},
				Message: fmt.Sprintf("NodePool %s stays uncoloured: the nodes it launches run the blue ztunnel, and workloads evicted onto them keep blue from being removed", p.Name),
				Remedy:  "add it to the green NodePools, or waive if no moved workload can land on it (its requirements or taints keep them off)"})
		}
	}
}

// heldNodes are the blue nodes a green NodePool launched, which its new label makes drifted.
func (x *bg) heldNodes(np string) []mesh.ObjectRef {
	var out []mesh.ObjectRef
	for _, n := range x.blueNodes {
		if n.Labels[labelNodePool] == np {
			out = append(out, nodeObject(n.Name))
		}
	}
	return out
}

// discovery checks that istiod would discover green's namespace: with meshConfig.discoverySelectors
// set, istiod only watches matching namespaces and writes istio-ca-root-cert nowhere else (istio/istio
// @1.30.3: pilot/pkg/serviceregistry/kube/controller/namespacecontroller.go filters namespaces and
// ConfigMaps with kubeClient.ObjectFilter(), the discovery-selector filter). The plan creates the
// namespace with labels that match the first selector it can satisfy.
func (x *bg) discovery() {
	for _, h := range x.istiodReleases() {
		mc, _ := h.Values["meshConfig"].(map[string]any)
		sels, _ := mc["discoverySelectors"].([]any)
		if len(sels) == 0 {
			continue
		}
		if _, ok := labelsSatisfying(sels); !ok {
			x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenNamespaceNotDiscovered, Severity: plan.Blocking,
				Object:  mesh.ObjectRef{Kind: "Namespace", Name: x.greenNS},
				Message: fmt.Sprintf("istiod release %s/%s sets meshConfig.discoverySelectors that no labels of a new namespace can satisfy; istiod would not see green's namespace %s (no istio-ca-root-cert there, its pods not authorized)", h.Namespace, h.Name, x.greenNS),
				Remedy:  "add a selector matching a label the plan can set (matchLabels, or In/Exists expressions), or label the namespace yourself and pass it as Namespace"})
		}
	}
}

// namespaceLabels are the labels green's namespace gets so every istiod's discoverySelectors
// select it.
func (x *bg) namespaceLabels() map[string]string {
	out := map[string]string{}
	for _, h := range x.istiodReleases() {
		mc, _ := h.Values["meshConfig"].(map[string]any)
		sels, _ := mc["discoverySelectors"].([]any)
		if l, ok := labelsSatisfying(sels); ok {
			for k, v := range l {
				out[k] = v
			}
		}
	}
	return out
}

// labelsSatisfying returns labels that make a namespace match one of the selectors (ORed, as
// discoverySelectors are): the first whose matchLabels and In/Exists expressions a label set can
// satisfy. With no selectors, no label is needed.
func labelsSatisfying(sels []any) (map[string]string, bool) {
	if len(sels) == 0 {
		return nil, true
	}
next:
	for _, raw := range sels {
		sel, _ := raw.(map[string]any)
		out := map[string]string{}
		if ml, ok := sel["matchLabels"].(map[string]any); ok {
			for k, v := range ml {
				s, _ := v.(string)
				out[k] = s
			}
		}
		exprs, _ := sel["matchExpressions"].([]any)
		for _, e := range exprs {
			em, _ := e.(map[string]any)
			key, _ := em["key"].(string)
			values, _ := em["values"].([]any)
			switch em["operator"] {
			case "In":
				if len(values) == 0 {
					continue next
				}
				v, _ := values[0].(string)
				if cur, set := out[key]; set && cur != v {
					continue next
				}
				out[key] = v
			case "Exists":
				if _, set := out[key]; !set {
					out[key] = "true"
				}
			case "NotIn", "DoesNotExist":
				if _, set := out[key]; set && em["operator"] == "DoesNotExist" {
					continue next
				}
			default:
				continue next
			}
		}
		return out, true
	}
	return nil, false
}

// connectionReport adds one finding for the blue nodes whose pods hold long-lived connections a
// drain ends (StatefulSets and Jobs): how many, the longest grace period and where, an example, and
// which of them goes last. Each node's own list is in the runbook's table of waves (what may hold
// a drain); one finding per node would be a thousand findings on a large mesh.
func (x *bg) connectionReport() {
	ix := steps.NewIndex(x.s)
	order := x.order(ix)
	var nodes []mesh.ObjectRef
	var example, longestOn, lastOn string
	longest := int64(0)
	for i, n := range order {
		var held []string
		nodeLongest := int64(0)
		for _, w := range ix.On(n.Name) {
			if w.Kind != "StatefulSet" && w.Kind != "Job" && w.Kind != "CronJob" {
				continue
			}
			g := w.TerminationSeconds()
			nodeLongest = max(nodeLongest, g)
			held = append(held, fmt.Sprintf("%s (terminates within %ds)", w.Ref(), g))
		}
		if len(held) == 0 {
			continue
		}
		sort.Strings(held)
		nodes = append(nodes, mesh.ObjectRef{Kind: "Node", Name: n.Name})
		if example == "" {
			example = fmt.Sprintf("node %s runs %s", n.Name, strings.Join(held, ", "))
		}
		if nodeLongest > longest {
			longest, longestOn = nodeLongest, n.Name
		}
		if i == len(order)-1 {
			lastOn = n.Name
		}
	}
	if len(nodes) == 0 {
		return
	}
	details := map[string]string{"nodes": strconv.Itoa(len(nodes)), "longestGraceSeconds": strconv.FormatInt(longest, 10), "longestOn": longestOn}
	msg := fmt.Sprintf("%d blue %s run StatefulSets or Jobs whose connections end when the node is drained, after up to %ds of grace (on %s); e.g. %s",
		len(nodes), map[bool]string{true: "node", false: "nodes"}[len(nodes) == 1], longest, longestOn, example)
	if lastOn != "" {
		details["drainedLast"] = lastOn
		msg += fmt.Sprintf("; %s is drained last", lastOn)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenLongLivedConnections, Severity: plan.Info, Object: x.blue.Ref(), Related: nodes, Details: details,
		Message: msg, Remedy: "make sure their clients reconnect; Jobs are waited for (BlueGreen.Jobs: evict evicts them instead)",
		RemedyOptions: []plan.RemedyOption{{Option: "BlueGreen.Jobs", Value: string(JobsEvict)}}})
}
