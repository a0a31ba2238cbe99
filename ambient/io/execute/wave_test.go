package execute_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// unitWatch follows the node units of a run from its events: a node is moving from its cordon's
// start to its uncordon's end, and draining from its drain's start to its end.
type unitWatch struct {
	mu                     sync.Mutex
	moving, draining       map[string]bool
	maxMoving, maxDraining int
	progress               []execute.Event
	started                map[string]int
}

func newUnitWatch() *unitWatch {
	return &unitWatch{moving: map[string]bool{}, draining: map[string]bool{}, started: map[string]int{}}
}

func (u *unitWatch) observe(ev execute.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	node := ""
	if i := strings.Index(ev.StepID, "/node/"); i >= 0 {
		node, _, _ = strings.Cut(ev.StepID[i+len("/node/"):], "/")
	}
	switch {
	case ev.Type == execute.EventWaveProgress:
		u.progress = append(u.progress, ev)
	case ev.Type == execute.EventStepStarted && ev.Kind == plan.KindCordon:
		u.moving[node] = true
	case ev.Type == execute.EventStepFinished && ev.Kind == plan.KindUncordon:
		delete(u.moving, node)
	case ev.Type == execute.EventStepStarted && ev.Kind == plan.KindDrain:
		u.draining[node] = true
	case ev.Type == execute.EventStepFinished && ev.Kind == plan.KindDrain:
		delete(u.draining, node)
	}
	if ev.Type == execute.EventStepStarted {
		u.started[ev.StepID]++
	}
	u.maxMoving = max(u.maxMoving, len(u.moving))
	u.maxDraining = max(u.maxDraining, len(u.draining))
}

func TestAWavesNodesMoveAtTheSameTimeUpToTheBatchAndNeverMore(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	for _, tc := range []struct {
		name         string
		batch, limit int
		want         int
	}{
		{"a wave of three moves its three nodes at once", 3, 0, 3},
		{"MaxNodesAtOnce caps a wave's nodes moving at once", 3, 2, 2},
		{"waves of one move one node at a time", 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := upgradeWorld(t, 6)
			p := upgradePlanBatch(w, tc.batch)
			uw := newUnitWatch()
			res, err := w.Executor(func(o *execute.Options) { o.Observer, o.MaxNodesAtOnce = uw.observe, tc.limit }).
				Apply(context.Background(), p, execute.ApplyOptions{})
			if err != nil || !res.Done {
				t.Fatalf("Apply: %v (done %v)", err, res != nil && res.Done)
			}
			if uw.maxMoving != tc.want || uw.maxDraining != tc.want {
				t.Errorf("at most %d nodes moved and %d drained at once; want %d", uw.maxMoving, uw.maxDraining, tc.want)
			}
			for id, n := range uw.started {
				if n != 1 {
					t.Errorf("step %s started %d times", id, n)
				}
			}
			sameMeshAsSequential(t, w, 6)
		})
	}
}

func TestWaveProgressSaysWhichNodesDrainAndWhatHoldsThem(t *testing.T) {
	w := upgradeWorld(t, 3)
	uw := newUnitWatch()
	if _, err := w.Executor(func(o *execute.Options) { o.Observer = uw.observe }).Apply(context.Background(), upgradePlanBatch(w, 3), execute.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	var draining, held, done bool
	for _, ev := range uw.progress {
		wp := ev.Wave
		if wp == nil || wp.ID != "ztunnel/batch/1" || wp.Number != 1 || wp.Of != 1 || len(wp.Nodes) != 3 {
			t.Fatalf("WaveProgress %+v: want wave ztunnel/batch/1 (1 of 1) with 3 nodes", wp)
		}
		for _, n := range wp.Nodes {
			if n.Kind == plan.KindDrain && n.Status == execute.StatusInProgress {
				draining = draining || strings.Contains(ev.Message, "draining")
				// shop/db-0 on the second node: its budget refuses it twice.
				held = held || (strings.Contains(n.Holds, "PDB shop/db") && strings.Contains(ev.Message, n.Node+": PDB shop/db"))
			}
		}
		done = ev.Done == 3 && ev.Of == 3
	}
	if !draining || !held || !done {
		t.Errorf("wave progress: a node draining %v, one held by its budget %v, the wave done at the end %v; events:\n%s",
			draining, held, done, messages(uw.progress))
	}
}

func messages(evs []execute.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Message + "\n")
	}
	return b.String()
}

