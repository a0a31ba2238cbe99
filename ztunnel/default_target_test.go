package ztunnel_test

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ztunnel"
)

func TestTheDefaultTargetCatchesZtunnelUpWithItsControlPlane(t *testing.T) {
	tests := []struct {
		name              string
		istiod, ztunnelAt string
		want              string
	}{
		{name: "a ztunnel behind its istiod takes the istiod's version", istiod: "1.31.4", ztunnelAt: "1.30.3", want: "1.31.4"},
		{name: "a ztunnel level with its istiod keeps its own version", istiod: "1.30.3", ztunnelAt: "1.30.3", want: "1.30.3"},
		{name: "a ztunnel ahead of its istiod keeps its own version, never a downgrade", istiod: "1.30.3", ztunnelAt: "1.31.0", want: "1.31.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := meshtest.Healthy(tt.istiod, 3)
			meshtest.SetZtunnel(s, tt.ztunnelAt)
			if got := ztunnel.DefaultTarget(s); got != mesh.MustParseVersion(tt.want) {
				t.Errorf("DefaultTarget = %s, want %s", got, tt.want)
			}
		})
	}
	if got := ztunnel.DefaultTarget(&mesh.Snapshot{}); !got.IsZero() {
		t.Errorf("a mesh with no ztunnel has default target %s, want none", got)
	}
}
