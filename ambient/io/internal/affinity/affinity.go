// Package affinity converts Kubernetes node affinity to the snapshot's data, for the observer and
// the executor alike.
package affinity

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Required returns a pod's required node affinity terms, nil when it has none (which places it on
// every node).
func Required(a *corev1.Affinity) []mesh.NodeSelectorTerm {
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	return Terms(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
}

// Terms returns a node selector's terms (ORed) as the snapshot's data; nil for a nil selector.
func Terms(sel *corev1.NodeSelector) []mesh.NodeSelectorTerm {
	if sel == nil {
		return nil
	}
	out := make([]mesh.NodeSelectorTerm, 0, len(sel.NodeSelectorTerms))
	for _, term := range sel.NodeSelectorTerms {
		t := mesh.NodeSelectorTerm{MatchFields: len(term.MatchFields)}
		for _, e := range term.MatchExpressions {
			t.MatchExpressions = append(t.MatchExpressions, mesh.NodeRequirement{Key: e.Key, Operator: string(e.Operator), Values: append([]string(nil), e.Values...)})
		}
		out = append(out, t)
	}
	return out
}

// SchedulesOn reports whether a DaemonSet with the pod spec places a pod on the node: its node
// selector and required node affinity match the node's labels (mesh.Places; the Istio node agents
// tolerate every taint).
func SchedulesOn(spec *corev1.PodSpec, n *corev1.Node) bool {
	return mesh.Places(spec.NodeSelector, Required(spec.Affinity), n.Labels)
}
