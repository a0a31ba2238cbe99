// Package ambient is the entry point of ambientkit: ComputeCompatibility gives one verdict over every
// component of an Istio ambient mesh (istiod revisions, istio-cni, ztunnel, sidecars, gateways and
// waypoints, per node) for a target version, and PlanUpgrade turns a snapshot into a complete,
// ordered, reviewable upgrade plan.
//
// Both are pure functions of a mesh.Snapshot and options: no I/O, no clock (pass Today), no
// randomness; the same input gives byte-identical output. Observe a cluster with package
// ambient/observe, apply a plan with package ambient/execute.
package ambient
