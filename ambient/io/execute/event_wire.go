package execute

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// EventAPIVersion names the wire form of an Event: one JSON object, what the examples'
// --log-format json prints a line of and what a pipeline reads. A field may be added within a
// version; one that changes meaning makes a new version, and UnmarshalJSON refuses a version it does
// not know.
const EventAPIVersion = "ambientkit.io/event/v1"

// ErrEventVersion is wrapped when an event's wire form names a version this package cannot read.
var ErrEventVersion = errors.New("unknown event version")

// wireEvent is an Event on the wire: the error as its text, fields that do not apply left out.
type wireEvent struct {
	APIVersion string    `json:"apiVersion"`
	Time       time.Time `json:"time"`
	Type       EventType `json:"type"`
	Step       string    `json:"step,omitempty"`
	Kind       plan.Kind `json:"kind,omitempty"`
	Index      int       `json:"index,omitempty"`
	Total      int       `json:"total,omitempty"`
	Message    string    `json:"message,omitempty"`
	Node       string    `json:"node,omitempty"`
	Done       int       `json:"done,omitempty"`
	Of         int       `json:"of,omitempty"`
	PDBs       []string  `json:"pdbs,omitempty"`
	Pods       []string  `json:"pods,omitempty"`
	Rollback   string    `json:"rollback,omitempty"`
	Changes    []string  `json:"changes,omitempty"`
	Error      string    `json:"error,omitempty"`
	Wave       *wireWave `json:"wave,omitempty"`
}

// wireWave is a WaveProgress on the wire; its ETA in whole seconds.
type wireWave struct {
	ID         string     `json:"id"`
	Number     int        `json:"number"`
	Of         int        `json:"of"`
	Nodes      []wireNode `json:"nodes"`
	ETASeconds int64      `json:"etaSeconds,omitempty"`
}

// wireNode is a NodeProgress on the wire.
type wireNode struct {
	Node    string     `json:"node"`
	Status  StepStatus `json:"status"`
	Step    string     `json:"step,omitempty"`
	Kind    plan.Kind  `json:"kind,omitempty"`
	Holds   string     `json:"holds,omitempty"`
	Evicted int        `json:"evicted,omitempty"`
	Pods    int        `json:"pods,omitempty"`
}

// MarshalJSON writes the event's wire form (EventAPIVersion). Err becomes its text.
func (e Event) MarshalJSON() ([]byte, error) {
	w := wireEvent{APIVersion: EventAPIVersion, Time: e.Time, Type: e.Type, Step: e.StepID, Kind: e.Kind, Index: e.Index, Total: e.Total,
		Message: e.Message, Node: e.Node, Done: e.Done, Of: e.Of, PDBs: e.PDBs, Pods: e.Pods, Rollback: e.Rollback, Changes: e.Changes}
	if e.Err != nil {
		w.Error = e.Err.Error()
	}
	if wp := e.Wave; wp != nil {
		ww := &wireWave{ID: wp.ID, Number: wp.Number, Of: wp.Of, Nodes: []wireNode{}, ETASeconds: int64(wp.ETA / time.Second)}
		for _, n := range wp.Nodes {
			ww.Nodes = append(ww.Nodes, wireNode(n))
		}
		w.Wave = ww
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an event's wire form. An error comes back as an error with its text (its
// sentinels do not cross the wire); a version other than EventAPIVersion is refused.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.APIVersion != EventAPIVersion {
		return fmt.Errorf("%w: %q (this package reads %s)", ErrEventVersion, w.APIVersion, EventAPIVersion)
	}
	*e = Event{Type: w.Type, Time: w.Time, StepID: w.Step, Kind: w.Kind, Index: w.Index, Total: w.Total, Message: w.Message,
		Node: w.Node, Done: w.Done, Of: w.Of, PDBs: w.PDBs, Pods: w.Pods, Rollback: w.Rollback, Changes: w.Changes}
	if w.Error != "" {
		e.Err = errors.New(w.Error)
	}
	if ww := w.Wave; ww != nil {
		wp := &WaveProgress{ID: ww.ID, Number: ww.Number, Of: ww.Of, ETA: time.Duration(ww.ETASeconds) * time.Second}
		for _, n := range ww.Nodes {
			wp.Nodes = append(wp.Nodes, NodeProgress(n))
		}
		e.Wave = wp
	}
	return nil
}
