package plan

import (
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// PatchLabels sets and removes labels on one object, or on a list of objects of one kind.
type PatchLabels struct {
	APIVersion string         `json:"apiVersion"`
	Object     mesh.ObjectRef `json:"object,omitzero"`
	// Objects, instead of Object, are several objects of one kind in one namespace.
	Objects []mesh.ObjectRef  `json:"objects,omitempty"`
	Set     map[string]string `json:"set,omitempty"`
	Remove  []string          `json:"remove,omitempty"`
}

// Targets returns the objects the step labels.
func (p PatchLabels) Targets() []mesh.ObjectRef { return targets(p.Object, p.Objects) }

// KindPatchLabels is the kind of steps whose action is Step.PatchLabels.
const KindPatchLabels Kind = "PatchLabels"

var patchLabelsKind = kindSpec{
	kind:    KindPatchLabels,
	payload: payloadOf(func(s *Step) *PatchLabels { return s.PatchLabels }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		p := s.PatchLabels
		validateMetadataPatch("patchLabels", p.APIVersion, p.Object, p.Objects, p.Set, p.Remove, where, bad)
	},
	commands: func(s *Step) []string {
		p := s.PatchLabels
		return []string{metadataCommand("label", p.Object, p.Objects, p.Set, p.Remove)}
	},
	node:        func(s *Step) string { return nodeObject(s.PatchLabels.Object) },
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
