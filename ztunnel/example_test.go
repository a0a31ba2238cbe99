package ztunnel_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// A blue-green replacement of the demo mesh's ztunnel by 1.30.4, with green capacity from the
// Karpenter NodePools general and batch, moving the workloads four nodes at a time.
func ExampleBlueGreenZtunnel() {
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		panic(err)
	}
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{
		Target: mesh.MustParseVersion("1.30.4"),
		Strategy: ztunnel.BlueGreen{
			BatchSize:    4,
			Capacity:     ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}},
			LocalStorage: ztunnel.LocalStorageEvict,
		},
		Waive: []plan.Code{plan.CodePDBBlocksDrain},
		Today: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Metadata.Name)
	fmt.Println("runnable:", p.Runnable())
	waves := map[string]bool{}
	for _, st := range p.Steps {
		if st.Wave != nil {
			waves[st.Wave.ID] = true
		} else if strings.Count(st.ID, "/") <= 2 {
			fmt.Println("step:", st.ID)
		}
	}
	fmt.Println("waves of blue nodes:", len(waves))
	// Output:
	// blue-green ztunnel istio-system/ztunnel (1.30.3) → 1.30.4
	// runnable: true
	// step: prechecks
	// step: ztunnel/bluegreen/label-blue
	// step: ztunnel/bluegreen/pin-blue
	// step: ztunnel/bluegreen/namespace
	// step: ztunnel/bluegreen/install-green
	// step: ztunnel/bluegreen/hold
	// step: ztunnel/bluegreen/green-capacity
	// step: ztunnel/bluegreen/green-ready
	// step: ztunnel/bluegreen/blue-empty
	// step: ztunnel/bluegreen/unlabel-blue
	// step: ztunnel/bluegreen/release
	// waves of blue nodes: 4
}
