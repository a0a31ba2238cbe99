// Package migrate plans the move of namespaces from sidecar mode to ambient mode, one namespace at a
// time. Everything here is pure: it reads a mesh.Snapshot and returns data.
//
//   - MigrateNamespace plans one namespace's move in the order of the Istio migration guide, each
//     step with its gate and its rollback: the waypoint and the proposals the caller chose, then
//     istio.io/use-waypoint (gate: Programmed, WaypointAccepted); istio.io/dataplane-mode=ambient
//     (gate: the pods without sidecars captured); the injection labels removed; the restart (gate:
//     no sidecar, every pod captured); a backup of every Istio and Gateway API object of the
//     namespace to a file, then the deletion of what the applied proposals replace; validation and a
//     health gate. execute.Executor applies it; RollbackTo its first step undoes it all.
//   - Order ranks namespaces for migration, smallest and least critical first.
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
