package execute

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/plan"
)

// TestEveryKindAndCheckHasAnImplementation fails when plan has an action kind or a check type the
// executor's tables do not handle.
func TestEveryKindAndCheckHasAnImplementation(t *testing.T) {
	for _, k := range plan.Kinds() {
		a, ok := actions[k]
		if !ok || a.run == nil {
			t.Errorf("action kind %s has no entry in actions (action_<kind>.go)", k)
		}
		if a.counts != "" && a.node == nil {
			t.Errorf("action kind %s counts %q per node but names no node", k, a.counts)
		}
	}
	if len(actions) != len(plan.Kinds()) {
		t.Errorf("actions has %d entries, plan has %d kinds", len(actions), len(plan.Kinds()))
	}
	for _, c := range plan.CheckTypes() {
		if checkTable[c] == nil {
			t.Errorf("check type %s has no entry in checkTable (check_<type>.go)", c)
		}
	}
	if len(checkTable) != len(plan.CheckTypes()) {
		t.Errorf("checkTable has %d entries, plan has %d check types", len(checkTable), len(plan.CheckTypes()))
	}
}
