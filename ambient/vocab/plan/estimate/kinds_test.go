package estimate

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

// TestEveryKindSaysWhatItWaitsForAndTakes fails when an action kind of the plan has no entry in
// kindTimes, an entry misses a part, or a part reads another kind's payload (it panics on a step of
// its kind with a zero payload).
func TestEveryKindSaysWhatItWaitsForAndTakes(t *testing.T) {
	for _, k := range plan.Kinds() {
		kt, ok := kindTimes[k]
		if !ok {
			t.Errorf("kind %s has no entry in kindTimes: say what its steps wait for and take (noWaits, takesNothing when nothing)", k)
			continue
		}
		if kt.waits == nil || kt.takes == nil {
			t.Errorf("kind %s misses a part of its kindTimes entry (waits and takes are both set)", k)
			continue
		}
		s := plantest.ZeroStep(t, k)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("kind %s: a part of its kindTimes entry panics on a step of the kind: %v", k, r)
				}
			}()
			kt.waits(&Waits{}, s)
			kt.takes(s, Options{}.WithDefaults())
		}()
	}
	if len(kindTimes) != len(plan.Kinds()) {
		t.Errorf("kindTimes has %d entries for %d kinds", len(kindTimes), len(plan.Kinds()))
	}
}
