package execute_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func TestMeshProbe(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*mesh.Snapshot)
		healthy bool
		says    plan.Code
	}{
		{"a healthy mesh is healthy", nil, true, ""},
		{"an ambient node without a ready ztunnel is unhealthy", func(s *mesh.Snapshot) { s.Ztunnels[0].Pods[0].Ready = false }, false, plan.CodeAmbientNodeWithoutReadyZtunnel},
		{"an istiod with no ready replica is unhealthy", func(s *mesh.Snapshot) { s.Revisions[0].ReadyReplicas = 0 }, false, plan.CodeIstiodNotReady},
		{"a waivable problem does not fail the gate", func(s *mesh.Snapshot) { s.Namespaces[0].Labels = map[string]string{mesh.LabelRev: "gone"} }, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 3)
			if tc.mutate != nil {
				tc.mutate(s)
			}
			ok, why, err := execute.MeshProbe(func(context.Context) (*mesh.Snapshot, error) { return s, nil }, ambient.Gates())(context.Background(), "test")
			if err != nil || ok != tc.healthy || !strings.Contains(why, string(tc.says)) {
				t.Fatalf("got healthy=%v why=%q err=%v; want healthy=%v mentioning %q", ok, why, err, tc.healthy, tc.says)
			}
		})
	}
	boom := errors.New("boom")
	if _, _, err := execute.MeshProbe(func(context.Context) (*mesh.Snapshot, error) { return nil, boom }, ambient.Gates())(context.Background(), "x"); !errors.Is(err, boom) {
		t.Fatalf("an observation error is an error, got %v", err)
	}
}

func TestAllProbesStopsAtTheFirstUnhealthy(t *testing.T) {
	var asked []string
	p := func(name string, ok bool) execute.Probe {
		return func(context.Context, string) (bool, string, error) {
			asked = append(asked, name)
			return ok, name + " says no", nil
		}
	}
	ok, why, err := execute.AllProbes(p("a", true), p("b", false), p("c", true))(context.Background(), "s")
	if ok || why != "b says no" || err != nil || strings.Join(asked, ",") != "a,b" {
		t.Fatalf("got %v %q %v, asked %v", ok, why, err, asked)
	}
}
