package ambient

import (
	"fmt"
	"io"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/revision"
)

// Strategy is how the control plane moves to a new version.
type Strategy = compat.Strategy

// Control-plane strategies.
const (
	// StrategyRevision installs the target as a new istiod revision beside the old one (canary); up to
	// two minors. It is the default.
	StrategyRevision = compat.StrategyRevision
	// StrategyInPlace upgrades the existing istiod release; one minor at a time.
	StrategyInPlace = compat.StrategyInPlace
)

// ErrInvalidOptions is wrapped by errors about options (unknown waiver codes, conflicting settings).
// It is plan.ErrInvalidOptions.
var ErrInvalidOptions = plan.ErrInvalidOptions

// CompatibilityOptions configure ComputeCompatibility. The zero value checks the current state only.
type CompatibilityOptions = compat.Options

// Compatibility is the per-component and per-node report of the compatibility gate
// (CompatibilityReport).
type Compatibility = compat.Report

// ComponentVerdict is the verdict for one component.
type ComponentVerdict = compat.ComponentVerdict

// NodeVerdict is the verdict for one node.
type NodeVerdict = compat.NodeVerdict

// Verdict statuses.
const (
	StatusOK      = compat.StatusOK
	StatusWarning = compat.StatusWarning
	StatusBlocked = compat.StatusBlocked
)

// ComputeCompatibility is the compatibility gate: it checks every component of the mesh, and each
// node, against Istio's version skew and ambient support rules (package compat), for the mesh as it
// runs or for an upgrade to opts.Target, and returns the result as a plan: its findings, and one
// step (prechecks) that re-checks them against the live cluster when the plan is applied. Every
// other primitive runs the same gate when it plans.
//
// The contract is every primitive's: bad input (a nil snapshot, a target the release data does not
// know, an unknown strategy or waiver code) is an error wrapping plan.ErrInvalidOptions and no plan;
// blocking findings return the plan (findings, no steps) with an error wrapping plan.ErrBlocked;
// unwaived waivable findings leave plan.Runnable false. CompatibilityReport gives the same findings
// as tables by component and by node.
func ComputeCompatibility(s *mesh.Snapshot, opts CompatibilityOptions) (*plan.Plan, error) {
	r, err := compat.Compute(s, opts)
	if err != nil {
		return nil, err
	}
	return compat.GatePlan(s, r, opts)
}

// CompatibilityReport runs the compatibility gate like ComputeCompatibility and returns its verdict
// per component and per node, for a report (RenderCompatibility).
func CompatibilityReport(s *mesh.Snapshot, opts CompatibilityOptions) (*Compatibility, error) {
	return compat.Compute(s, opts)
}

// RenderCompatibility writes the report as Markdown: one row per component, nodes grouped by pool
// with their verdicts, then the findings.
func RenderCompatibility(w io.Writer, c *Compatibility) error { return compat.Render(w, c) }

// Gates returns the run-time gates of the plans this module makes (execute.Options.Gates): the
// compatibility gate and what keeps a revision alive, judged by the very code that planned, so a
// gate that passed at planning passes at run time on the same mesh.
func Gates() plan.Gates {
	return plan.Gates{
		Compatibility: func(s *mesh.Snapshot, q plan.GateQuery) ([]plan.Finding, error) {
			r, err := compat.Compute(s, compat.Options{Target: q.Target, Strategy: compat.Strategy(q.Strategy), Today: q.Today, Waive: q.Waive})
			if err != nil {
				return nil, fmt.Errorf("compatibility gate: %w", err)
			}
			return r.Findings, nil
		},
		References: func(s *mesh.Snapshot, rev string) []string {
			var out []string
			for _, r := range revision.References(s, rev) {
				out = append(out, r.String())
			}
			return out
		},
	}
}
