// Package ambient is the entry point of ambientkit: ComputeCompatibility gives one verdict over every
// component of an Istio ambient mesh (istiod revisions, istio-cni, ztunnel, sidecars, gateways and
// waypoints, per node) for a target version, and PlanUpgrade turns a snapshot into a complete,
// ordered, reviewable upgrade plan, composing the component planners (revision, cni, ztunnel, tags).
//
// The five primitives of ambientkit keep one contract: ComputeCompatibility and PlanUpgrade here,
// ztunnel.BlueGreenZtunnel, tags.MoveTag and migrate.MigrateNamespace. Each takes a mesh.Snapshot and
// an options struct whose zero values are safe, runs the compatibility gate (package compat) before
// it plans, finishes through plan.Finalize, and returns (*plan.Plan, error): bad options are an error
// wrapping plan.ErrInvalidOptions and no plan; blocking findings return the plan (its findings, no
// steps) with an error wrapping plan.ErrBlocked; unwaived waivable findings leave plan.Runnable
// false. Every plan opens with the prechecks step, which re-runs the gate against the live cluster;
// Gates gives the executor the same gate (execute.Options.Gates).
//
// All of them are pure functions: no I/O, no clock (pass Today), no randomness; the same input gives
// byte-identical output. Observe a cluster with package ambient/io/observe, apply a plan with package
// ambient/io/execute.
package ambient
