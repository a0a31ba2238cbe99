package plan

// NodeRef names a node.
type NodeRef struct {
	Node string `json:"node"`
	// Pool is the node's pool when the plan was made, for the reviewer (the runbook groups nodes by
	// it); the executor does not read it.
	Pool string `json:"pool,omitempty"`
}

func validateNodeRef(n *NodeRef, where string, bad func(string, ...any)) {
	mustNotBeEmpty(where, "node", n.Node, bad)
}

// KindCordon is the kind of steps whose action is Step.Cordon.
const KindCordon Kind = "Cordon"

var cordonKind = kindSpec{
	kind:        KindCordon,
	payload:     payloadOf(func(s *Step) *NodeRef { return s.Cordon }),
	validate:    func(s *Step, where string, bad func(string, ...any)) { validateNodeRef(s.Cordon, where, bad) },
	commands:    func(s *Step) []string { return []string{"kubectl cordon " + s.Cordon.Node} },
	node:        func(s *Step) string { return s.Cordon.Node },
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
