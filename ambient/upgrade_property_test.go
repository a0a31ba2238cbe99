package ambient_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// generate builds a random but consistent mesh and upgrade options from a seed.
func generate(seed int64) (*mesh.Snapshot, ambient.UpgradeOptions) {
	r := rand.New(rand.NewSource(seed))
	versions := []string{"1.28.3", "1.29.6", "1.30.3", "1.30.8"}
	from := versions[r.Intn(len(versions))]
	s := meshtest.Large(from, 1+r.Intn(12), r.Intn(6), 1+r.Intn(10))
	rev := s.Revisions[0].Name
	for i := 0; i < r.Intn(3); i++ {
		s.Tags = append(s.Tags, mesh.Tag{Name: fmt.Sprintf("t%d", i), Revision: rev})
		s.Namespaces = append(s.Namespaces, mesh.Namespace{Name: fmt.Sprintf("tagged-%d", i), Labels: map[string]string{mesh.LabelRev: fmt.Sprintf("t%d", i)}})
	}
	if r.Intn(3) == 0 {
		s.Namespaces = append(s.Namespaces, mesh.Namespace{Name: "pinned", Labels: map[string]string{mesh.LabelRev: rev}})
	}
	if r.Intn(3) == 0 && len(s.Workloads) > 0 {
		w := s.Workloads[r.Intn(len(s.Workloads))]
		s.PodDisruptionBudgets = append(s.PodDisruptionBudgets, mesh.PodDisruptionBudget{Namespace: w.Namespace, Name: "strict-" + w.Name,
			Selector: &mesh.LabelSelector{MatchLabels: w.Labels}, MaxUnavailable: "0"})
	}
	if r.Intn(2) == 0 {
		s.Ztunnels[0].Revision = ""
	}
	s.Normalize()
	base := mesh.MustParseVersion(from)
	target, _ := ambient.DefaultReleases().Latest(mesh.Version{Major: 1, Minor: base.Minor + 1 + r.Intn(2)})
	if target.Minor > 31 {
		target = mesh.MustParseVersion("1.31.4")
	}
	opts := ambient.UpgradeOptions{Target: target, Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 1 + r.Intn(4)},
		Waive: []plan.Code{plan.CodePDBBlocksDrain, plan.CodeKubernetesUnsupportedByTarget, plan.CodeKubernetesOnlyTestedByTarget}}
	switch r.Intn(3) {
	case 0:
		opts.Ztunnel = ambient.ZtunnelInPlace{}
	case 1:
		if target.MinorsAhead(base) == 1 {
			opts.Strategy = ambient.StrategyInPlace
		}
	}
	return s, opts
}

func TestPlanUpgradePropertiesOverGeneratedMeshes(t *testing.T) {
	for seed := int64(1); seed <= 150; seed++ {
		s, opts := generate(seed)
		p, err := ambient.PlanUpgrade(s, opts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := p.Validate(); err != nil { // no step depends on a later one, one action each, ...
			t.Fatalf("seed %d: %v", seed, err)
		}
		assertHopsComplete(t, p)
		// Every hop moves at most one minor beyond the data plane it starts from.
		prev := mesh.MustParseVersion(s.Revisions[0].Version.String())
		for _, st := range p.Steps {
			if st.HelmUpgrade != nil && st.HelmUpgrade.Chart.Name == "cni" {
				to := mesh.MustParseVersion(st.HelmUpgrade.Chart.Version)
				if to.MinorsAhead(prev) > 1 {
					t.Fatalf("seed %d: CNI jumps from %s to %s", seed, prev, to)
				}
				prev = to
			}
		}
		// The JSON form is the plan's canonical encoding (EncodeYAML writes it out as YAML).
		a, _ := plan.EncodeJSON(p)
		p2, _ := ambient.PlanUpgrade(s, opts)
		b, _ := plan.EncodeJSON(p2)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: the same input gave different plans", seed)
		}
	}
}

func BenchmarkPlanUpgrade5000Nodes(b *testing.B) {
	s := meshtest.Large("1.30.3", 5000, 2000, 50) // 100,000 pods in 10,000 workloads
	opts := ambient.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 10}, Waive: []plan.Code{plan.CodePDBBlocksDrain}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := ambient.PlanUpgrade(s, opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Steps) < 5000 {
			b.Fatalf("only %d steps", len(p.Steps))
		}
	}
}
