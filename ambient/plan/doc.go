// Package plan holds what planners produce and executors consume: a Plan of ordered Steps, each with
// exactly one typed action, and Findings with stable codes.
//
// A plan is data. It encodes to YAML or JSON (apiVersion ambientkit.io/v1alpha1), survives review and
// hand inspection, and decodes back strictly: unknown fields, a step with no action or two, a
// dependency on a step that does not exist or comes later are all errors. It renders as a Markdown
// runbook with the helm and kubectl commands a person would type for each step.
package plan
