// Package compat is the compatibility gate every primitive runs when it plans
// (ambient.ComputeCompatibility, ambient.PlanUpgrade, ztunnel.BlueGreenZtunnel, tags.MoveTag,
// migrate.MigrateNamespace) and the executor re-runs before it changes anything: Istio's version
// skew and ambient support rules over a snapshot, per component and per node.
//
// The rules, each beside the upstream source it follows:
//
//   - the control plane (revision.go): revisions and their distance to a target, tags that point at
//     a missing revision or disagree between webhook and Service, sidecars and gateways on a proxy
//     the target would not support, gateways two revisions claim;
//   - istio-cni (cni.go): skew against the control plane, nodes without a ready agent,
//     redirection;
//   - ztunnel (ztunnel.go): skew, renames, overlapping DaemonSets, placement, istiod's trusted
//     accounts (TrustedBy, TrustList, TrustRemedy), nodes without a ready ztunnel;
//   - the cluster (compat.go): Kubernetes support, end of life, the Gateway API bundle, CRD
//     ownership, known versions, Helm release records.
//
// Compute returns the findings and the verdicts by component and node (Report, rendered by
// Render); GatePlan turns them into a plan with the one contract of every primitive; PrecheckStep
// is the step every plan opens with, which re-runs this gate against the live cluster at run time.
// The package is pure: no clients, no clock (Options.Today), no randomness.
package compat
