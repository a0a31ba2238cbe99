// Package ztunnel plans replacing the ztunnel node proxy: BlueGreenZtunnel, one of the five
// primitives, and AddUpgrade for ambient.PlanUpgrade. The ztunnel rules (its version against the
// control plane it connects to, istiod's trust in its service account, overlapping DaemonSets and
// placements, a ready ztunnel on every node that runs ambient pods, the name and trust settings each
// Istio version supports) are part of the compatibility gate, package compat, which
// BlueGreenZtunnel runs before it plans.
//
// AddUpgrade adds the steps that move every ztunnel to a new version with a Strategy, each a struct
// with its own options: NodeByNode (the default: OnDelete, then per batch of nodes cordon, drain
// through the Eviction API, replace the ztunnel pod, wait until it is ready, uncordon, health gate)
// or InPlace (the DaemonSet rolls; long-lived connections on every node are reset), or BlueGreen.
// Replacing ztunnel resets the connections of every pod on a node, which is why node by node drains
// each node first.
//
// The blue-green files follow its phases: bluegreen.go (options, entry points, names and nodes),
// bluegreen_checks.go (what the plan must say first), bluegreen_pin.go (blue kept off green nodes),
// bluegreen_trust.go (istiod trusting both, then green alone), bluegreen_green.go (green installed,
// capacity), bluegreen_move.go (workloads moved in waves) and bluegreen_finish.go (blue removed).
//
// BlueGreenZtunnel (and AddUpgrade with BlueGreen) replaces ztunnel by node pool, as one plan: the
// running ztunnel (blue) is pinned off green nodes by a required node affinity, every istiod trusts
// both accounts, a second ztunnel (green) is installed in its own namespace with its own
// resourceName and blue's mesh values, on green nodes only; green capacity comes from Karpenter
// NodePools (their template labelled green, the blue nodes they launched held from drift), from
// existing nodes relabelled one at a time, or from nodes the caller adds; workloads move off the
// cordoned blue nodes in batches, stateless first and Jobs waited for; then blue is backed up and
// removed, istiod trusts green alone, and the blue nodes are reported for removal. No node ever runs
// two ztunnels; the gate reports nodes that do and ztunnels whose placements meet.
// Every upgrade pins the chart's resourceName to the running DaemonSet's name (ChartNames says what
// each chart version would name it), so that no hop renames the DaemonSet and its account; the
// trust remedy (compat.TrustList) always sets istiod's whole trust list, never a single account.
//
// Everything here is pure: a snapshot in, findings and plan steps out (through steps.Builder).
package ztunnel
