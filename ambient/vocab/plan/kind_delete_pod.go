package plan

import "fmt"

// PodSelection selects pods: by namespace and label selector, optionally on one node.
type PodSelection struct {
	Namespace string            `json:"namespace"`
	Selector  map[string]string `json:"selector"`
	Node      string            `json:"node,omitempty"`
}

// KindDeletePod is the kind of steps whose action is Step.DeletePod.
const KindDeletePod Kind = "DeletePod"

var deletePodKind = kindSpec{
	kind:    KindDeletePod,
	payload: payloadOf(func(s *Step) *PodSelection { return s.DeletePod }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		mustNotBeEmpty(where, "deletePod.namespace", s.DeletePod.Namespace, bad)
		if len(s.DeletePod.Selector) == 0 {
			bad("%s: deletePod has no label selector; the executor never deletes every pod of a namespace", where)
		}
	},
	commands: func(s *Step) []string {
		p := s.DeletePod
		c := fmt.Sprintf("kubectl delete pod -n %s -l %s", p.Namespace, selectorString(p.Selector))
		if p.Node != "" {
			c += " --field-selector spec.nodeName=" + p.Node
		}
		return []string{c}
	},
	node:        func(s *Step) string { return s.DeletePod.Node },
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
