// Package cni plans the istio-cni node agent's upgrade.
//
// AddUpgrade adds the CNI's in-place upgrade (the CNI is never revisioned) to a plan being built,
// preconditioned on a ready control plane of the target minor and verified by its rollout, by the
// redirection of the ambient pods created meanwhile and by the absence of lasting sandbox failures.
// The CNI's rules (its version against the control plane, its rollout, its ambient configuration,
// the cni.istio.io/not-ready taint, nodes with ambient pods but no ready agent) are part of the
// compatibility gate, package compat.
//
// Everything here is pure.
package cni
