package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// PlanKind is the kind of an encoded Plan.
const PlanKind = "Plan"

// Plan is an ordered list of steps with the findings that shaped it.
type Plan struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	// Findings are the prechecks: blocking and unwaived waivable findings mean the plan must not run.
	Findings []Finding `json:"findings,omitempty"`
	Steps    []Step    `json:"steps"`
}

// Metadata describes what a plan is for and what it was made from.
type Metadata struct {
	// Name is a short title ("upgrade 1.30.3 → 1.31.4").
	Name string `json:"name"`
	// Operation is "upgrade", "move-tag", "bluegreen-ztunnel", "migrate-namespace", ...
	Operation string `json:"operation"`
	// Fingerprint of the snapshot the plan was made from (mesh.Snapshot.Fingerprint).
	Fingerprint string `json:"fingerprint"`
	// From and To are the versions, for upgrades.
	From mesh.Version `json:"from,omitzero"`
	To   mesh.Version `json:"to,omitzero"`
	// Options echo the options the planner was called with, as strings, for the reviewer.
	Options map[string]string `json:"options,omitempty"`
}

// New returns an empty plan with apiVersion and kind set.
func New(md Metadata) *Plan {
	return &Plan{APIVersion: mesh.APIVersion, Kind: PlanKind, Metadata: md}
}

// ErrInvalidPlan is wrapped by every validation and decoding error.
var ErrInvalidPlan = errors.New("invalid plan")

// Runnable reports whether no finding stops the plan and no step is blocked.
func (p *Plan) Runnable() bool {
	if len(Stopping(p.Findings)) > 0 {
		return false
	}
	for _, s := range p.Steps {
		if s.Blocked != "" {
			return false
		}
	}
	return true
}

// Step returns the step with the ID.
func (p *Plan) Step(id string) (*Step, bool) {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return &p.Steps[i], true
		}
	}
	return nil, false
}

// Validate checks the plan's structure: apiVersion and kind, a fingerprint, unique non-empty step IDs,
// exactly one action per step and per rollback, dependencies only on earlier steps, deletions and
// uninstalls only after the backup step they name, known check types.
func (p *Plan) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.APIVersion != mesh.APIVersion || p.Kind != PlanKind {
		bad("apiVersion/kind are %q/%q; want %q/%q", p.APIVersion, p.Kind, mesh.APIVersion, PlanKind)
	}
	if p.Metadata.Fingerprint == "" {
		bad("metadata.fingerprint is empty; plans must be made from a snapshot (re-run the planner)")
	}
	seen := map[string]int{}
	for i := range p.Steps {
		s := &p.Steps[i]
		where := fmt.Sprintf("steps[%d] %q", i, s.ID)
		if s.ID == "" {
			bad("steps[%d]: id is empty", i)
		}
		if j, dup := seen[s.ID]; dup {
			bad("%s: id repeats steps[%d]", where, j)
		}
		seen[s.ID] = i
		validateStep(s, where, bad)
		for _, d := range s.DependsOn {
			j, ok := seen[d]
			switch {
			case !ok && p.indexOf(d) < 0:
				bad("%s: depends on unknown step %q", where, d)
			case !ok || j >= i:
				bad("%s: depends on %q, which comes later; a step may only depend on earlier steps", where, d)
			}
		}
		for _, ref := range backupRefs(s) {
			j, ok := seen[ref]
			if ref == "" {
				bad("%s: deletes without naming a backup step; nothing is deleted without a backup", where)
			} else if !ok || j >= i {
				bad("%s: names backup step %q, which does not come before it", where, ref)
			} else if p.Steps[j].Backup == nil {
				bad("%s: names %q as its backup, but that step is not a Backup", where, ref)
			}
		}
		if s.Rollback != nil {
			validateStep(s.Rollback, where+" rollback", bad)
			if s.Rollback.Rollback != nil {
				bad("%s: a rollback has its own rollback; nest at most one level", where)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidPlan, errors.Join(errs...))
	}
	return nil
}

func (p *Plan) indexOf(id string) int {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return i
		}
	}
	return -1
}

func backupRefs(s *Step) []string {
	var out []string
	if s.DeleteObject != nil {
		out = append(out, s.DeleteObject.BackupStep)
	}
	if s.HelmUninstall != nil {
		out = append(out, s.HelmUninstall.BackupStep)
	}
	return out
}

var knownChecks = map[CheckType]bool{}

