package meshtest

import (
	"fmt"
	"math/rand"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Large returns a healthy mesh at the version with the given numbers of nodes and namespaces and
// about podsPerNamespace pods in each namespace, spread over five workloads. Half the namespaces are
// ambient, half use sidecars through tag prod; every tenth workload is a StatefulSet and every
// namespace has a PodDisruptionBudget. The same arguments give the same snapshot.
func Large(version string, nodes, namespaces, podsPerNamespace int) *mesh.Snapshot {
	s := Healthy(version, nodes)
	v := mesh.MustParseVersion(version)
	rev := v.RevisionName()
	rnd := rand.New(rand.NewSource(int64(nodes*31 + namespaces)))
	names := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		names[i] = n.Name
	}
	perWorkload := max(1, podsPerNamespace/5)
	for i := 0; i < namespaces; i++ {
		ns := fmt.Sprintf("team-%04d", i)
		n := mesh.Namespace{Name: ns, Labels: map[string]string{}}
		ambient := i%2 == 0
		if ambient {
			n.Labels[mesh.LabelDataplaneMode] = "ambient"
		} else {
			n.Labels[mesh.LabelRev] = "prod"
		}
		for j := 0; j < 5; j++ {
			kind := "Deployment"
			if (i*5+j)%10 == 0 {
				kind = "StatefulSet"
			}
			w := mesh.Workload{Namespace: ns, Kind: kind, Name: fmt.Sprintf("app-%d", j), Labels: map[string]string{"app": fmt.Sprintf("app-%d", j)},
				Pods: perWorkload, Ready: perWorkload}
			seen := map[string]bool{}
			for p := 0; p < perWorkload; p++ {
				node := names[rnd.Intn(len(names))]
				if !seen[node] {
					seen[node] = true
					w.Nodes = append(w.Nodes, node)
				}
			}
			if ambient {
				w.Mode = mesh.ModeAmbient
				w.Redirection = map[string]int{"enabled": perWorkload}
				n.Pods.AmbientEnabled += perWorkload
			} else {
				w.Mode = mesh.ModeSidecar
				w.SidecarRevisions = map[string]int{rev: perWorkload}
				w.ProxyVersions = []mesh.Version{v}
				if n.Pods.Sidecar == nil {
					n.Pods.Sidecar = map[string]int{}
				}
				n.Pods.Sidecar[rev] += perWorkload
			}
			n.Pods.Total += perWorkload
			s.Workloads = append(s.Workloads, w)
		}
		s.Namespaces = append(s.Namespaces, n)
		s.PodDisruptionBudgets = append(s.PodDisruptionBudgets, mesh.PodDisruptionBudget{Namespace: ns, Name: "app-0",
			Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "app-0"}}, MinAvailable: "50%",
			DisruptionsAllowed: int32(perWorkload / 2), CurrentHealthy: int32(perWorkload), DesiredHealthy: int32((perWorkload + 1) / 2), ExpectedPods: int32(perWorkload)})
	}
	s.Normalize()
	return s
}
