package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Progress prints the executor's events: with format "text", a live line on a terminal (progress
// inside a step rewrites it) and one plain line per event anywhere else (a pipe, a file, a CI log:
// no terminal control codes); with format "json", one JSON object per event (JSONEvent).
type Progress struct {
	w          io.Writer
	json, live bool
	mu         sync.Mutex
	open       bool // a live line is on the screen, not ended
}

// LogFormatSpec is the --log-format flag.
var LogFormatSpec = Spec{Name: "log-format", Arg: "text|json", Usage: "progress: text (a live line on a terminal, one line per event elsewhere) or json (one object per event on stdout, for pipelines; the plan and messages go to stderr)",
	Example: "--log-format json | jq -r 'select(.type==\"StepFailed\") | .message'"}

// NewProgress returns the printer for a --log-format value.
func NewProgress(w io.Writer, format string) (*Progress, error) {
	switch format {
	case "", "text":
		return &Progress{w: w, live: IsTerminal(w)}, nil
	case "json":
		return &Progress{w: w, json: true}, nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: want text or json", ErrUsage, format)
}

// JSON reports whether events are written as JSON (and the program's other output belongs on stderr).
func (p *Progress) JSON() bool { return p.json }

// IsTerminal reports whether w is a terminal: a character device (not a pipe or a file) and TERM is
// not "dumb".
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Observe prints one event; it is an execute.Options.Observer.
func (p *Progress) Observe(ev execute.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		// The event's own wire form (execute.EventAPIVersion), which a pipeline decodes into an
		// execute.Event.
		b, _ := json.Marshal(ev)
		p.w.Write(append(b, '\n'))
		return
	}
	line := fmt.Sprintf("[%d/%d] %s %s: %s", ev.Index, ev.Total, ev.Type, ev.StepID, ev.Message)
	if ev.StepID == "" {
		line = fmt.Sprintf("%s: %s", ev.Type, ev.Message)
	}
	if !p.live {
		fmt.Fprintln(p.w, line)
	} else {
		if r := []rune(line); len(r) > 160 { // one screen line
			line = string(r[:157]) + "..."
		}
		// A wave's progress (its nodes draining, what holds each, its ETA) is a live line too.
		if ev.Type == execute.EventStepProgress || ev.Type == execute.EventRetry || ev.Type == execute.EventWaveProgress {
			fmt.Fprint(p.w, "\r\033[K"+line) // rewritten by the next event
			p.open = true
			return
		}
		if p.open {
			fmt.Fprint(p.w, "\r\033[K")
			p.open = false
		}
		fmt.Fprintln(p.w, line)
	}
	for _, c := range ev.Changes {
		if ev.Type == execute.EventDryRun {
			fmt.Fprintf(p.w, "    %s\n", c)
		}
	}
}

// End ends a live line still open, so what follows starts on its own line.
func (p *Progress) End() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// Asker asks the operator yes/no questions, or answers yes to all of them (--yes).
type Asker struct {
	In  io.Reader
	Out io.Writer
	Yes bool
}

// Ask prints the question and reads a line; only an answer starting with y is yes. With no input
// left (a pipe that ended) the answer is no.
func (a *Asker) Ask(q string) bool {
	if a.Yes {
		return true
	}
	fmt.Fprintf(a.Out, "\n%s [y/N] ", q)
	line, _ := a.readLine()
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
}

func (a *Asker) readLine() (string, error) {
	var b [1]byte
	var line []byte
	for {
		n, err := a.In.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				return string(line), nil
			}
			line = append(line, b[0])
		}
		if err != nil {
			return string(line), err
		}
	}
}

// NodeProgress prints, as drains finish, the nodes drained of all, the pods evicted, and the time left
// at the pace so far; and once per drain, the PodDisruptionBudgets it waits on. It is an
// execute.Options.Observer, for plans that drain nodes (node by node, blue-green).
type NodeProgress struct {
	w              io.Writer
	start          time.Time
	nodes, evicted int
	inStep         map[string]int
	waited         map[string]bool
}

// NewNodeProgress returns a NodeProgress writing to w, its clock started.
func NewNodeProgress(w io.Writer) *NodeProgress {
	return &NodeProgress{w: w, start: time.Now(), inStep: map[string]int{}, waited: map[string]bool{}}
}

// Observe takes one event.
func (m *NodeProgress) Observe(ev execute.Event) {
	if ev.Kind != plan.KindDrain {
		return
	}
	switch {
	case ev.Type == execute.EventStepProgress && ev.Node != "" && ev.Of > 0: // "node n/N drained"
		m.nodes = ev.Done
		m.evicted += m.inStep[ev.StepID]
		eta := time.Duration(float64(time.Since(m.start)) / float64(ev.Done) * float64(ev.Of-ev.Done)).Round(time.Second)
		fmt.Fprintf(m.w, "drained %d/%d nodes, %d pods evicted, about %s left\n", ev.Done, ev.Of, m.evicted, eta)
	case ev.Type == execute.EventStepProgress && ev.Of > 0: // pods evicted of pods to evict
		m.inStep[ev.StepID] = ev.Done
	}
	if len(ev.PDBs) > 0 && !m.waited[ev.StepID] {
		m.waited[ev.StepID] = true
		fmt.Fprintf(m.w, "%s waits on PodDisruptionBudget %v for %v\n", ev.StepID, ev.PDBs, ev.Pods)
	}
}

// String sums up: nodes drained, pods evicted, time taken.
func (m *NodeProgress) String() string {
	return fmt.Sprintf("%d nodes drained, %d pods evicted in %s", m.nodes, m.evicted, time.Since(m.start).Round(time.Second))
}