func init() {
	for _, c := range []CheckType{CheckDeploymentReady, CheckDaemonSetRolledOut, CheckNodeAgentReady, CheckPodsRedirected,
		CheckNoSandboxFailures, CheckTagPointsTo, CheckNoReferences, CheckGatewayOwner, CheckHelmReleaseVersion,
		CheckNodeDrained, CheckNodeSchedulable, CheckWorkloadsOnRevision, CheckTrustedAccounts, CheckFindingsClear,
		CheckDefaultRevision, CheckBackupReadable, CheckCRDsEstablished, CheckRevisionExistsAndReady} {
		knownChecks[c] = true
	}
}

func validateStep(s *Step, where string, bad func(string, ...any)) {
	switch k := s.actions(); len(k) {
	case 0:
		bad("%s: has no action; set exactly one of helmInstall, helmUpgrade, moveTag, drain, ...", where)
	case 1:
	default:
		bad("%s: has %d actions (%v); a step carries exactly one", where, len(k), k)
	}
	switch s.Risk {
	case RiskNone, RiskLow, RiskMedium, RiskHigh:
	default:
		bad("%s: risk %q is not none, low, medium or high", where, s.Risk)
	}
	for _, list := range [][]Check{s.Preconditions, s.Verification} {
		for _, c := range list {
			if !knownChecks[c.Type] {
				bad("%s: check type %q is unknown", where, c.Type)
			}
		}
	}
	if s.Verify != nil {
		for _, c := range s.Verify.Checks {
			if !knownChecks[c.Type] {
				bad("%s: check type %q is unknown", where, c.Type)
			}
		}
	}
	if s.WaitFor != nil && !knownChecks[s.WaitFor.Check.Type] {
		bad("%s: check type %q is unknown", where, s.WaitFor.Check.Type)
	}
	for _, h := range []*HelmRelease{s.HelmInstall, s.HelmUpgrade} {
		if h == nil {
			continue
		}
		if h.Release == "" || h.Namespace == "" {
			bad("%s: helm release and namespace must be set", where)
		}
		if err := h.Chart.Validate(); err != nil {
			bad("%s: %v", where, err)
		}
	}
	if s.MoveTag != nil && (s.MoveTag.Tag == "" || s.MoveTag.To == "") {
		bad("%s: moveTag needs tag and to", where)
	}
	for _, n := range []*NodeRef{s.Cordon, s.Uncordon} {
		if n != nil && n.Node == "" {
			bad("%s: node is empty", where)
		}
	}
	if s.Drain != nil && s.Drain.Node == "" {
		bad("%s: drain.node is empty", where)
	}
}

// Validate checks that exactly one source is set and that it has the right form.
func (c ChartRef) Validate() error {
	n := 0
	for _, s := range []string{c.Repository, c.OCI, c.Path} {
		if s != "" {
			n++
		}
	}
	switch {
	case c.Name == "":
		return errors.New("chart name is empty")
	case n != 1:
		return fmt.Errorf("chart %q: set exactly one of repository, oci and path (got %d)", c.Name, n)
	case c.Repository != "" && !strings.HasPrefix(c.Repository, "https://") && !strings.HasPrefix(c.Repository, "http://"):
		return fmt.Errorf("chart %q: repository %q is not an http(s) URL", c.Name, c.Repository)
	case c.OCI != "" && !strings.HasPrefix(c.OCI, "oci://"):
		return fmt.Errorf("chart %q: oci reference %q must start with oci://", c.Name, c.OCI)
	case c.Path == "" && c.Version == "":
		return fmt.Errorf("chart %q: version is empty", c.Name)
	}
	return nil
}

// EncodeYAML writes the plan as YAML.
func EncodeYAML(p *Plan) ([]byte, error) {
	b, err := EncodeJSON(p)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(b)
}

// EncodeJSON writes the plan as indented JSON.
func EncodeJSON(p *Plan) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode reads a plan from YAML or JSON strictly (unknown fields are errors) and validates it.
func Decode(data []byte) (*Plan, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: not YAML or JSON: %v", ErrInvalidPlan, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPlan, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one document; a plan file holds one plan", ErrInvalidPlan)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// NormalizeValues turns values into the JSON types a decoded plan holds (float64 numbers,
// map[string]any, []any), so a plan compares equal to itself after an encode/decode round trip.
func NormalizeValues(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("plan values are not JSON: %v", err))
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
