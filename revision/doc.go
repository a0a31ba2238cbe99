// Package revision checks and plans istiod control-plane revisions.
//
// Check reports which revisions run and are ready, how far a target version may be from each, tags
// and namespaces that name a revision that does not exist (with everything that follows such a
// tag, Followers), tags whose webhook configuration and Service disagree, gateways and waypoints
// that several revisions claim, and sidecars and gateways outside the supported skew of the
// revision that serves them. References lists what keeps a revision in use (tags, namespaces,
// injected pods, gateways and waypoints, what sends traffic through those waypoints, ztunnels,
// policies, the default revision); a revision is removed only when it is empty.
//
// The planners add steps through a steps.Builder: PlanInstall (a new revision beside the running
// ones, with the primary revision's values), PlanInPlace (every revision's release upgraded where it
// is), PlanDefault (the base chart's default revision moved to the new one) and PlanRemoval (approval,
// backup read back, the tag objects the old release owns taken out of it so its uninstall leaves
// them, and removal of each old revision, blocked and explained while something still refers to it).
//
// Everything here is pure.
package revision
