package execute

import (
	"fmt"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// WaveProgress is where a wave stands (EventWaveProgress): each node, what holds it, and the time
// the wave may still take.
type WaveProgress struct {
	// ID names the wave; Number is its position among the plan's waves, of Of.
	ID         string
	Number, Of int
	// Nodes are the wave's nodes in plan order.
	Nodes []NodeProgress
	// ETA is how long the wave may still take: for each node, the grace period its slowest
	// terminating pod has left, then its remaining steps as long as they took the nodes that finished
	// them in this run, the longest node first; then the settle of the health gate after the wave. It
	// is 0 when nothing is known yet.
	ETA time.Duration
}

// NodeProgress is one node of a wave in a WaveProgress.
type NodeProgress struct {
	Node string
	// Status is StatusPending (not started), StatusInProgress, StatusDone or StatusFailed.
	Status StepStatus
	// Step and Kind are the step it is at (its last when done).
	Step string
	Kind plan.Kind
	// Holds says what holds it now: the budgets refusing its evictions ("PDB shop/db"), its slowest
	// terminating pod and the grace it has left, what its wait waits for.
	Holds string
	// Evicted and Pods count its drain's pods.
	Evicted, Pods int
}

// waveProgress reports the wave when it changed since it was last reported.
func (e *engine) waveProgress(r *run, w *wave) {
	wp := &WaveProgress{ID: w.id, Number: w.number, Of: w.of}
	now := e.clock.Now()
	var longest time.Duration
	counts := map[string][]string{}
	var order []string
	for _, u := range w.units {
		np := NodeProgress{Node: u.node}
		st := u.steps[min(u.next, len(u.steps)-1)]
		np.Step, np.Kind = st.ID, st.Kind()
		switch u.state {
		case unitPending:
			np.Status = StatusPending
			longest = max(longest, w.expect(u.steps))
		case unitDone:
			np.Status = StatusDone
		case unitFailed:
			np.Status = StatusFailed
			np.Holds = u.results[st.ID].Message
		default:
			np.Status = StatusInProgress
			v := u.lane.view
			np.Holds, np.Evicted, np.Pods = v.what, v.evicted, v.of
			if np.Holds == "" && u.results[st.ID].Status == StatusInProgress {
				np.Holds = u.results[st.ID].Message
			}
			left := max(v.left, w.expect(u.steps[u.next:u.next+1])-now.Sub(u.since))
			longest = max(longest, left+w.expect(u.steps[u.next+1:]))
		}
		phase := phaseName(np)
		if counts[phase] == nil {
			order = append(order, phase)
		}
		counts[phase] = append(counts[phase], np.Node)
		wp.Nodes = append(wp.Nodes, np)
	}
	if w.running() && longest > 0 {
		wp.ETA = (longest + w.settle).Round(time.Second)
	}
	msg := waveMessage(wp, order, counts)
	if msg == w.lastMsg {
		return
	}
	w.lastMsg = msg
	e.emit(Event{Type: EventWaveProgress, Total: len(r.p.Steps), Message: msg, Wave: wp,
		Done: countStatus(wp, StatusDone), Of: len(wp.Nodes)})
}

// expect is how long the steps took on average the nodes of the wave that finished them.
func (w *wave) expect(steps []*plan.Step) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sum time.Duration
	for _, st := range steps {
		if ds := w.took[st.Kind()]; len(ds) > 0 {
			var t time.Duration
			for _, d := range ds {
				t += d
			}
			sum += t / time.Duration(len(ds))
		}
	}
	return sum
}

// phaseName is what a node is doing, by the kind of its step: "draining", "waiting", ...
func phaseName(np NodeProgress) string {
	switch np.Status {
	case StatusPending:
		return "not started"
	case StatusDone:
		return "done"
	case StatusFailed:
		return "failed"
	}
	if a, ok := actions[np.Kind]; ok && a.phase != "" {
		return a.phase
	}
	return strings.ToLower(string(np.Kind))
}

// waveMessage says it in a line: "wave 3/12 ztunnel/batch/3: draining 2 (a: PDB shop/db; b: pod
// shop/x terminating, 12s of grace left), waiting 1 (c), done 7; about 40s left".
func waveMessage(wp *WaveProgress, order []string, counts map[string][]string) string {
	holds := map[string]string{}
	for _, n := range wp.Nodes {
		holds[n.Node] = n.Holds
	}
	var parts []string
	for _, phase := range order {
		nodes := counts[phase]
		if phase == "done" || phase == "not started" {
			parts = append(parts, fmt.Sprintf("%s %d", phase, len(nodes)))
			continue
		}
		var each []string
		for i, n := range nodes {
			if i == 4 {
				each = append(each, fmt.Sprintf("and %d more", len(nodes)-4))
				break
			}
			if h := holds[n]; h != "" {
				n += ": " + h
			}
			each = append(each, n)
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s)", phase, len(nodes), strings.Join(each, "; ")))
	}
	msg := fmt.Sprintf("wave %d/%d %s: %s", wp.Number, wp.Of, wp.ID, strings.Join(parts, ", "))
	if wp.ETA > 0 {
		msg += fmt.Sprintf("; about %s left", wp.ETA)
	}
	return msg
}

func countStatus(wp *WaveProgress, s StepStatus) int {
	n := 0
	for _, np := range wp.Nodes {
		if np.Status == s {
			n++
		}
	}
	return n
}
