package plan

// WaitFor waits until a condition holds.
type WaitFor struct {
	Check          Check `json:"check"`
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
}

// KindWaitFor is the kind of steps whose action is Step.WaitFor.
const KindWaitFor Kind = "WaitFor"

var waitForKind = kindSpec{
	kind:    KindWaitFor,
	payload: payloadOf(func(s *Step) *WaitFor { return s.WaitFor }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		validateCheck(s.WaitFor.Check, where, bad)
		if s.WaitFor.TimeoutSeconds < 0 {
			bad("%s: waitFor.timeoutSeconds is negative", where)
		}
	},
	commands: func(s *Step) []string {
		w := s.WaitFor
		b := bound{w.TimeoutSeconds}
		c := checkCommand(w.Check, b)
		switch {
		case c == "":
			return nil
		case !waits(c):
			c = b.until(c, 5, 300, w.Check.Description)
		}
		return []string{c}
	},
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
	readOnly:    true,
	keepsMesh:   true,
}
