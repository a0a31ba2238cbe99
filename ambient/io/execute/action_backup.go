package execute

import (
	"context"
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var backupAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.backup(ctx, r, st, rec, st.Backup)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef {
		var out []mesh.ObjectRef
		for _, o := range st.Backup.Objects {
			out = append(out, o.Object)
		}
		return out
	},
	journal: journalAtOnce,
	// The backup is written to the store unless it goes to a File.
	backup: func(st *plan.Step, dry bool) (string, bool) {
		if dry || st.Backup.File != "" {
			return "", false
		}
		return st.ID, true
	},
}

// backup runs a Backup step: read every object (or Helm release), write them, read them back and
// compare. The digest of what was written goes into the journal; deletions check against it.
func (e *engine) backup(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, b *plan.Backup) (outcome, error) {
	if d := rec.State["digest"]; d != "" {
		if _, err := e.readBackup(ctx, r, st.ID, d); err != nil {
			return outcome{}, err
		}
		return finished("backup " + rec.State["key"] + " reads back equal"), nil
	}
	var entries []BackupEntry
	var what []string
	for _, o := range b.Objects {
		var ent BackupEntry
		var err error
		if o.HelmRelease != "" {
			ent, err = e.backupRelease(ctx, o)
		} else {
			ent, err = e.backupObject(ctx, o)
		}
		if err != nil {
			return outcome{}, err
		}
		entries = append(entries, ent)
		switch {
		case ent.Missing:
			what = append(what, ent.Ref.String()+" (absent)")
		case ent.Release != nil:
			what = append(what, fmt.Sprintf("%s (chart %s, values included)", ent.Ref, chartLabel(ent.Release)))
		default:
			what = append(what, ent.Ref.String())
		}
	}
	if b.Namespace != "" {
		more, err := e.backupNamespace(ctx, b.Namespace, entries)
		if err != nil {
			return outcome{}, err
		}
		entries = append(entries, more...)
		what = append(what, fmt.Sprintf("%s of the Istio and Gateway API objects of namespace %s", plural(len(more), "object", "objects"), b.Namespace))
	}
	if r.dry {
		return finished("would back up " + strings.Join(what, ", ")), nil
	}
	key, err := e.writeBackup(ctx, r, rec, st.ID, entries)
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("backed up %s under %q; read back equal", strings.Join(what, ", "), key)), nil
}
