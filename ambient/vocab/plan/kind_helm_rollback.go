package plan

import "fmt"

// HelmRollback returns a release to an earlier Helm revision (helm rollback).
type HelmRollback struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Revision is the Helm release revision to return to.
	Revision int `json:"revision"`
}

// KindHelmRollback is the kind of steps whose action is Step.HelmRollback.
const KindHelmRollback Kind = "HelmRollback"

var helmRollbackKind = kindSpec{
	kind:    KindHelmRollback,
	payload: payloadOf(func(s *Step) *HelmRollback { return s.HelmRollback }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		r := s.HelmRollback
		if r.Release == "" || r.Namespace == "" {
			bad("%s: helm release and namespace must be set", where)
		}
		if r.Revision < 1 {
			bad("%s: helmRollback.revision %d is not a Helm revision (they start at 1)", where, r.Revision)
		}
	},
	commands: func(s *Step) []string {
		r := s.HelmRollback
		// No --wait, as helmCommand prints none (its doc says why): readiness is the checks'.
		return []string{fmt.Sprintf("helm rollback %s %d -n %s", r.Release, r.Revision, r.Namespace)}
	},
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
