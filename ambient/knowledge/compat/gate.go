package compat

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// GatePlan returns the gate's report as a plan through plan.Finalize: the findings, and the
// prechecks step that re-runs the gate when the plan is applied. Blocking findings return the plan
// without steps and an error wrapping plan.ErrBlocked.
func GatePlan(s *mesh.Snapshot, r *Report, opts Options) (*plan.Plan, error) {
	name := "compatibility of the mesh as it runs"
	options := map[string]string{}
	if !r.To.IsZero() {
		name = fmt.Sprintf("compatibility of an upgrade to %s", r.To)
		options["target"] = r.To.String()
		options["strategy"] = string(orRevision(opts.Strategy))
	}
	p := plan.Begin(s, plan.Metadata{Name: name, Operation: "compatibility", From: r.From, To: r.To, Options: options})
	p.Findings = append([]plan.Finding(nil), r.Findings...)
	p.Steps = []plan.Step{PrecheckStep("", opts.Target, opts.Strategy)}
	return plan.Finalize(p, plan.FinalizeOptions{Waive: opts.Waive})
}

// PrecheckStep is the step a plan opens with: it re-runs the compatibility gate against the live
// cluster, for an upgrade to target (zero: the mesh as it runs) with strategy, and passes only when
// nothing stops the plan that was not waived. prefix goes before its ID (chained hops).
func PrecheckStep(prefix string, target mesh.Version, strategy Strategy) plan.Step {
	args := plan.FindingsClearArgs{}
	what := "the mesh as it runs"
	if !target.IsZero() {
		args.Target, args.Strategy = target.String(), string(orRevision(strategy))
		what = "an upgrade to " + target.String()
	}
	return plan.Step{ID: prefix + "prechecks", Description: "re-run the compatibility gate against the live cluster",
		Reason: "the cluster may have changed since the plan was made; every finding must still be clear or waived", Risk: plan.RiskNone,
		Verify: &plan.Verification{Checks: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, args,
			fmt.Sprintf("the compatibility gate reports nothing that stops %s", what))}}}
}

func orRevision(s Strategy) Strategy {
	if s == "" {
		return StrategyRevision
	}
	return s
}
