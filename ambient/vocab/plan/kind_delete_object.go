package plan

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// DeleteObject deletes one object after a Backup step saved it.
type DeleteObject struct {
	APIVersion string         `json:"apiVersion"`
	Object     mesh.ObjectRef `json:"object"`
	// BackupStep is the ID of the Backup step that saved the object. A rollback that removes what its
	// step created names none: the executor backs the object up itself before deleting it.
	BackupStep string `json:"backupStep"`
}

// KindDeleteObject is the kind of steps whose action is Step.DeleteObject.
const KindDeleteObject Kind = "DeleteObject"

var deleteObjectKind = kindSpec{
	kind:    KindDeleteObject,
	payload: payloadOf(func(s *Step) *DeleteObject { return s.DeleteObject }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		d := s.DeleteObject
		if d.APIVersion == "" || d.Object.Kind == "" || d.Object.Name == "" {
			bad("%s: deleteObject needs apiVersion, object.kind and object.name", where)
		}
	},
	commands: func(s *Step) []string {
		return []string{fmt.Sprintf("kubectl delete %s", kubectlTarget(s.DeleteObject.Object))}
	},
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
