// Package demo embeds a small but realistic Istio ambient mesh as Kubernetes YAML, the way
// `kubectl get -o yaml` would show it, and observes it into a mesh.Snapshot.
//
// The mesh: Kubernetes v1.34.2 on 14 nodes in two Karpenter pools (general, 8 nodes with one cordoned;
// batch, 6 tainted nodes); Istio 1.30.3 installed with Helm (istio-base, istiod-1-30-3, istio-cni,
// ztunnel, istio-ingress) as revision 1-30-3; revision tags default, prod-stable and canary all
// pointing at it; sidecar namespaces (payments by tag, orders by istio-injection=enabled), ambient
// namespaces with two waypoints (one owned through the canary tag, one through the default tag), a
// StatefulSet with local storage behind a PodDisruptionBudget that blocks drains, a long-running Job,
// L4 and L7 AuthorizationPolicies, a STRICT PeerAuthentication, a VirtualService and a
// DestinationRule.
//
// Use Snapshot in examples and planner tests, and Objects to seed a controller-runtime fake client
// with the same cluster.
package demo