// TestAFailedNodeStopsItsWaveResumesExactlyItsUnitsAndRollsBackNodeByNode: a drain that cannot
// finish fails its node; the wave's other nodes stop at a recorded step; the error and the result
// say where each stands; a resumed run finishes the same units to the clean run's end state, and a
// rollback instead undoes each node's work.
func TestAFailedNodeStopsItsWaveResumesExactlyItsUnitsAndRollsBackNodeByNode(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	clean := upgradeWorld(t, 3)
	if _, err := clean.Executor().Apply(context.Background(), upgradePlanBatch(clean, 3), execute.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	fail := func(t *testing.T) (*world, *plan.Plan, execute.Journal) {
		w := upgradeWorld(t, 3)
		p := upgradePlanBatch(w, 3)
		j := w.Journal()
		w.RefuseEvictions("shop/cart-2", 1<<30) // no budget covers it: the drain of node 3 times out
		res, err := w.Executor(func(o *execute.Options) { o.Journal = j }).Apply(context.Background(), p, execute.ApplyOptions{})
		var we *execute.WaveError
		if !errors.As(err, &we) || !errors.Is(err, execute.ErrTimeout) {
			t.Fatalf("Apply: %v; want a *WaveError wrapping ErrTimeout", err)
		}
		if we.Wave != "ztunnel/batch/1" || len(we.Nodes) != 3 || len(res.Nodes) != 3 {
			t.Fatalf("wave %q, %d nodes (result %d); want ztunnel/batch/1 with 3", we.Wave, len(we.Nodes), len(res.Nodes))
		}
		third := we.Nodes[2]
		if third.Status != execute.StatusFailed || !strings.HasSuffix(third.Step, "/drain") {
			t.Errorf("node 3 stands %s at %s; want failed at its drain", third.Status, third.Step)
		}
		for _, n := range we.Nodes[:2] {
			if n.Status == execute.StatusPending || n.Status == execute.StatusFailed {
				t.Errorf("node %s stands %s at %s; want it done or at a step it began", n.Node, n.Status, n.Step)
			}
		}
		if !strings.Contains(err.Error(), we.Nodes[2].Node+" failed at ") {
			t.Errorf("the error does not say where node 3 stands: %v", err)
		}
		w.RefuseEvictions("shop/cart-2", 0)
		return w, p, j
	}
	t.Run("a resumed run finishes exactly the wave's units", func(t *testing.T) {
		w, p, j := fail(t)
		uw := newUnitWatch()
		res, err := w.Executor(func(o *execute.Options) { o.Journal, o.Observer = j, uw.observe }).Apply(context.Background(), p, execute.ApplyOptions{Resume: true})
		if err != nil || !res.Done || !res.Resumed {
			t.Fatalf("resume: %v (done %v)", err, res != nil && res.Done)
		}
		for id := range uw.started {
			if strings.HasSuffix(id, "/cordon") {
				t.Errorf("the resumed run cordoned again: %s", id)
			}
		}
		sameOutcome(t, w, clean.State(), clean.Effects())
	})
	t.Run("a rollback undoes each node's work", func(t *testing.T) {
		w, p, j := fail(t)
		out, err := w.Executor(func(o *execute.Options) { o.Journal = j }).RollbackTo(context.Background(), p, "ztunnel/node/"+w.Model.Nodes[0].Name+"/cordon")
		if err != nil {
			t.Fatalf("RollbackTo: %v", err)
		}
		if len(out) == 0 {
			t.Fatal("nothing was rolled back")
		}
		for _, n := range w.Model.Nodes {
			if w.State().Nodes[n.Name] {
				t.Errorf("node %s is still cordoned after the rollback", n.Name)
			}
		}
	})
}

// TestStepCallsDriveAWavesNodesAtOnce: a controller calling Step for the plan's steps in order, again
// while a step is in progress, moves the wave's nodes together, and the results say where each stands.
func TestStepCallsDriveAWavesNodesAtOnce(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	w := upgradeWorld(t, 3)
	p := upgradePlanBatch(w, 3)
	uw := newUnitWatch()
	e := w.Executor(func(o *execute.Options) { o.Observer = uw.observe })
	units := 0
	for i := range p.Steps {
		st := &p.Steps[i]
		for calls := 0; ; calls++ {
			if calls > 200 {
				t.Fatalf("step %s still in progress after 200 calls", st.ID)
			}
			sr, err := e.Step(context.Background(), p, st.ID)
			if err != nil {
				t.Fatalf("Step %s: %v", st.ID, err)
			}
			if st.Wave != nil && len(sr.Units) == 3 {
				units++
			}
			if sr.Status == execute.StatusDone {
				break
			}
			w.Clock.Advance(max(sr.RetryAfter, 1e9))
		}
	}
	if uw.maxDraining != 3 {
		t.Errorf("at most %d nodes drained at once under Step calls; want 3", uw.maxDraining)
	}
	if units == 0 {
		t.Error("no Step result of a wave step said where its nodes stand")
	}
	sameMeshAsSequential(t, w, 3)
}

// sameMeshAsSequential compares the mesh a run left (nodes, labels, Helm releases, the DaemonSets'
// pods) with what the same plan without waves leaves. Where the workloads' pods end up differs: a
// wave cordons its nodes first, so no evicted pod lands on a node of its wave and is evicted again
// (one after another, it may).
func sameMeshAsSequential(t *testing.T, w *world, nodes int) {
	t.Helper()
	seq := upgradeWorld(t, nodes)
	if _, err := seq.Executor().Apply(context.Background(), upgradePlan(seq), execute.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	mesh := func(s executetest.State) executetest.State {
		for k, v := range s.Pods {
			if strings.HasPrefix(v, "- ") {
				delete(s.Pods, k)
			}
		}
		return s
	}
	if d := cmp.Diff(mesh(seq.State()), mesh(w.State())); d != "" {
		t.Errorf("the mesh differs from a run without waves (-sequential +waves):\n%s", d)
	}
}
