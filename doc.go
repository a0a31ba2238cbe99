// Package ambientkit makes the riskiest day-2 operations of an Istio ambient mesh safe: upgrading it
// (CRDs, istiod revisions, istio-cni, ztunnel in place, node by node or blue-green by node pool,
// gateways and waypoints through revision tags, removal of the old control plane) and migrating
// namespaces from sidecars to ambient, each step checked and reversible.
//
// The shape is observe → plan → review → execute:
//
//	snap, _ := observe.Live(ctx, client, observe.Options{})               // ambient/io/observe
//	compat, _ := ambient.ComputeCompatibility(snap, ambient.CompatibilityOptions{Target: v})
//	p, _ := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: v})  // pure, deterministic
//	runbook.Render(os.Stdout, p)                                      // review
//
// Packages: ambient (entry points), ambient/vocab/mesh (snapshot vocabulary), ambient/vocab/plan (plans, steps,
// findings, renderers), ambient/knowledge/releases (release data), ambient/io/observe (live and offline
// observation), ambient/io/demo (an embedded demo mesh), revision, cni, ztunnel, tags and migrate (pure
// planners per component), examples (thin programs) and e2e (suites against a real API server).
package ambientkit
