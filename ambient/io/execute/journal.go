package execute

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// StepStatus is where a step stands in the journal.
type StepStatus string

// Step statuses.
const (
	// StatusPending: the step has not started.
	StatusPending StepStatus = "pending"
	// StatusInProgress: the step started and is not finished (a drain pass, a wait, a verification).
	StatusInProgress StepStatus = "in-progress"
	// StatusDone: the action ran and the verification held.
	StatusDone StepStatus = "done"
	// StatusFailed: the step stopped with an error; running it again resumes it.
	StatusFailed StepStatus = "failed"
	// StatusRolledBack: the step's rollback ran.
	StatusRolledBack StepStatus = "rolled-back"
	// StatusWouldRun: dry run only; the step would run and Changes says what it would change.
	StatusWouldRun StepStatus = "would-run"
)

// Phases of a started step.
const (
	phaseAct    = "act"
	phaseVerify = "verify"
)

// Record is the journal of one plan: which steps are done and what each in-flight step intends.
type Record struct {
	// PlanHash identifies the plan (PlanHash); a journal only resumes the plan it was written for.
	PlanHash string `json:"planHash"`
	// PlanName and Fingerprint echo the plan's metadata for people reading the journal.
	PlanName    string `json:"planName,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Holder is the identity of the run that wrote it last.
	Holder string `json:"holder,omitempty"`
	// Created is when the first run started; Updated when the record was last written.
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
	// Steps by step ID (rollback steps under their own IDs).
	Steps map[string]*StepRecord `json:"steps,omitempty"`
}

// StepRecord is one step's entry in the journal.
type StepRecord struct {
	// Status is where the step stands.
	Status StepStatus `json:"status"`
	// Phase is "act" while the action runs and "verify" once it ran and the verification is awaited.
	Phase string `json:"phase,omitempty"`
	// Started is when the step first started; AttemptStarted when the current run picked it up
	// (timeouts count from it, so a run resumed hours later gets a fresh drain timeout);
	// VerifyStarted when its verification began; Finished when it was done (or rolled back).
	Started        time.Time `json:"started,omitzero"`
	AttemptStarted time.Time `json:"attemptStarted,omitzero"`
	VerifyStarted  time.Time `json:"verifyStarted,omitzero"`
	Finished       time.Time `json:"finished,omitzero"`
	// Message is the last progress line or error.
	Message string `json:"message,omitempty"`
	// Changes says what the action changed.
	Changes []string `json:"changes,omitempty"`
	// State holds the action's recorded intent (pod UIDs to delete, the restartedAt stamp, the Helm
	// revision before the change, the backup digest), so a resumed step never acts twice.
	State map[string]string `json:"state,omitempty"`
}

// maxChanges is how many changes a done step keeps in the journal.
const maxChanges = 5

// compact drops what a done step no longer needs, so the journal of a large plan stays small: the
// timers, the intent (except a backup's digest, which later deletions check), all but the first
// changes.
func (s *StepRecord) compact() {
	s.Phase, s.AttemptStarted, s.VerifyStarted = "", time.Time{}, time.Time{}
	if s.State["digest"] == "" {
		s.State = nil
	}
	if len(s.Changes) > maxChanges {
		s.Changes = append(s.Changes[:maxChanges:maxChanges], fmt.Sprintf("... and %d more", len(s.Changes)-maxChanges))
	}
}

func (r *Record) step(id string) *StepRecord {
	if r.Steps == nil {
		r.Steps = map[string]*StepRecord{}
	}
	s, ok := r.Steps[id]
	if !ok {
		s = &StepRecord{Status: StatusPending}
		r.Steps[id] = s
	}
	if s.State == nil {
		s.State = map[string]string{}
	}
	return s
}

func (r *Record) status(id string) StepStatus {
	if s, ok := r.Steps[id]; ok && s.Status != "" {
		return s.Status
	}
	return StatusPending
}

func (r *Record) clone() *Record {
	b, _ := json.Marshal(r)
	var out Record
	_ = json.Unmarshal(b, &out)
	return &out
}

// Journal stores a plan's Record. Load returns nil (and no error) when the plan has none yet; it
// returns ErrJournalMismatch when the stored record belongs to another plan.
type Journal interface {
	// Load returns the record of the plan with this hash, nil when there is none.
	Load(ctx context.Context, planHash string) (*Record, error)
	// Save stores the record under its PlanHash, replacing the previous one.
	Save(ctx context.Context, r *Record) error
}

// PlanHash returns a stable hash of the plan ("sha256:<hex>"): the same plan, encoded and decoded
// again, has the same hash; any edit changes it.
func PlanHash(p *plan.Plan) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("hash plan %q: %w", p.Metadata.Name, err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// shortHash is the first 12 hex digits of a plan hash, for object names.
func shortHash(h string) string {
	if len(h) > 7+12 {
		return h[7 : 7+12]
	}
	return h
}

func checkHash(r *Record, planHash, where string) error {
	if r.PlanHash != planHash {
		return fmt.Errorf("%w: %s records plan %s, this plan is %s; a plan can only resume its own journal: use another journal, or delete that one if its run is abandoned",
			ErrJournalMismatch, where, r.PlanHash, planHash)
	}
	return nil
}

// journalKey is the ConfigMap binaryData key holding the gzipped record (journalKeyPlain the
// uncompressed form, which Load also reads).
const (
	journalKey      = "journal.json.gz"
	journalKeyPlain = "journal.json"
)

// ConfigMapJournal keeps each plan's record in ConfigMap ambientkit-journal-<short plan hash> in
// Namespace, gzipped under binaryData (a plan of several thousand steps stays well under the 1 MiB
// object limit), written with server-side apply.
type ConfigMapJournal struct {
	// Client reads and writes the ConfigMaps.
	Client client.Client
	// Namespace holds the ConfigMaps.
	Namespace string
	// FieldOwner of the writes; empty means "ambientkit".
	FieldOwner string
}

// Name returns the ConfigMap name for a plan hash.
func (j *ConfigMapJournal) Name(planHash string) string {
	return "ambientkit-journal-" + shortHash(planHash)
}

// Load reads the plan's ConfigMap.
func (j *ConfigMapJournal) Load(ctx context.Context, planHash string) (*Record, error) {
	var cm corev1.ConfigMap
	key := client.ObjectKey{Namespace: j.Namespace, Name: j.Name(planHash)}
	if err := j.Client.Get(ctx, key, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read journal ConfigMap %s: %w", key, err)
	}
	data := []byte(cm.Data[journalKeyPlain])
	if gz, ok := cm.BinaryData[journalKey]; ok {
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err == nil {
			data, err = io.ReadAll(zr)
		}
		if err != nil {
			return nil, fmt.Errorf("journal ConfigMap %s holds no readable %s (%v); delete it to start over", key, journalKey, err)
		}
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("journal ConfigMap %s holds no readable journal (%v); delete it to start over", key, err)
	}
	if err := checkHash(&r, planHash, "journal ConfigMap "+key.String()); err != nil {
		return nil, err
	}
	return &r, nil
}

// Save writes the record.
func (j *ConfigMapJournal) Save(ctx context.Context, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode journal: %w", err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(b); err != nil {
		return fmt.Errorf("compress journal: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compress journal: %w", err)
	}
	owner := j.FieldOwner
	if owner == "" {
		owner = DefaultFieldOwner
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: j.Name(r.PlanHash), Namespace: j.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "ambientkit", "ambientkit.io/plan": shortHash(r.PlanHash)}},
		BinaryData: map[string][]byte{journalKey: gz.Bytes()},
	}
	if err := j.Client.Apply(ctx, applyConfig(cm), client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return fmt.Errorf("write journal ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// FileJournal keeps the record of one plan in a JSON file.
type FileJournal struct {
	// Path of the JSON file; its folder must exist.
	Path string
}

// Load reads the file; a missing file is no record.
func (j *FileJournal) Load(_ context.Context, planHash string) (*Record, error) {
	b, err := os.ReadFile(j.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", j.Path, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("journal %s is not a readable journal (%v); move it away to start over", j.Path, err)
	}
	if err := checkHash(&r, planHash, "journal file "+j.Path); err != nil {
		return nil, err
	}
	return &r, nil
}

// Save writes the file atomically (temporary file, then rename).
func (j *FileJournal) Save(_ context.Context, r *Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode journal: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(j.Path), ".journal-*")
	if err != nil {
		return fmt.Errorf("write journal %s: %w", j.Path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write journal %s: %w", j.Path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write journal %s: %w", j.Path, err)
	}
	if err := os.Rename(tmp.Name(), j.Path); err != nil {
		return fmt.Errorf("write journal %s: %w", j.Path, err)
	}
	return nil
}

// MemoryJournal keeps records in memory, keyed by plan hash; for tests and dry runs.
type MemoryJournal struct {
	mu      sync.Mutex
	records map[string]*Record
	// Saves counts Save calls.
	Saves int
}

// Load returns a copy of the plan's record.
func (j *MemoryJournal) Load(_ context.Context, planHash string) (*Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r, ok := j.records[planHash]
	if !ok {
		return nil, nil
	}
	return r.clone(), nil
}

// Save stores a copy of the record.
func (j *MemoryJournal) Save(_ context.Context, r *Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.records == nil {
		j.records = map[string]*Record{}
	}
	j.records[r.PlanHash] = r.clone()
	j.Saves++
	return nil
}
