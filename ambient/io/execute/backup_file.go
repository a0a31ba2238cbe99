package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// FileBackupStore keeps one backup in one file on the machine that runs the executor, written with
// mode 0600 (a backup holds the objects' full specs). A Backup step that names a File writes through
// one; it can also serve as Options.BackupStore for a run whose plan has a single backup. It never
// overwrites a file holding another plan's or step's backup.
type FileBackupStore struct {
	// Path of the file; its directory must exist.
	Path string
}

// backupOwner is the part of a stored Backup that says whose it is.
type backupOwner struct {
	Plan string `json:"plan"`
	Step string `json:"step"`
}

// Write replaces the file with data, atomically (a temporary file in the same directory, synced,
// then renamed), unless the file holds the backup of another plan or step.
func (f *FileBackupStore) Write(_ context.Context, key string, data []byte) error {
	if old, err := os.ReadFile(f.Path); err == nil {
		var have, want backupOwner
		if json.Unmarshal(old, &have) != nil || json.Unmarshal(data, &want) != nil || have.Plan == "" || have != want {
			return fmt.Errorf("backup file %s already holds something else than the backup %q; refusing to overwrite it: name a new file or move it away", f.Path, key)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup file %s: %w", f.Path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write backup file %s: %w", f.Path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // gone after the rename; cleans up after a failure
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write backup file %s: %w", f.Path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write backup file %s: %w", f.Path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write backup file %s: %w", f.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write backup file %s: %w", f.Path, err)
	}
	if err := os.Rename(name, f.Path); err != nil {
		return fmt.Errorf("write backup file %s: %w", f.Path, err)
	}
	if d, err := os.Open(filepath.Dir(f.Path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Read returns the file's content; ErrNoBackup (wrapped) when the file does not exist.
func (f *FileBackupStore) Read(_ context.Context, key string) ([]byte, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: backup file %s for %q does not exist", ErrNoBackup, f.Path, key)
	}
	if err != nil {
		return nil, fmt.Errorf("read backup file %s: %w", f.Path, err)
	}
	return data, nil
}

// storeFor is where a step's backup lives: the file its Backup payload names, else the executor's
// store. key is what the journal records for it.
func (e *engine) storeFor(r *run, stepID string) (BackupStore, string) {
	if st, ok := r.p.Step(stepID); ok && st.Backup != nil && st.Backup.File != "" {
		return &FileBackupStore{Path: st.Backup.File}, st.Backup.File
	}
	return e.backups, backupKey(r.hash, stepID)
}
