// Package migrate prepares the move of namespaces from sidecar mode to ambient mode, one namespace
// at a time. Everything here is pure: it reads a mesh.Snapshot and returns data.
//
//   - Readiness says whether a namespace can move: the installation, the namespace, every policy by
//     what ztunnel will do with it, the routes that need an HTTPRoute, whether a waypoint is needed
//     and for which Services, the observability the move breaks, and proposed objects (targetRefs
//     policies, HTTPRoutes) where the translation is mechanical. Each item is a plan.Finding.
//   - ClassifyPolicies classifies AuthorizationPolicies, PeerAuthentications and
//     RequestAuthentications the way istiod converts them for ztunnel
//     (pilot/pkg/serviceregistry/ambient/authorization.go) and ztunnel evaluates them (src/rbac.rs).
//   - LintTelemetry finds alert rules, dashboards, analysis templates, autoscaler triggers and
//     monitors that depend on sidecar metrics.
//   - DecodePolicy reads a policy's spec strictly into its istio.io/api type: a misspelt field is an
//     error, never a silently dropped rule.
//
// Proposed objects are never applied here; a plan step applies them when the caller chooses to.
package migrate
