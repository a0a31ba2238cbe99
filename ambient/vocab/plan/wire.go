package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Status says whether a plan can run, as its document states it for programs that read it:
// StatusRunnable, StatusNeedsWaiver or StatusBlocked. It is written from the plan's findings and
// steps when the plan is encoded, and ignored when one is decoded: an executor judges the plan
// itself (Runnable), never a field that an edit could have changed.
type Status string

// Statuses.
const (
	// StatusRunnable: no finding stops the plan and no step is blocked.
	StatusRunnable Status = "runnable"
	// StatusNeedsWaiver: only waivable findings stop it; waiving their codes makes it runnable.
	StatusNeedsWaiver Status = "needs-waiver"
	// StatusBlocked: a blocking finding or a blocked step stops it; only fixing the cause helps.
	StatusBlocked Status = "blocked"
)

// Status judges the plan: blocked, needs a waiver, or runnable.
func (p *Plan) Status() Status {
	waivable := false
	for _, f := range Stopping(p.Findings) {
		if f.Severity == Blocking {
			return StatusBlocked
		}
		waivable = true
	}
	for _, s := range p.Steps {
		if s.Blocked != "" {
			return StatusBlocked
		}
	}
	if waivable {
		return StatusNeedsWaiver
	}
	return StatusRunnable
}

// wirePlan is a Plan as its document holds it: the status beside the metadata, and the lists of
// findings and steps always present ([] when empty), so that a program reading the document needs
// no case for a missing or null list.
type wirePlan struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   Metadata  `json:"metadata"`
	Status     Status    `json:"status,omitempty"`
	Findings   []Finding `json:"findings"`
	// Verdicts is optional (added within v1alpha3): a plan made before it has none.
	Verdicts []Verdict `json:"verdicts,omitempty"`
	Steps    []Step    `json:"steps"`
}

// MarshalJSON writes the plan's document (wirePlan).
func (p Plan) MarshalJSON() ([]byte, error) {
	w := wirePlan{APIVersion: p.APIVersion, Kind: p.Kind, Metadata: p.Metadata, Status: p.Status(), Findings: p.Findings, Verdicts: p.Verdicts, Steps: p.Steps}
	if w.Findings == nil {
		w.Findings = []Finding{}
	}
	if w.Steps == nil {
		w.Steps = []Step{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the plan's document; the status is dropped (Status judges the plan again),
// and empty lists read as none.
func (p *Plan) UnmarshalJSON(b []byte) error {
	var w wirePlan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	if w.Status != "" && w.Status != StatusRunnable && w.Status != StatusNeedsWaiver && w.Status != StatusBlocked {
		return fmt.Errorf("status %q is not %s, %s or %s", w.Status, StatusRunnable, StatusNeedsWaiver, StatusBlocked)
	}
	*p = Plan{APIVersion: w.APIVersion, Kind: w.Kind, Metadata: w.Metadata, Findings: w.Findings, Verdicts: w.Verdicts, Steps: w.Steps}
	if len(p.Findings) == 0 {
		p.Findings = nil
	}
	if len(p.Steps) == 0 {
		p.Steps = nil
	}
	return nil
}

// Options echo the options a planner was called with, for the reviewer. In Go each is a string
// ("1", "true", "PDB_BLOCKS_DRAIN,ZTUNNEL_ROLLOUT_INCOMPLETE"); in the document an option of a
// known type (optionTypes) is written as that type: a number, a boolean, or a list of strings.
type Options map[string]string

// optionType is how an option is written in the document.
type optionType struct {
	kind string // "int", "bool" or "list"
	sep  string // a list's separator in the Go string
}

// optionTypes are the options the planners echo that are not free text: batch sizes and counts
// (numbers), switches (booleans), and lists, with the separator each planner joins them with.
var optionTypes = map[string]optionType{
	"batchSize":        {kind: "int"},
	"restartBatchSize": {kind: "int"},
	"relabel":          {kind: "int"},
	"restart":          {kind: "bool"},
	"createWaypoint":   {kind: "bool"},
	"waive":            {kind: "list", sep: ","},
	"greenNodePools":   {kind: "list", sep: ","},
	"trustList":        {kind: "list", sep: ","},
	"hops":             {kind: "list", sep: ", "},
	"apply":            {kind: "list", sep: ", "},
	"keep":             {kind: "list", sep: ", "},
	"delete":           {kind: "list", sep: ", "},
	"waypointServices": {kind: "list", sep: ", "},
}

// MarshalJSON writes each option as its type (optionTypes); a value that does not read as its
// type is written as the string it is, so nothing is lost.
func (o Options) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]any, len(o))
	for _, k := range keys {
		out[k] = typedOption(k, o[k])
	}
	return json.Marshal(out)
}

func typedOption(k, v string) any {
	t, ok := optionTypes[k]
	if !ok {
		return v
	}
	switch t.kind {
	case "int":
		if n, err := strconv.Atoi(v); err == nil && strconv.Itoa(n) == v {
			return n
		}
	case "bool":
		if b, err := strconv.ParseBool(v); err == nil && strconv.FormatBool(b) == v {
			return b
		}
	case "list":
		if v == "" {
			return []string{}
		}
		return strings.Split(v, t.sep)
	}
	return v
}

// UnmarshalJSON reads options written as strings, numbers, booleans or lists of strings back into
// the strings a planner echoes (a list joined with its separator).
func (o *Options) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*o = nil
		return nil
	}
	out := make(Options, len(raw))
	for k, r := range raw {
		var s string
		var n json.Number
		var bl bool
		var list []string
		switch {
		case json.Unmarshal(r, &s) == nil:
			out[k] = s
		case json.Unmarshal(r, &bl) == nil:
			out[k] = strconv.FormatBool(bl)
		case json.Unmarshal(r, &list) == nil:
			sep := ","
			if t, ok := optionTypes[k]; ok && t.sep != "" {
				sep = t.sep
			}
			out[k] = strings.Join(list, sep)
		case json.Unmarshal(r, &n) == nil:
			if _, err := n.Int64(); err != nil {
				return fmt.Errorf("option %s: %s is not a whole number", k, n)
			}
			out[k] = n.String()
		default:
			return fmt.Errorf("option %s: %s is not a string, a whole number, a boolean or a list of strings", k, r)
		}
	}
	*o = out
	return nil
}
