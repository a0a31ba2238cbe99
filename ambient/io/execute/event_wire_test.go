package execute_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func TestAnEventRoundTripsThroughItsWireForm(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	events := []execute.Event{
		{Type: execute.EventStepStarted, Time: at, StepID: "cni/upgrade", Kind: plan.KindHelmUpgrade, Index: 4, Total: 9, Message: "upgrade istio-cni"},
		{Type: execute.EventWaitingOnPDB, Time: at, StepID: "ztunnel/node/a/drain", Kind: plan.KindDrain, Index: 2, Total: 3, Node: "a",
			PDBs: []string{"shop/db"}, Pods: []string{"shop/db-0"}, Message: "waits", Err: errors.New("refused by shop/db")},
		{Type: execute.EventWaveProgress, Time: at, Done: 1, Of: 2, Wave: &execute.WaveProgress{ID: "ztunnel/batch/1", Number: 1, Of: 3, ETA: 90 * time.Second,
			Nodes: []execute.NodeProgress{{Node: "a", Status: execute.StatusInProgress, Step: "ztunnel/node/a/drain", Kind: plan.KindDrain, Holds: "PDB shop/db", Evicted: 1, Pods: 3},
				{Node: "b", Status: execute.StatusDone}}}},
		{Type: execute.EventRunFinished, Time: at, Message: "done", Changes: []string{"a", "b"}, Rollback: "cni/upgrade"},
	}
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"apiVersion":"`+execute.EventAPIVersion+`"`) {
			t.Errorf("%s: the wire form names no version: %s", ev.Type, b)
		}
		var back execute.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		errText := cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error()) })
		if d := cmp.Diff(ev, back, errText, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s does not read back (-sent +read):\n%s", ev.Type, d)
		}
	}
	var ev execute.Event
	if err := json.Unmarshal([]byte(`{"apiVersion":"ambientkit.io/event/v9","type":"StepStarted"}`), &ev); !errors.Is(err, execute.ErrEventVersion) {
		t.Errorf("an unknown version decodes: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"type":"StepStarted"}`), &ev); !errors.Is(err, execute.ErrEventVersion) {
		t.Errorf("an event with no version decodes: %v", err)
	}
}
