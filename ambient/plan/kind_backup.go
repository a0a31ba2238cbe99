package plan

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// Backup writes objects to the backup store and reads them back before any later step may delete them.
type Backup struct {
	Objects []BackupObject `json:"objects"`
}

// BackupObject is one object (or Helm release) to back up.
type BackupObject struct {
	APIVersion string         `json:"apiVersion,omitempty"`
	Object     mesh.ObjectRef `json:"object"`
	// HelmRelease, when set, backs up the release (manifest and values) instead of one object.
	HelmRelease string `json:"helmRelease,omitempty"`
}

var backupKind = kindSpec{
	kind:    KindBackup,
	payload: payloadOf(func(s *Step) *Backup { return s.Backup }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		if len(s.Backup.Objects) == 0 {
			bad("%s: backup names no object", where)
		}
		for _, o := range s.Backup.Objects {
			if o.HelmRelease == "" && (o.APIVersion == "" || o.Object.Kind == "" || o.Object.Name == "") {
				bad("%s: backup of %s needs apiVersion, kind and name (or helmRelease)", where, o.Object)
			}
		}
	},
	commands: func(s *Step) []string {
		var out []string
		for _, o := range s.Backup.Objects {
			if o.HelmRelease != "" {
				out = append(out, fmt.Sprintf("helm get all %s -n %s > backup/helm-%s.yaml", o.HelmRelease, o.Object.Namespace, o.HelmRelease))
				continue
			}
			out = append(out, fmt.Sprintf("kubectl get %s -o yaml > backup/%s.yaml", kubectlTarget(o.Object), backupFile(o.Object)))
		}
		return out
	},
	keepsMesh: true,
}
