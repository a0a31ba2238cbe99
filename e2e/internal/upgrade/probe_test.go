package upgrade

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
)

func TestHealthyWantsOneReadyZtunnelOnEveryAmbientNode(t *testing.T) {
	green := func(s *mesh.Snapshot, nodes ...string) {
		z := s.Ztunnels[0]
		z.Namespace, z.Name, z.ServiceAccount, z.Pods = "ztunnel-green", "ztunnel-green", "ztunnel-green", nil
		for _, n := range nodes {
			z.Pods = append(z.Pods, mesh.NodePod{Node: n, Pod: "zg-" + n, Version: z.Version, Ready: true})
		}
		s.Ztunnels = append(s.Ztunnels, z)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*mesh.Snapshot)
		want   string // "" when healthy
	}{
		{name: "one ztunnel on every node is healthy", mutate: func(*mesh.Snapshot) {}},
		{name: "blue and green on different nodes is healthy", mutate: func(s *mesh.Snapshot) {
			s.Ztunnels[0].Pods = s.Ztunnels[0].Pods[1:]
			green(s, s.Nodes[0].Name)
		}},
		{name: "an ambient node with no ready ztunnel is not", mutate: func(s *mesh.Snapshot) { s.Ztunnels[0].Pods[0].Ready = false },
			want: "ambient nodes without a ready ztunnel pod"},
		{name: "a node with pods of two ztunnels is not", mutate: func(s *mesh.Snapshot) { green(s, s.Nodes[0].Name) },
			want: "nodes with pods of two ztunnels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.31.4", 4)
			tc.mutate(s)
			ok, why := Healthy(s)
			if ok != (tc.want == "") || !strings.Contains(why, tc.want) {
				t.Errorf("Healthy = %v %q, want healthy=%v saying %q", ok, why, tc.want == "", tc.want)
			}
		})
	}
}
