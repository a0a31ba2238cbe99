// Package cni checks and plans the istio-cni node agent.
//
// Check applies the CNI rules: its version against the control plane (CNI 1.x runs only with
// control plane 1.x or 1.x+1, and is upgraded after it), its rollout, its ambient configuration, the
// cni.istio.io/not-ready taint, nodes with ambient pods but no ready agent, and pods that should be
// in ambient but are not redirected.
//
// PlanUpgrade adds the CNI's in-place upgrade (the CNI is never revisioned), preconditioned on a
// ready control plane of the target minor and verified by its rollout, by the redirection of the
// ambient pods created meanwhile and by the absence of lasting sandbox failures.
//
// Everything here is pure.
package cni
