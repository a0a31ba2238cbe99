package plan

// Verification is the payload of a Verify step: a step whose action is only to check.
type Verification struct {
	Checks []Check `json:"checks"`
}

// KindVerify is the kind of steps whose action is Step.Verify.
const KindVerify Kind = "Verify"

var verifyKind = kindSpec{
	kind:    KindVerify,
	payload: payloadOf(func(s *Step) *Verification { return s.Verify }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		if len(s.Verify.Checks) == 0 {
			bad("%s: verify has no checks", where)
		}
		for _, c := range s.Verify.Checks {
			validateCheck(c, where, bad)
		}
	},
	commands: func(s *Step) []string {
		var out []string
		for _, c := range s.Verify.Checks {
			if cmd := CheckCommand(c); cmd != "" {
				out = append(out, cmd)
			}
		}
		return out
	},
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
	readOnly:    true,
	keepsMesh:   true,
}
