package ambient_test

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestPlanningNeverChangesTheCallersSnapshot plans from an unsorted snapshot (as a hand-built one
// can be) in two goroutines at once: the snapshot must be byte-identical afterwards, the plans equal,
// and go test -race must see no data race.
func TestPlanningNeverChangesTheCallersSnapshot(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 6)
	// Reverse some lists so that planning would have to sort them.
	for i, j := 0, len(s.Nodes)-1; i < j; i, j = i+1, j-1 {
		s.Nodes[i], s.Nodes[j] = s.Nodes[j], s.Nodes[i]
	}
	for i, j := 0, len(s.Workloads)-1; i < j; i, j = i+1, j-1 {
		s.Workloads[i], s.Workloads[j] = s.Workloads[j], s.Workloads[i]
	}
	before, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	opts := ambient.UpgradeOptions{Target: v("1.31.4"), Today: today, Waive: []plan.Code{plan.CodePDBBlocksDrain}}
	var wg sync.WaitGroup
	out := make([][]byte, 4)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				if _, err := ambient.ComputeCompatibility(s, ambient.CompatibilityOptions{Target: opts.Target, Today: today}); err != nil {
					t.Error(err)
				}
			}
			p, err := ambient.PlanUpgrade(s, opts)
			if err != nil {
				t.Error(err)
				return
			}
			out[i], _ = plan.EncodeYAML(p)
		}()
	}
	wg.Wait()
	after, _ := json.Marshal(s)
	if !bytes.Equal(before, after) {
		t.Fatal("planning changed the caller's snapshot")
	}
	for i := range out {
		if !bytes.Equal(out[0], out[i]) {
			t.Fatalf("plan %d differs from plan 0", i)
		}
	}
	if mesh.MustNormalized(s) == s {
		t.Fatal("the unsorted snapshot was taken as normalized; the test would prove nothing")
	}
}
