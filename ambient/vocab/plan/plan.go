package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// DocumentKind is the kind of an encoded Plan document.
const DocumentKind = "Plan"

// Plan is an ordered list of steps with the findings that shaped it.
type Plan struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	// Findings are the prechecks: blocking and unwaived waivable findings mean the plan must not run.
	Findings []Finding `json:"findings,omitempty"`
	// Verdicts give every configuration object in the operation's scope (every object of
	// mesh.ConfigGroups it concerns) the operation's word on it, sorted by object: unaffected,
	// changes, or not assessed. Nothing in scope is left out (Accounting).
	Verdicts []Verdict `json:"verdicts,omitempty"`
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
	// Options echo the options the planner was called with, for the reviewer: strings in Go, typed
	// in the document (Options).
	Options Options `json:"options,omitempty"`
	// Source says where the snapshot the plan was made from was read, as the program that planned
	// recorded it (see SourceText): "live:<context>@<server>", "offline:<folder>", or "demo" for the
	// embedded demo mesh, which is no cluster. Empty when the caller did not say. Planners do not set
	// it: they see the snapshot only.
	Source string `json:"source,omitempty"`
}

// New returns an empty plan with apiVersion and kind set.
func New(md Metadata) *Plan {
	return &Plan{APIVersion: APIVersion, Kind: DocumentKind, Metadata: md}
}

// Begin opens the plan a planner makes from s: the document's version and kind, the metadata given,
// and the fingerprint of s, which the executor compares with the live cluster before it changes
// anything (ErrPlanStale). Every primitive opens its plan here, so none can leave the fingerprint
// out; Options is never nil.
func Begin(s *mesh.Snapshot, md Metadata) *Plan {
	md.Fingerprint = s.Fingerprint()
	if md.Options == nil {
		md.Options = Options{}
	}
	return New(md)
}

// ErrInvalidPlan is wrapped by every validation and decoding error.
var ErrInvalidPlan = errors.New("invalid plan")

// ErrBlocked is wrapped by a planner's error when findings stop planning; the plan is returned with
// the findings (and no steps), so callers can still show why. ambient.ErrBlocked is the same error.
var ErrBlocked = errors.New("blocked by findings")

// ErrInvalidOptions is wrapped by errors about a planner's options or inputs the caller can fix:
// unknown waiver codes, conflicting settings, values that are not JSON. ambient.ErrInvalidOptions is
// the same error.
var ErrInvalidOptions = errors.New("invalid options")

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
// uninstalls only after the backup step they name, restores only from a backup step at or before
// the step they undo, known check types.
func (p *Plan) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.APIVersion != APIVersion || p.Kind != DocumentKind {
		bad("apiVersion/kind are %q/%q; want %q/%q (Decode converts older versions)", p.APIVersion, p.Kind, APIVersion, DocumentKind)
	}
	if p.Metadata.Fingerprint == "" {
		bad("metadata.fingerprint is empty; plans must be made from a snapshot (re-run the planner)")
	}
	if err := validateVerdicts(p.Verdicts); err != nil {
		errs = append(errs, err)
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
			if rs := s.Rollback.Restore; rs != nil {
				// A rollback runs after its step, so its backup may be the step itself or any earlier one.
				if j, ok := seen[rs.BackupStep]; !ok || p.Steps[j].Backup == nil {
					bad("%s rollback: restores from %q, which is not a Backup step at or before it", where, rs.BackupStep)
				}
			}
			if s.Rollback.Rollback != nil {
				bad("%s: a rollback has its own rollback; nest at most one level", where)
			}
		}
	}
	validateWaves(p.Steps, bad)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidPlan, errors.Join(errs...))
	}
	return nil
}

