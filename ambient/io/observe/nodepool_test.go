package observe_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

func TestANodePoolsLimitsAndTemplateTaintsReachTheSnapshot(t *testing.T) {
	s := mustObserve(t, `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: batch}
spec:
  template:
    metadata: {labels: {team: data}}
    spec:
      taints: [{key: dedicated, value: batch, effect: NoSchedule}]
  limits: {cpu: 64, memory: 256Gi, nvidia.com/gpu: "lots"}
`)
	want := []mesh.NodePool{{Name: "batch", Labels: map[string]string{"team": "data"},
		Limits: map[string]string{"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "lots"},
		// a limit that is no quantity is kept as written but bounds nothing
		Limit:  mesh.Resources{"cpu": 64000, "memory": 256 << 30},
		Taints: []mesh.Taint{{Key: "dedicated", Value: "batch", Effect: "NoSchedule"}}}}
	if d := cmp.Diff(want, s.NodePools); d != "" {
		t.Errorf("NodePools (-want +got):\n%s", d)
	}
}
