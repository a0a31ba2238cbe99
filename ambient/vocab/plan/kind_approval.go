package plan

// Approval pauses the run until a person approves.
type Approval struct {
	Message string `json:"message"`
}

// KindApproval is the kind of steps whose action is Step.Approval.
const KindApproval Kind = "Approval"

var approvalKind = kindSpec{
	kind:    KindApproval,
	payload: payloadOf(func(s *Step) *Approval { return s.Approval }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		mustNotBeEmpty(where, "approval.message", s.Approval.Message, bad)
	},
	commands:    func(s *Step) []string { return []string{"# pause: " + s.Approval.Message} },
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
	readOnly:    true,
	keepsMesh:   true,
}
