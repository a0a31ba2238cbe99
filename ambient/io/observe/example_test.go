package observe_test

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
)

// Observing a folder of `kubectl get -o yaml` output (observe.DumpCommands says which commands write
// it): here the embedded demo cluster's files.
func ExampleDir() {
	s, err := observe.Dir(context.Background(), "../demo/cluster", observe.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println("kubernetes:", s.Cluster.KubernetesVersion)
	for _, r := range s.Revisions {
		fmt.Printf("istiod revision %s: %s, %d/%d ready\n", r.Name, r.Version, r.ReadyReplicas, r.Replicas)
	}
	for _, t := range s.Tags {
		fmt.Printf("tag %s → %s\n", t.Name, t.Revision)
	}
	fmt.Println("cni:", s.CNI.Version, "on", len(s.CNI.Pods), "nodes")
	for _, z := range s.Ztunnels {
		fmt.Printf("ztunnel %s/%s: %s on %d nodes\n", z.Namespace, z.Name, z.Version, len(z.Pods))
	}
	fmt.Println("nodes:", len(s.Nodes), "namespaces:", len(s.Namespaces), "fingerprint:", s.Fingerprint()[:15])
	// Output:
	// kubernetes: 1.34.2
	// istiod revision 1-30-3: 1.30.3, 2/2 ready
	// tag canary → 1-30-3
	// tag default → 1-30-3
	// tag prod-stable → 1-30-3
	// cni: 1.30.3 on 14 nodes
	// ztunnel istio-system/ztunnel: 1.30.3 on 14 nodes
	// nodes: 14 namespaces: 11 fingerprint: sha256:142fa484
}