// validateWaves checks that the steps of a wave stand together, that each unit's steps depend only
// on steps before the wave or on earlier steps of their own unit, and that a wave names its node.
func validateWaves(steps []Step, bad func(string, ...any)) {
	closed := map[string]bool{}
	for i := 0; i < len(steps); {
		w := steps[i].Wave
		if w == nil {
			i++
			continue
		}
		if closed[w.ID] {
			bad("steps[%d] %q: wave %q continues after other steps; the steps of a wave stand together", i, steps[i].ID, w.ID)
		}
		start := i
		before := map[string]bool{}
		for k := 0; k < start; k++ {
			before[steps[k].ID] = true
		}
		unitOf := map[string]string{}
		for ; i < len(steps) && steps[i].Wave != nil && steps[i].Wave.ID == w.ID; i++ {
			s := &steps[i]
			where := fmt.Sprintf("steps[%d] %q", i, s.ID)
			if s.Wave.Node == "" {
				bad("%s: wave %q names no node", where, w.ID)
			}
			for _, d := range s.DependsOn {
				if before[d] {
					continue
				}
				if u, ok := unitOf[d]; ok && u != s.Wave.Node {
					bad("%s: depends on %q of node %s's unit in the same wave; units of a wave do not wait for each other", where, d, u)
				}
			}
			unitOf[s.ID] = s.Wave.Node
		}
		closed[w.ID] = true
	}
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

// validateStep checks one step's action, risk and checks.
func validateStep(s *Step, where string, bad func(string, ...any)) {
	validateAction(s, where, bad)
	switch s.Risk {
	case RiskNone, RiskLow, RiskMedium, RiskHigh:
	default:
		bad("%s: risk %q is not none, low, medium or high", where, s.Risk)
	}
	for _, list := range [][]Check{s.Preconditions, s.Postconditions} {
		for _, c := range list {
			validateCheck(c, where, bad)
		}
	}
}

// EncodeYAML writes the plan as YAML for review: the keys of each object in the order of the Go
// fields (a step starts with its id), short maps and lists on one line, and the steps that many
// nodes go through alike written once for all of them (forEachNode; Decode expands them back).
func EncodeYAML(p *Plan) ([]byte, error) {
	b, err := EncodeJSON(p)
	if err != nil {
		return nil, err
	}
	n, err := yamlTree(b)
	if err != nil {
		return nil, err
	}
	flat, err := encodeYAMLTree(n)
	if err != nil {
		return nil, err
	}
	if err := foldSteps(mappingValue(n, "steps"), p.Steps); err != nil {
		return nil, err
	}
	folded, err := encodeYAMLTree(n)
	if err != nil {
		return nil, err
	}
	// Folding is only a way of writing: keep it only when it reads back as the very plan.
	if back, err := decodeUnchecked(folded); err != nil || !sameJSON(back, b) {
		return flat, nil
	}
	return folded, nil
}

// mappingValue returns the value of a key of a YAML mapping, nil when there is none.
func mappingValue(n *yaml3.Node, key string) *yaml3.Node {
	for i := 0; n != nil && n.Kind == yaml3.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func sameJSON(p *Plan, want []byte) bool {
	got, err := EncodeJSON(p)
	return err == nil && bytes.Equal(got, want)
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

// Decode reads a plan from YAML or JSON strictly (unknown fields are errors), expands the
// forEachNode entries EncodeYAML writes, and validates it.
func Decode(data []byte) (*Plan, error) {
	p, err := decodeUnchecked(data)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeUnchecked is Decode without Validate: YAML or JSON, forEachNode entries expanded, an older
// version converted to this one, then decoded strictly.
func decodeUnchecked(data []byte) (*Plan, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: not YAML or JSON: %v", ErrInvalidPlan, err)
	}
	if j, err = unfoldSteps(j); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPlan, err)
	}
	if j, err = convert(j); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPlan, err)
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
	return &p, nil
}

// NormalizeValues turns values into the JSON types a decoded plan holds (float64 numbers,
// map[string]any, []any), so a plan compares equal to itself after an encode/decode round trip.
// Values that are not JSON (a map[any]any from yaml.v2, a channel, a NaN) give an error wrapping
// ErrInvalidOptions that names the offending key where it can.
func NormalizeValues(v map[string]any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: Helm values are not JSON data%s: %v; use map[string]any, []any, strings, numbers and booleans (sigs.k8s.io/yaml decodes YAML that way)",
			ErrInvalidOptions, badValuePath("", v), err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%w: Helm values do not read back as JSON: %v", ErrInvalidOptions, err)
	}
	return out, nil
}

// badValuePath finds the first key whose value json cannot encode, as " (at a.b.c)".
func badValuePath(prefix string, v any) string {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if _, err := json.Marshal(x[k]); err != nil {
				if deeper := badValuePath(p, x[k]); deeper != "" {
					return deeper
				}
				return " (at " + p + ")"
			}
		}
	case []any:
		for i, e := range x {
			p := fmt.Sprintf("%s[%d]", prefix, i)
			if _, err := json.Marshal(e); err != nil {
				if deeper := badValuePath(p, e); deeper != "" {
					return deeper
				}
				return " (at " + p + ")"
			}
		}
	}
	return ""
}

// MustNormalizeValues is NormalizeValues for values known to be JSON (literals in code and tests); it
// panics otherwise.
func MustNormalizeValues(v map[string]any) map[string]any {
	out, err := NormalizeValues(v)
	if err != nil {
		panic(err)
	}
	return out
}
