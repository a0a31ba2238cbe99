// Package cni plans and checks the istio-cni node agent: its version against the control plane (CNI
// 1.x runs only with control plane 1.x or 1.x+1, and is upgraded after it), its rollout, its ambient
// configuration, the cni.istio.io/not-ready taint, and whether pods that should be in ambient are
// actually redirected.
//
// The CNI is never revisioned (canary upgrades of istio-cni are not supported); it moves in place.
// Everything here is pure.
package cni
