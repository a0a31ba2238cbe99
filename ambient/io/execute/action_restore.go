package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var restoreAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		return e.restore(ctx, r, st.Restore)
	},
	journal: journalAtOnce,
	// The restore reads its backup, in a dry run too.
	backup: func(st *plan.Step, _ bool) (string, bool) { return st.Restore.BackupStep, false },
}

// restore applies objects again from a backup, checked against the digest recorded when it was
// written. What the API server set on the saved objects (resourceVersion, uid, timestamps, status)
// is dropped; the rest is server-side applied. Applying twice changes nothing.
func (e *engine) restore(ctx context.Context, r *run, rs *plan.Restore) (outcome, error) {
	bs := r.record(rs.BackupStep)
	if bs == nil || bs.State["digest"] == "" {
		if r.dry {
			return finished(fmt.Sprintf("would restore %d object(s) from the backup of step %s", len(rs.Objects), rs.BackupStep)), nil
		}
		return outcome{}, fmt.Errorf("%w: backup step %q wrote no backup, so there is nothing to restore from; restore by hand", ErrNoBackup, rs.BackupStep)
	}
	b, err := e.readBackup(ctx, r, rs.BackupStep, bs.State["digest"])
	if err != nil {
		return outcome{}, err
	}
	var objs []map[string]any
	var changes []string
	for _, o := range rs.Objects {
		ent, ok := b.findEntry(o.APIVersion, o.Object)
		switch {
		case !ok:
			return outcome{}, fmt.Errorf("%w: the backup of step %s does not hold %s (%s); restore it by hand", ErrNoBackup, rs.BackupStep, o.Object, o.APIVersion)
		case ent.Missing || ent.Object == nil:
			changes = append(changes, fmt.Sprintf("%s was absent when backed up: nothing to restore", o.Object))
			continue
		}
		obj, err := jsonCopy(ent.Object)
		if err != nil {
			return outcome{}, fmt.Errorf("backed-up %s: %w", o.Object, err)
		}
		objs = append(objs, restorable(obj))
	}
	out, err := e.applyObjects(ctx, r, objs)
	if err != nil {
		return outcome{}, err
	}
	for i := range out.changes {
		out.changes[i] += " from the backup of step " + rs.BackupStep
	}
	out.changes = append(changes, out.changes...)
	return out, nil
}

// restorable drops what the API server owns from a saved object, so it can be applied again.
func restorable(obj map[string]any) map[string]any {
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields",
			"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
			delete(md, k)
		}
	}
	return obj
}
