// Package plan holds what planners produce and executors consume: a Plan of ordered Steps, each with
// exactly one typed action, and Findings with stable codes.
//
// A plan is data. It encodes to YAML or JSON (apiVersion ambientkit.io/v1alpha1), survives review and
// hand inspection, and decodes back strictly: unknown fields, a step with no action or two, a
// dependency on a step that does not exist or comes later are all errors. It renders as a Markdown
// runbook with the helm and kubectl commands a person would type for each step.
//
// RequiredPermissions derives from a plan's steps the exact RBAC its run needs (each action kind's
// and each check type's requests, the Helm SDK's for each Istio chart), named with the steps that
// need it; Permissions.Rules compacts them into rules and RenderRBAC writes them as a ClusterRole and
// Roles, with the upstream source of each rule beside it.
package plan
