package plan

import (
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Annotate sets and removes annotations on one object (karpenter.sh/do-not-disrupt on a node, ...),
// or on a list of objects of one kind.
type Annotate struct {
	APIVersion string         `json:"apiVersion"`
	Object     mesh.ObjectRef `json:"object,omitzero"`
	// Objects, instead of Object, are several objects of one kind in one namespace.
	Objects []mesh.ObjectRef  `json:"objects,omitempty"`
	Set     map[string]string `json:"set,omitempty"`
	Remove  []string          `json:"remove,omitempty"`
}

// Targets returns the objects the step annotates.
func (a Annotate) Targets() []mesh.ObjectRef { return targets(a.Object, a.Objects) }

// KindAnnotate is the kind of steps whose action is Step.Annotate.
const KindAnnotate Kind = "Annotate"

var annotateKind = kindSpec{
	kind:    KindAnnotate,
	payload: payloadOf(func(s *Step) *Annotate { return s.Annotate }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		a := s.Annotate
		validateMetadataPatch("annotate", a.APIVersion, a.Object, a.Objects, a.Set, a.Remove, where, bad)
	},
	commands: func(s *Step) []string {
		a := s.Annotate
		return []string{metadataCommand("annotate", a.Object, a.Objects, a.Set, a.Remove)}
	},
	node:        func(s *Step) string { return nodeObject(s.Annotate.Object) },
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
