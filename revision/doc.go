// Package revision plans and checks istiod control-plane revisions: which revisions run and are
// ready, what refers to each one (tags, namespaces, injected pods, gateways and waypoints, the default
// revision), how far a target version may be from each, and whether sidecars and gateways stay within
// the supported skew of the revision that serves them.
//
// Everything here is pure: a snapshot in, findings and plan steps out.
package revision
