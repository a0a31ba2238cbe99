package plan

// KindUncordon is the kind of steps whose action is Step.Uncordon.
const KindUncordon Kind = "Uncordon"

var uncordonKind = kindSpec{
	kind:        KindUncordon,
	payload:     payloadOf(func(s *Step) *NodeRef { return s.Uncordon }),
	validate:    func(s *Step, where string, bad func(string, ...any)) { validateNodeRef(s.Uncordon, where, bad) },
	commands:    func(s *Step) []string { return []string{"kubectl uncordon " + s.Uncordon.Node} },
	node:        func(s *Step) string { return s.Uncordon.Node },
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
