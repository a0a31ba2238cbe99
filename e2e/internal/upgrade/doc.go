// Package upgrade holds what the e2e upgrade feature needs besides the harness: the applier that runs
// a plan in a child process (so the feature can SIGKILL it and resume in a fresh one), the
// "mesh-health" probe, and a watcher that checks, from every pod and PodDisruptionBudget event, that
// no ambient node is ever without a ready ztunnel and no budget is ever violated.
//
// Everything goes through ambientkit's public API: observe.Live, ambient.PlanUpgrade (in the test),
// execute.New with the helmsdk adapter, execute.ApplyOptions{Resume}.
package upgrade
