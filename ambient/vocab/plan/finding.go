package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Severity says whether a finding stops a plan.
type Severity string

// Severities, from worst to mildest.
const (
	// Blocking findings stop planning or applying; they cannot be waived.
	Blocking Severity = "blocking"
	// Waivable findings stop planning unless the caller waives their code.
	Waivable Severity = "waivable"
	// Info findings never stop anything.
	Info Severity = "info"
)

func (s Severity) rank() int {
	switch s {
	case Blocking:
		return 0
	case Waivable:
		return 1
	}
	return 2
}

// Code is a stable finding identifier. Callers branch and waive on codes; messages may change.
type Code string

// Finding is one fact a planner found about the mesh, with what to do about it.
type Finding struct {
	Code     Code           `json:"code"`
	Severity Severity       `json:"severity"`
	Object   mesh.ObjectRef `json:"object"`
	// Component is the mesh component concerned ("istiod/1-30-3", "cni", "ztunnel/istio-system/ztunnel",
	// "node/pool-a-3"), when there is one.
	Component string `json:"component,omitempty"`
	Message   string `json:"message"`
	// Remedy says what to do, naming the caller's options as the library calls them
	// (ReadinessOptions.Waypoint); RemedyOptions lists those options as data.
	Remedy string `json:"remedy,omitempty"`
	// RemedyOptions are the caller's options the remedy names, each as its text in Remedy, so that a
	// program offering them under names of its own (command-line flags) can say those (RemedyWith).
	RemedyOptions []RemedyOption `json:"remedyOptions,omitempty"`
	// Related are other objects the finding concerns besides Object, sorted: the second object of a
	// tag whose webhook configuration and Service disagree, what follows a tag with no istiod, ...
	Related []mesh.ObjectRef `json:"related,omitempty"`
	// Details are the values the message states, for callers and tests to read without parsing
	// prose; the keys a code sets are listed beside the code (codes.go).
	Details map[string]string `json:"details,omitempty"`
	// Waived is true when the caller waived this finding's code.
	Waived bool `json:"waived,omitempty"`
}

// RemedyOption is an option of a planner's caller that a finding's remedy names: Option is its name
// as the library spells it ("ReadinessOptions.Waypoint", "BlueGreen.LocalStorage", "releases.LoadFile"),
// Value the value the remedy sets ("evict"; "" when it names the option only). The remedy's text
// holds it as Text says.
type RemedyOption struct {
	Option string `json:"option"`
	Value  string `json:"value,omitempty"`
}

// Text is how a remedy names the option: "Option", or "Option: Value" with a value.
func (o RemedyOption) Text() string {
	if o.Value == "" {
		return o.Option
	}
	return o.Option + ": " + o.Value
}

// RemedyWith returns the remedy with each option it names (RemedyOptions) replaced by what name
// returns for it, a program's own name for it ("--local-storage evict"); an option name returns ""
// for stays as the library names it.
func (f Finding) RemedyWith(name func(RemedyOption) string) string {
	r := f.Remedy
	if name == nil {
		return r
	}
	for _, o := range f.RemedyOptions {
		if n := name(o); n != "" {
			r = strings.ReplaceAll(r, o.Text(), n)
		}
	}
	return r
}

// String prints "[blocking] CODE Kind ns/name: message".
func (f Finding) String() string {
	return fmt.Sprintf("[%s] %s %s: %s", f.Severity, f.Code, f.Object, f.Message)
}

// Resolve marks a finding the plan itself resolves: it becomes info, and its message says how.
func (f *Finding) Resolve(how string) {
	f.Severity = Info
	f.Message += "; the plan resolves it: " + how
}

// Stops reports whether the finding stops a plan: blocking, or waivable and not waived.
func (f Finding) Stops() bool {
	return f.Severity == Blocking || (f.Severity == Waivable && !f.Waived)
}

// SortFindings orders findings by severity, code, object and message, so output is deterministic.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity.rank() != b.Severity.rank() {
			return a.Severity.rank() < b.Severity.rank()
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		if a.Object.String() != b.Object.String() {
			return a.Object.String() < b.Object.String()
		}
		if a.Component != b.Component {
			return a.Component < b.Component
		}
		return a.Message < b.Message
	})
}

// Codes returns the codes of the findings, in order, for tests and quick checks.
func Codes(fs []Finding) []Code {
	out := make([]Code, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

// Stopping returns the findings that stop a plan.
func Stopping(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Stops() {
			out = append(out, f)
		}
	}
	return out
}
