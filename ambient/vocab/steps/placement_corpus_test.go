package steps

import (
	"fmt"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/internal/corpustest"
)

// TestPlacementOverTheCorpus: for the demo mesh and every corpus state that holds capacity, node by
// node and blue-green at batches 1 to 4, no wave leaves a pod that the placement cannot put unless
// a finding's Unplaced names it, and no node is overcommitted (replayWaves).
func TestPlacementOverTheCorpus(t *testing.T) {
	assessed := 0
	for _, st := range corpustest.States(t, "../../..") {
		s := st.Snapshot
		if !PlacementAssessed(s) {
			continue
		}
		assessed++
		ambient := s.AmbientNodes()
		var order []DrainNode
		for _, n := range s.Nodes {
			order = append(order, DrainNode{Node: n, Ambient: ambient[n.Name] > 0})
		}
		for batch := 1; batch <= 4; batch++ {
			name := fmt.Sprintf("%s, batch %d", st.Name, batch)
			waves, _, unplaced := NewIndex(s).PlaceWaves(s, order, batch)
			replayWaves(t, name+", node by node", s, waves, unplaced, true)

			var seq []SequenceWave
			waves = nil
			for i, d := range order {
				if i%batch == 0 {
					seq, waves = append(seq, SequenceWave{}), append(waves, nil)
				}
				d.Ambient, d.KeepJobs = true, true
				seq[len(seq)-1].Nodes = append(seq[len(seq)-1].Nodes, d)
				waves[len(waves)-1] = append(waves[len(waves)-1], d)
			}
			g := Growth{Source: "green", Shape: mesh.Node{Name: "green", Labels: map[string]string{}, Allocatable: mesh.Resources{"cpu": 4000, "memory": 16 << 30, "pods": 110}},
				Budget: mesh.Resources{"cpu": int64(batch) * 4000}}
			got := NewIndex(s).PlaceSequence(s, nil, seq, []Growth{g})
			replayWaves(t, name+", blue-green", s, waves, got.Unplaced, false, g)
		}
	}
	if assessed < 5 {
		t.Fatalf("only %d states hold what placement needs; the property proves little", assessed)
	}
	t.Logf("%d states placed", assessed)
}
