package execute

import (
	"reflect"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestEveryKindAndCheckHasAnImplementation fails when plan has an action kind or a check type the
// executor's tables do not handle, or when an action misses a part it must declare.
func TestEveryKindAndCheckHasAnImplementation(t *testing.T) {
	kinds := map[plan.Kind]bool{}
	for _, k := range plan.Kinds() {
		kinds[k] = true
	}
	for _, k := range plan.Kinds() {
		a, ok := actions[k]
		if !ok || a.run == nil {
			t.Errorf("action kind %s has no entry in actions (action_<kind>.go)", k)
			continue
		}
		if a.backup == nil {
			t.Errorf("action kind %s does not say which backup it reads or writes (backup: usesNoBackup when none)", k)
		}
		if a.counts != "" && !countsNodes(k) {
			t.Errorf("action kind %s counts %q per node but its steps name no node (plan.Step.Node)", k, a.counts)
		}
		j := a.journal
		if j == nil {
			t.Errorf("action kind %s has no journal policy (journal: journalAtOnce, journalLooks, ...)", k)
			continue
		}
		if !j.later && (j.acrossAll || len(j.across) > 0) {
			t.Errorf("action kind %s: its completion is recorded at once, yet its policy says across which steps it stays unrecorded", k)
		}
		if j.acrossAll && len(j.across) > 0 {
			t.Errorf("action kind %s: its journal policy is both acrossAll and across some kinds", k)
		}
		for next, m := range j.across {
			if !kinds[next] {
				t.Errorf("action kind %s: its journal policy names kind %s, which plan does not have", k, next)
			}
			if m != anyNode && m != sameNode && m != otherNode {
				t.Errorf("action kind %s: its journal policy says %d for kind %s; want anyNode, sameNode or otherNode", k, m, next)
			}
		}
		if j.recordsItself && k.ReadOnly() {
			t.Errorf("action kind %s only looks, yet its journal policy says it writes the journal before its first write", k)
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

// countsNodes reports whether a step of the kind whose payload's Node field is set works on that
// node: the kinds that count per node name it so (Drain, DeletePod).
func countsNodes(k plan.Kind) bool {
	var st plan.Step
	f := reflect.ValueOf(&st).Elem().FieldByName(string(k)) // a kind is named like its Step field
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		return false
	}
	f.Set(reflect.New(f.Type().Elem()))
	node := f.Elem().FieldByName("Node")
	if !node.IsValid() || node.Kind() != reflect.String {
		return false
	}
	node.SetString("n1")
	return st.Node() == "n1"
}
