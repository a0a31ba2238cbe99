// Package observe builds a mesh.Snapshot from Kubernetes objects.
//
// There are three ways in, and they all feed one builder, so the same objects give the same snapshot
// whichever way they arrive:
//
//   - Live reads a cluster through a controller-runtime client.Reader. Every kind is listed once,
//     cluster-wide and in pages; pods are summarised page by page and never held all at once.
//     Optional kinds that the cluster does not serve (Gateway API, Istio CRDs, Karpenter) are
//     recorded in Observation.Skipped instead of failing. Secrets are the exception: only Helm's
//     records of Istio's own releases are read, in the namespaces those releases live in.
//   - Dir and FS read `kubectl get -o yaml` (or -o json) output from files: multi-document YAML,
//     `kind: List` documents and typed lists such as PodList, and `kubectl version -o yaml` output
//     for the server version.
//   - YAML reads one such stream.
//
// DumpCommands gives the exact commands that save such files from a cluster, the same kinds with
// the same selectors Live uses, so that a dump and a live observation give the same snapshot. With
// the default options they are:
//
//	kubectl get namespaces,nodes,deployments.apps,...,customresourcedefinitions.apiextensions.k8s.io -A -o yaml > cluster.yaml
//	kubectl get configmaps -A --field-selector metadata.name=istio-cni-config -o yaml > configmaps.yaml
//	kubectl get services -A -l istio.io/tag -o yaml > services.yaml
//	kubectl get authorizationpolicies.security.istio.io -A -o yaml > authorizationpolicies.security.istio.io.yaml || true
//	...  (one line per optional kind: kubectl fails a whole command when one type is not served)
//	kubectl get secrets -n istio-system -l owner=helm -o yaml > helm-releases.istio-system.yaml
//	kubectl version -o yaml > version.yaml
//
// Run them in an empty folder and give its path to Dir. DumpOptions.ReleaseNamespaces names every
// namespace that holds an Istio Helm release (`helm list -A` shows them); the records of other
// releases in those namespaces are skipped undecoded. Objects the dump lacks are inferred where
// that is sound: a CRD whose objects are present (mesh.CRD.Inferred), a Helm release whose records
// are missing, from its objects' Helm metadata (mesh.HelmRelease.Inferred).
//
// Observation only reads. The rules it applies (which Deployment is istiod, what makes a ztunnel,
// how tags, injectors and the default revision are recognised, how pods count as sidecar or ambient)
// follow the Istio charts and istiod's own logic as written down in the project's istio-facts.md.
//
// Decode and DecodeFS expose the offline decoder on its own: they turn YAML into typed objects (or
// unstructured ones for kinds client-go does not know) that can seed a controller-runtime fake client.
//
// RequiredPermissions is the RBAC Live needs: list on every kind it reads, cluster-wide, and list on
// Secrets only in the namespaces of Istio's Helm releases; RequiredPermissionsFor adds watch for
// Options.WatchList.
package observe
