package execute

import "github.com/ambientkit/ambientkit/ambient/vocab/plan"

// The journal is written before every change a resumed run could not find again by itself (the
// intent an action records, a step's start when its preconditions must not be checked again) and
// whenever a step finishes, except the completion of a step a resumed run may simply repeat: its
// repetition finds the effect and changes nothing (journalPolicy.later). Such a completion is written
// with the journal's next write, which comes at the latest before a step acts whose effect would make
// the repetition act (recordBefore and mayStayUnrecorded: uncordoning the node a cordon is unrecorded
// for, draining while an earlier drain is unrecorded), and at the end of the run. A node's cordon,
// drain, ztunnel pod deletion, wait and uncordon then cost one or two journal writes instead of
// seven. A run killed in between repeats those steps, which find their work done; the Kubernetes
// events of their first completion are then followed by a second.

// journalPolicy is when the journal records a finished step of one action kind. Every action declares
// one, journalAtOnce or a policy that lets the completion wait; a test fails when one has none.
type journalPolicy struct {
	// later says that a finished step's completion may wait for the journal's next write: repeating
	// it after a crash, whatever step acted since (recordBefore guards the exceptions), finds its work
	// done. Cordons and uncordons read the node first; a drain evicts only pods still there; a pod
	// deletion's UIDs are in the journal before it deletes, so a repeat deletes no replacement; waits,
	// verifications and health gates only look.
	later bool
	// acrossAll says that an unrecorded completion may stay so while any step acts next.
	acrossAll bool
	// across, otherwise, names the next acting steps an unrecorded completion may stay unrecorded
	// across, by their kind, with the node they must work on (the finished step's or another);
	// before any other step acts the journal is written. Repeating the finished step after that
	// step's effect must still change nothing.
	across map[plan.Kind]nodeMatch
	// recordsItself says the action calls recordBefore itself, right before its first write, instead
	// of the executor before it acts: a drain that finds nothing to evict, or a pod deletion that
	// records its UIDs (one write, which carries the rest anyway), needs no write of its own.
	recordsItself bool
}

// nodeMatch says which node a next step must work on, compared with the finished step's node
// (plan.Step.Node), for an unrecorded completion to stay so across it.
type nodeMatch int

const (
	// anyNode: whichever node the next step works on, if any.
	anyNode nodeMatch = iota + 1
	// sameNode: the next step works on the finished step's node.
	sameNode
	// otherNode: the next step works on another node than the finished step's.
	otherNode
)

// The journal policies of action kinds.
var (
	// journalAtOnce records the completion as soon as the step finishes.
	journalAtOnce = &journalPolicy{}
	// journalLooks lets the completion of a step that only looks (a wait, a verification, a health
	// gate) wait for the journal's next write, across any step that acts next.
	journalLooks = &journalPolicy{later: true, acrossAll: true}
)

// journalOf returns the journal policy of the step's kind, journalAtOnce for an unknown kind.
func journalOf(st *plan.Step) *journalPolicy {
	if a, ok := actions[st.Kind()]; ok && a.journal != nil {
		return a.journal
	}
	return journalAtOnce
}

// unrecordedStep is a step finished in this run whose completion the journal does not hold yet, with
// its kind's journal policy.
type unrecordedStep struct {
	st      *plan.Step
	journal *journalPolicy
}

// mayStayUnrecorded reports whether the unrecorded completion of done, a step of this policy, may stay
// so while next acts: repeating done after next's effect still changes nothing (later, then acrossAll
// or across). Every other pair is recorded first.
func (j *journalPolicy) mayStayUnrecorded(done, next *plan.Step) bool {
	if !j.later {
		return false
	}
	if j.acrossAll {
		return true
	}
	switch j.across[next.Kind()] {
	case anyNode:
		return true
	case sameNode:
		return next.Node() == done.Node()
	case otherNode:
		return next.Node() != done.Node()
	}
	return false
}
