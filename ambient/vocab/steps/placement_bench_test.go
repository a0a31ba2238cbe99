package steps

import (
	"fmt"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// BenchmarkPlaceWaves shows how placing every evicted pod grows with the fleet: nodes of two sizes
// in two pools, five pods per node of three sizes, every fifth workload held to a pool by its
// selector, batch 10.
func BenchmarkPlaceWaves(b *testing.B) {
	for _, n := range []int{250, 500, 1000} {
		nodes := map[string]int64{}
		labels := map[string]map[string]string{}
		var pods []fleetPod
		sched := map[string]mesh.Scheduling{}
		for i := range n {
			name := fmt.Sprintf("n%04d", i)
			nodes[name] = []int64{4000, 16000}[i%2]
			labels[name] = map[string]string{"pool": []string{"a", "b"}[i%2]}
			for j := range 5 {
				w := fmt.Sprintf("Deployment ns%03d/w%d", i%200, (i+j)%20)
				if (i+j)%5 == 0 {
					sched[w] = mesh.Scheduling{NodeSelector: map[string]string{"pool": labels[name]["pool"]}}
				}
				pods = append(pods, fleetPod{w, name, []int64{100, 250, 500}[j%3]})
			}
		}
		s := fleet(nodes, labels, pods, sched)
		order := drainAll(s)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				waves, _, _ := NewIndex(s).PlaceWaves(s, order, 10)
				if len(waves) == 0 {
					b.Fatal("no waves")
				}
			}
		})
	}
}
