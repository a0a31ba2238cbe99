// Package rbac derives, from a plan's steps alone, the exact permissions its run needs of the
// cluster, and writes them as RBAC.
//
// RequiredPermissions reads each step's action (what its kind asks of the API server: kinds.go, one
// entry per plan kind, beside the executor's file that makes the requests) and each check of its
// preconditions, waits and verifications (checks.go), and for Helm steps what the Helm SDK stores and
// applies for each Istio chart (helm.go); each permission is named with the steps that need it and
// the upstream source it rests on. Permissions.Rules compacts them into rules, NotGranted compares
// them with rules a subject holds, and Render writes them as a ClusterRole and Roles with their
// bindings.
//
// What the executor needs for itself (its lock Lease, journal and backups) is added by
// execute.Executor.RequiredPermissions, and what observation reads by observe.RequiredPermissions.
package rbac
