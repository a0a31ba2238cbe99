// Package plan holds what planners produce and executors consume: a Plan of ordered Steps, each with
// exactly one typed action, and Findings with stable codes.
//
// A plan is data. It encodes to YAML or JSON (apiVersion ambientkit.io/v1alpha3, described by the JSON Schema
// JSONSchema returns; Decode still reads and converts v1alpha2 and v1alpha1, see Versions and the compatibility rule beside APIVersion),
// survives review and hand inspection, and decodes back strictly: unknown fields, a step with no action or two, a
// dependency on a step that does not exist or comes later are all errors. In YAML, the steps that
// many nodes go through alike are written once for all of them (forEachNode, with a JSON merge patch
// for a node whose step differs); Decode expands them back, so a plan of a 1,000-node mesh stays
// well under a megabyte. JSON lists every step.
//
// A plan renders as a Markdown runbook by package ambient/vocab/plan/runbook, with the time it takes by
// package ambient/vocab/plan/estimate.
//
// The permissions a plan's run needs, and the RBAC that grants them, are derived by package
// ambient/vocab/plan/rbac.
package plan
