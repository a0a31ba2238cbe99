// Package revision plans istiod control-plane revisions. Their rules (which revisions run and are
// ready, how far a target version may be from each, tags and namespaces that name a revision that
// does not exist, with everything that follows such a tag, tags whose webhook configuration and
// Service disagree, gateways and waypoints that several revisions claim, sidecars and gateways
// outside the supported skew) are part of the compatibility gate, package compat. References lists what keeps a revision in use (tags, namespaces,
// injected pods, gateways and waypoints, what sends traffic through those waypoints, ztunnels,
// policies, the default revision); a revision is removed only when it is empty.
//
// The planners add steps through a steps.Builder: AddInstall (a new revision beside the running
// ones, with the primary revision's values), AddInPlace (every revision's release upgraded where it
// is), AddDefault (the base chart's default revision moved to the new one) and AddRemoval (approval,
// backup read back, the tag objects the old release owns taken out of it so its uninstall leaves
// them, and removal of each old revision, blocked and explained while something still refers to it).
//
// Everything here is pure.
package revision
