package plan

import "fmt"

// Restore applies objects again, as a Backup step saved them: the rollback of a deletion. The
// executor reads the backup (checking it against the digest the journal recorded when it was
// written), drops what the API server set (resourceVersion, uid, timestamps, status) and
// server-side applies each object.
type Restore struct {
	// BackupStep is the ID of the Backup step that saved the objects.
	BackupStep string `json:"backupStep"`
	// Objects to restore; each must be in that backup. APIVersion tells kinds of one name apart
	// (an Istio Gateway from a Gateway API Gateway).
	Objects []BackupObject `json:"objects"`
	// File is where that backup step writes, for the runbook's commands (the executor finds the
	// backup from the step itself).
	File string `json:"file,omitempty"`
}

// KindRestore is the kind of steps whose action is Step.Restore.
const KindRestore Kind = "Restore"

var restoreKind = kindSpec{
	kind:    KindRestore,
	payload: payloadOf(func(s *Step) *Restore { return s.Restore }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		mustNotBeEmpty(where, "restore.backupStep", s.Restore.BackupStep, bad)
		if len(s.Restore.Objects) == 0 {
			bad("%s: restore names no object", where)
		}
		for _, o := range s.Restore.Objects {
			if o.APIVersion == "" || o.Object.Kind == "" || o.Object.Name == "" {
				bad("%s: restore of %s needs apiVersion, kind and name", where, o.Object)
			}
		}
	},
	commands: func(s *Step) []string {
		var out []string
		for _, b := range s.Restore.Objects {
			o := b.Object
			if s.Restore.File == "" {
				// The file the backup step's commands wrote by hand (kubectl get -o yaml of the one
				// object): what the API server set at the top of its metadata goes, or the create
				// of an object that was deleted is refused.
				out = append(out, fmt.Sprintf("sed -e '/^  resourceVersion: /d' -e '/^  uid: /d' -e '/^  creationTimestamp: /d' -e '/^  generation: /d' backup/%s.yaml | kubectl apply -f -",
					backupFile(o)))
				continue
			}
			// The executor's file holds entries[].object; a kubectl get -o json of the same objects, items[].
			out = append(out, fmt.Sprintf("jq '[.entries[]?.object, .items[]?] | .[] | select(. != null and .kind==%q and .metadata.namespace==%q and .metadata.name==%q)"+
				" | del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation, .metadata.managedFields, .status)' %s | kubectl apply -f -",
				o.Kind, o.Namespace, o.Name, s.Restore.File))
		}
		return out
	},
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
