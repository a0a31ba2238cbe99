// Package observe builds a mesh.Snapshot from Kubernetes objects.
//
// There are three ways in, and they all feed one builder, so the same objects give the same snapshot
// whichever way they arrive:
//
//   - Live reads a cluster through a controller-runtime client.Reader. Every kind is listed once,
//     cluster-wide and in pages; pods are summarised page by page and never held all at once.
//     Optional kinds that the cluster does not serve (Gateway API, Istio CRDs, Karpenter) are
//     recorded in Observation.Skipped instead of failing.
//   - Dir and FS read `kubectl get -o yaml` (or -o json) output from files: multi-document YAML,
//     `kind: List` documents and typed lists such as PodList.
//   - YAML reads one such stream.
//
// Observation only reads. The rules it applies (which Deployment is istiod, what makes a ztunnel,
// how tags, injectors and the default revision are recognised, how pods count as sidecar or ambient)
// follow the Istio charts and istiod's own logic as written down in the project's istio-facts.md.
//
// Decode and DecodeFS expose the offline decoder on its own: they turn YAML into typed objects (or
// unstructured ones for kinds client-go does not know) that can seed a controller-runtime fake client.
package observe
