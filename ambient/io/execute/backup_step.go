package execute

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func (e *engine) backupRelease(ctx context.Context, o plan.BackupObject) (BackupEntry, error) {
	ns := o.Object.Namespace
	ref := mesh.ObjectRef{Kind: "HelmRelease", Namespace: ns, Name: o.HelmRelease}
	rel, err := e.helmGet(ctx, o.HelmRelease, ns)
	if err != nil {
		return BackupEntry{}, err
	}
	return BackupEntry{Ref: ref, Release: rel, Missing: rel == nil}, nil
}

func (e *engine) backupObject(ctx context.Context, o plan.BackupObject) (BackupEntry, error) {
	u, err := refObject(o.APIVersion, o.Object)
	if err != nil {
		return BackupEntry{}, err
	}
	missing := false
	err = e.retry(ctx, "read "+o.Object.String(), func(ctx context.Context) error {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(u), u)
		if apierrors.IsNotFound(err) {
			missing = true
			return nil
		}
		return err
	})
	if err != nil {
		return BackupEntry{}, fmt.Errorf("read %s to back it up: %w", o.Object, err)
	}
	ent := BackupEntry{Ref: o.Object, APIVersion: o.APIVersion, Missing: missing}
	if !missing {
		u.SetManagedFields(nil)
		ent.Object = u.Object
	}
	return ent, nil
}

// writeBackup stores the entries under the step's key, reads them back, compares, and records the
// digest in the step's journal entry.
func (e *engine) writeBackup(ctx context.Context, r *run, rec *StepRecord, stepID string, entries []BackupEntry) (string, error) {
	data, err := json.Marshal(Backup{Plan: r.hash, Step: stepID, Entries: entries})
	if err != nil {
		return "", fmt.Errorf("encode backup: %w", err)
	}
	store, key := e.storeFor(r, stepID)
	if err := e.retry(ctx, "write backup "+key, func(ctx context.Context) error { return store.Write(ctx, key, data) }); err != nil {
		return "", fmt.Errorf("write backup %q: %w", key, err)
	}
	var back []byte
	if err := e.retry(ctx, "read backup "+key, func(ctx context.Context) error {
		var err error
		back, err = store.Read(ctx, key)
		return err
	}); err != nil {
		return "", fmt.Errorf("read backup %q back: %w", key, err)
	}
	if !bytes.Equal(back, data) {
		return "", fmt.Errorf("%w: backup %q reads back different from what was written (%d bytes written, %d read); check the backup store", ErrNoBackup, key, len(data), len(back))
	}
	rec.State["digest"], rec.State["key"] = digest(data), key
	if err := e.save(ctx, r); err != nil {
		return "", err
	}
	return key, nil
}

// readBackup reads a step's backup and checks it against the digest recorded when it was written.
func (e *engine) readBackup(ctx context.Context, r *run, stepID, want string) (*Backup, error) {
	store, key := e.storeFor(r, stepID)
	var data []byte
	if err := e.retry(ctx, "read backup "+key, func(ctx context.Context) error {
		var err error
		data, err = store.Read(ctx, key)
		return err
	}); err != nil {
		return nil, fmt.Errorf("read backup %q of step %s: %w", key, stepID, err)
	}
	if got := digest(data); got != want {
		return nil, fmt.Errorf("%w: backup %q of step %s reads back different from what was written (digest %s, want %s); run the backup step again", ErrNoBackup, key, stepID, got[:12], want[:12])
	}
	var b Backup
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%w: backup %q of step %s is not readable: %v", ErrNoBackup, key, stepID, err)
	}
	return &b, nil
}

// requireBackup checks that the named Backup step is done, that its backup reads back as written, and
// that it holds ref.
func (e *engine) requireBackup(ctx context.Context, r *run, backupStep string, ref mesh.ObjectRef) error {
	if backupStep == "" {
		return fmt.Errorf("%w: deleting %s names no backup step; nothing is deleted without a backup", ErrNoBackup, ref)
	}
	bs := r.record(backupStep)
	if bs == nil || bs.Status != StatusDone || bs.State["digest"] == "" {
		return fmt.Errorf("%w: backup step %q is not done; run it before deleting %s", ErrNoBackup, backupStep, ref)
	}
	b, err := e.readBackup(ctx, r, backupStep, bs.State["digest"])
	if err != nil {
		return err
	}
	if _, ok := b.Find(ref); !ok {
		return fmt.Errorf("%w: backup step %q did not save %s; add it to the backup and re-plan", ErrNoBackup, backupStep, ref)
	}
	return nil
}

// autoBackup backs up what a step removes when the plan names no backup step (the rollback of an
// install), once.
func (e *engine) autoBackup(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, ent BackupEntry) error {
	if d := rec.State["digest"]; d != "" {
		_, err := e.readBackup(ctx, r, st.ID, d)
		return err
	}
	_, err := e.writeBackup(ctx, r, rec, st.ID, []BackupEntry{ent})
	return err
}
