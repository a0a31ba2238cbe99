package execute

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// BackupStore keeps backups by key. It only stores bytes: the executor writes, reads back and
// compares, and refuses to delete anything whose backup does not read back equal.
type BackupStore interface {
	// Write stores data under key, replacing what was there.
	Write(ctx context.Context, key string, data []byte) error
	// Read returns what is stored under key; ErrNoBackup (wrapped) when nothing is.
	Read(ctx context.Context, key string) ([]byte, error)
}

// BackupEntry is one backed-up object or Helm release.
type BackupEntry struct {
	// Ref names what was backed up (Kind HelmRelease for releases); APIVersion is the object's.
	Ref        mesh.ObjectRef `json:"ref"`
	APIVersion string         `json:"apiVersion,omitempty"`
	// Object is the object as read from the API server, without managedFields.
	Object map[string]any `json:"object,omitempty"`
	// Release is the Helm release as HelmClient.Get returned it, values included.
	Release *Release `json:"release,omitempty"`
	// Missing is true when the object did not exist when it was backed up.
	Missing bool `json:"missing,omitempty"`
}

// Backup is what a Backup step stores under its key.
type Backup struct {
	// Plan is the plan hash and Step the Backup step that wrote it.
	Plan string `json:"plan"`
	Step string `json:"step"`
	// Entries are the backed-up objects and releases, in the step's order.
	Entries []BackupEntry `json:"entries"`
}

// Find returns the entry for the reference.
func (b *Backup) Find(ref mesh.ObjectRef) (BackupEntry, bool) {
	for _, e := range b.Entries {
		if e.Ref == ref {
			return e, true
		}
	}
	return BackupEntry{}, false
}

// backupKey is the store key of a step's backup: "<short plan hash>/<step ID>".
func backupKey(planHash, stepID string) string { return shortHash(planHash) + "/" + stepID }

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// backupSecretKey is the Secret data key holding a backup.
const backupSecretKey = "backup.json"

// annotationBackupKey on a backup Secret holds the store key.
const annotationBackupKey = "ambientkit.io/backup-key"

// SecretBackupStore keeps each backup in Secret ambientkit-backup-<hash of key> in Namespace (backups
// may hold Helm values with credentials, hence Secrets), written with server-side apply.
type SecretBackupStore struct {
	// Client reads and writes the Secrets.
	Client client.Client
	// Namespace holds the Secrets.
	Namespace string
	// FieldOwner of the writes; empty means "ambientkit".
	FieldOwner string
}

// Name returns the Secret name for a key.
func (s *SecretBackupStore) Name(key string) string {
	return "ambientkit-backup-" + digest([]byte(key))[:20]
}

// Write stores data in the key's Secret.
func (s *SecretBackupStore) Write(ctx context.Context, key string, data []byte) error {
	owner := s.FieldOwner
	if owner == "" {
		owner = DefaultFieldOwner
	}
	sec := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name(key), Namespace: s.Namespace,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "ambientkit", "ambientkit.io/backup": "true"},
			Annotations: map[string]string{annotationBackupKey: key}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{backupSecretKey: data},
	}
	if err := s.Client.Apply(ctx, applyConfig(sec), client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return fmt.Errorf("write backup Secret %s/%s for %q: %w", sec.Namespace, sec.Name, key, err)
	}
	return nil
}

// Read returns the key's Secret data.
func (s *SecretBackupStore) Read(ctx context.Context, key string) ([]byte, error) {
	var sec corev1.Secret
	nk := client.ObjectKey{Namespace: s.Namespace, Name: s.Name(key)}
	if err := s.Client.Get(ctx, nk, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: backup Secret %s for %q does not exist", ErrNoBackup, nk, key)
		}
		return nil, fmt.Errorf("read backup Secret %s: %w", nk, err)
	}
	if got := sec.Annotations[annotationBackupKey]; got != key {
		return nil, fmt.Errorf("%w: backup Secret %s holds key %q, not %q", ErrNoBackup, nk, got, key)
	}
	data, ok := sec.Data[backupSecretKey]
	if !ok {
		return nil, fmt.Errorf("%w: backup Secret %s has no %s", ErrNoBackup, nk, backupSecretKey)
	}
	return data, nil
}

// MemoryBackupStore keeps backups in memory; for tests and dry runs.
type MemoryBackupStore struct {
	mu   sync.Mutex
	data map[string][]byte
}

// Write stores a copy of data.
func (m *MemoryBackupStore) Write(_ context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	m.data[key] = append([]byte(nil), data...)
	return nil
}

// Read returns a copy of what is stored.
func (m *MemoryBackupStore) Read(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.data[key]
	if !ok {
		return nil, fmt.Errorf("%w: nothing stored under %q", ErrNoBackup, key)
	}
	return append([]byte(nil), d...), nil
}
