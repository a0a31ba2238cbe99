package runbook

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

// TestEveryKindSaysWhatTheRunbookSaysOfIt fails when an action kind of the plan has no entry in
// kindTexts, an entry misses a part, or a part reads another kind's payload (it panics on a step of
// its kind with a zero payload).
func TestEveryKindSaysWhatTheRunbookSaysOfIt(t *testing.T) {
	for _, k := range plan.Kinds() {
		kt, ok := kindTexts[k]
		if !ok {
			t.Errorf("kind %s has no entry in kindTexts: say what the runbook says of it (noSummary when it changes no component)", k)
			continue
		}
		if kt.summary == nil || kt.failure == nil {
			t.Errorf("kind %s misses a part of its kindTexts entry (summary and failure are both set)", k)
			continue
		}
		s := plantest.ZeroStep(t, k)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("kind %s: a part of its kindTexts entry panics on a step of the kind: %v", k, r)
				}
			}()
			kt.summary(s)
			if kt.failure(s) == "" {
				t.Errorf("kind %s: its failure text is empty; say what a failed step leaves behind", k)
			}
		}()
	}
	if len(kindTexts) != len(plan.Kinds()) {
		t.Errorf("kindTexts has %d entries for %d kinds", len(kindTexts), len(plan.Kinds()))
	}
}
