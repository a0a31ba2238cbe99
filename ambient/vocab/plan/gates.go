package plan

import (
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Gates are the judgements of the whole mesh that a plan's checks ask for at run time: the
// compatibility gate (FindingsClear checks, the prechecks step every plan starts with) and what keeps
// a revision alive (NoReferences checks). The executor takes them at construction
// (execute.Options.Gates) instead of importing the planners, so a gate is judged by the same code at
// planning and at run time; ambient.Gates returns this module's.
type Gates struct {
	// Compatibility returns the findings of the compatibility gate for the mesh in s, waived ones
	// marked.
	Compatibility func(s *mesh.Snapshot, q GateQuery) ([]Finding, error)
	// References says what still refers to the revision (tags, namespaces, pods, gateways,
	// waypoints, the default revision), one "<object>: <how>" each; empty when nothing does.
	References func(s *mesh.Snapshot, revision string) []string
}

// GateQuery is what a FindingsClear check asks of the compatibility gate.
type GateQuery struct {
	// Target is the version an upgrade moves to; zero judges the mesh as it runs.
	Target mesh.Version
	// Strategy is the control plane's strategy ("revision", "in-place"); empty means revision.
	Strategy string
	// Today is the date end of life is judged at (the executor's clock).
	Today time.Time
	// Waive lists the waivable codes accepted: the plan's and the executor's.
	Waive []Code
}

// NeedsGates reports which of g's functions the plan's checks need that g lacks, by field name
// ("Compatibility", "References"); empty when g serves the plan.
func NeedsGates(p *Plan, g Gates) []string {
	var compat, refs bool
	for i := range p.Steps {
		for _, s := range []*Step{&p.Steps[i], p.Steps[i].Rollback} {
			if s == nil {
				continue
			}
			for _, c := range s.Checks() {
				switch c.Type {
				case CheckFindingsClear:
					compat = compat || c.Params["component"] != "control-plane"
				case CheckNoReferences:
					refs = true
				}
			}
		}
	}
	var out []string
	if compat && g.Compatibility == nil {
		out = append(out, "Compatibility")
	}
	if refs && g.References == nil {
		out = append(out, "References")
	}
	return out
}
