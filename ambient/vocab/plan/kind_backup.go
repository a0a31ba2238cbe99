package plan

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Backup writes objects to the backup store (or to the File it names) and reads them back before any
// later step may delete them.
type Backup struct {
	Objects []BackupObject `json:"objects,omitempty"`
	// Namespace, when set, also backs up every object of the Istio (*.istio.io) and Gateway API
	// (gateway.networking.k8s.io) kinds in this namespace, found from the served CRDs when the step
	// runs, so that objects the snapshot does not read (HTTPRoutes, Sidecars, ServiceEntries, ...)
	// are saved too.
	Namespace string `json:"namespace,omitempty"`
	// File, when set, is where the backup is written (mode 0600, on the machine that runs the
	// executor) instead of the executor's backup store: an absolute path. It is read back and
	// compared; the journal keeps only its digest.
	File string `json:"file,omitempty"`
}

// BackupObject is one object (or Helm release) to back up.
type BackupObject struct {
	APIVersion string         `json:"apiVersion,omitempty"`
	Object     mesh.ObjectRef `json:"object"`
	// HelmRelease, when set, backs up the release (manifest and values) instead of one object.
	HelmRelease string `json:"helmRelease,omitempty"`
}

// meshKindsCommand lists the Istio and Gateway API resources a namespace can hold.
const meshKindsCommand = `$(kubectl api-resources --namespaced -o name | grep -E '\.istio\.io$|^[a-z]+\.gateway\.networking\.k8s\.io$' | paste -sd, -)`

// KindBackup is the kind of steps whose action is Step.Backup.
const KindBackup Kind = "Backup"

var backupKind = kindSpec{
	kind:    KindBackup,
	payload: payloadOf(func(s *Step) *Backup { return s.Backup }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		b := s.Backup
		if len(b.Objects) == 0 && b.Namespace == "" {
			bad("%s: backup names no object and no namespace", where)
		}
		for _, o := range b.Objects {
			if o.HelmRelease == "" && (o.APIVersion == "" || o.Object.Kind == "" || o.Object.Name == "") {
				bad("%s: backup of %s needs apiVersion, kind and name (or helmRelease)", where, o.Object)
			}
			if o.HelmRelease != "" && b.File != "" {
				bad("%s: backup of Helm release %s to a file: Helm values may hold credentials; back releases up to the backup store", where, o.HelmRelease)
			}
		}
		if b.File != "" && !filepath.IsAbs(b.File) {
			bad("%s: backup.file %q is not an absolute path; the executor may run elsewhere than the planner", where, b.File)
		}
	},
	commands: func(s *Step) []string {
		b := s.Backup
		var out []string
		if b.File != "" {
			mkdir := "mkdir -p " + shellWord(filepath.Dir(b.File))
			if b.Namespace != "" {
				return []string{mkdir, fmt.Sprintf("(umask 077; kubectl get %s -n %s -o json > %s)", meshKindsCommand, b.Namespace, shellWord(b.File))}
			}
			var targets []string
			for _, o := range b.Objects {
				targets = append(targets, kubectlTarget(o.Object))
			}
			return []string{mkdir, fmt.Sprintf("(umask 077; for o in %q; do kubectl get $o -o json; done > %s)", strings.Join(targets, `" "`), shellWord(b.File))}
		}
		out = append(out, "mkdir -p backup")
		if b.Namespace != "" {
			out = append(out, fmt.Sprintf("kubectl get %s -n %s -o yaml > backup/%s.yaml", meshKindsCommand, b.Namespace, b.Namespace))
		}
		for _, o := range b.Objects {
			if o.HelmRelease != "" {
				out = append(out, fmt.Sprintf("helm get all %s -n %s > backup/helm-%s.yaml", o.HelmRelease, o.Object.Namespace, o.HelmRelease),
					fmt.Sprintf("helm get values %s -n %s -o yaml > %s", o.HelmRelease, o.Object.Namespace, helmValuesFile(o.HelmRelease)))
				continue
			}
			out = append(out, fmt.Sprintf("kubectl get %s -o yaml > backup/%s.yaml", kubectlTarget(o.Object), backupFile(o.Object)))
		}
		return out
	},
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: backupCheckByHand,
	keepsMesh:   true,
}

// backupFiles are the files the step's commands write by hand, in order, as shell words.
func backupFiles(b *Backup) []string {
	if b.File != "" {
		return []string{shellWord(b.File)}
	}
	var out []string
	if b.Namespace != "" {
		out = append(out, "backup/"+b.Namespace+".yaml")
	}
	for _, o := range b.Objects {
		if o.HelmRelease != "" {
			out = append(out, "backup/helm-"+o.HelmRelease+".yaml", helmValuesFile(o.HelmRelease))
			continue
		}
		out = append(out, "backup/"+backupFile(o.Object)+".yaml")
	}
	return out
}

// helmValuesFile is where a backup by hand keeps a release's user-supplied values, which an undo of
// its uninstall installs again.
func helmValuesFile(release string) string { return "backup/helm-" + release + ".values.yaml" }

// backupCheckByHand: a backup's read-back has, by hand, the weaker check that every file the step
// wrote is there and not empty.
func backupCheckByHand(s *Step, c Check) (what, cmd string) {
	if c.Type != CheckBackupReadable {
		return "", ""
	}
	files := backupFiles(s.Backup)
	if len(files) == 0 {
		return "", ""
	}
	return "only that every file the step wrote is there and not empty",
		fmt.Sprintf(`for f in %s; do test -s "$f" || echo "$f"; done | %s`, strings.Join(files, " "), failOn("", "missing or empty: ", "$0"))
}
