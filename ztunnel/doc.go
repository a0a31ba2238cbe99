// Package ztunnel plans and checks the ztunnel node proxy: its version against the control plane it
// connects to, istiod's trust in its service account, overlapping DaemonSets, per-node readiness on
// nodes that run ambient pods, and the name and trust settings each Istio version supports.
//
// Replacing ztunnel resets the long-lived connections of every pod on a node, so its planners offer
// in place, node by node (OnDelete with cordon and drain) and blue-green by node pool
// (BlueGreenZtunnel). Everything here is pure.
package ztunnel
