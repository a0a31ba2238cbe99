package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// MeshProbe returns a Probe that observes the mesh and reports it unhealthy while the compatibility
// gate (gates.Compatibility, e.g. ambient.Gates()) finds anything blocking in it as it runs: an
// ambient node without a ready ztunnel or CNI pod, istiod not ready, a tag pointing at a missing
// revision, data plane ahead of its control plane, ... It knows nothing of traffic: combine it with
// your own signals (error rate, TCP resets, latency) through AllProbes.
func MeshProbe(snapshot func(context.Context) (*mesh.Snapshot, error), gates plan.Gates) Probe {
	return func(ctx context.Context, scope string) (bool, string, error) {
		s, err := snapshot(ctx)
		if err != nil {
			return false, "", fmt.Errorf("observe the mesh for the health gate on %s: %w", scope, err)
		}
		if gates.Compatibility == nil {
			return false, "", fmt.Errorf("%w: MeshProbe needs the compatibility gate (ambient.Gates())", ErrNoGate)
		}
		findings, err := gates.Compatibility(s, plan.GateQuery{})
		if err != nil {
			return false, "", err
		}
		for _, f := range findings {
			if f.Severity == plan.Blocking {
				return false, f.String(), nil
			}
		}
		return true, "", nil
	}
}

// AllProbes returns a Probe that is healthy only when every probe is, asked in order; the first
// unhealthy one gives the reason and the rest are not asked.
func AllProbes(probes ...Probe) Probe {
	return func(ctx context.Context, scope string) (bool, string, error) {
		for _, p := range probes {
			if p == nil {
				return false, "", errors.New("AllProbes: a probe is nil")
			}
			ok, why, err := p(ctx, scope)
			if err != nil || !ok {
				return false, why, err
			}
		}
		return true, "", nil
	}
}
