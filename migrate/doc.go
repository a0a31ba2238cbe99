// Package migrate is about moving namespaces from sidecar mode to ambient mode.
//
// ClassifyPolicies says what the move does to each AuthorizationPolicy and PeerAuthentication of the
// namespaces: which keep working under ztunnel, which need a waypoint, which ztunnel would enforce as
// deny-all, and which block the migration. The migration planner itself (MigrateNamespace) is not
// here yet.
//
// Everything here is pure.
package migrate
