package ambient_test

import (
	"fmt"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// BenchmarkPlanUpgradeScaling shows how planning grows with the mesh: nodes, namespaces (2 per 5
// nodes) and pods (50 per namespace) double from one size to the next.
func BenchmarkPlanUpgradeScaling(b *testing.B) {
	for _, n := range []int{1250, 2500, 5000} {
		s := meshtest.Large("1.30.3", n, n*2/5, 50)
		opts := ambient.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 10}, Waive: []plan.Code{plan.CodePDBBlocksDrain}}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := ambient.PlanUpgrade(s, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
