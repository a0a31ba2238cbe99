package execute

import (
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// runShared is the state of one Apply, Step or Rollback call that its lanes share: the plan, the
// Lease, the journal and what the run found out about the cluster. The lanes of a wave run at the
// same time: what they share is guarded (mu, the journal's own lock, the watch hub's).
type runShared struct {
	p     *plan.Plan
	hash  string
	lease *lease
	fresh bool
	dry   bool
	// stepMode is true for Step calls: every completion is recorded at once, so an in-progress step's
	// timers persist in the journal between calls.
	stepMode bool
	// index, counted and totals never change during the run: a step's position in the plan, and node
	// counters for progress ("node 37/120 drained"): per step, its position among the steps that
	// count the same thing; totals has their number.
	index   map[string]int
	counted map[string]int
	totals  map[string]int
	// j is the journal: the record the next save writes, and the completions it does not hold yet.
	j *journalState
	// hub is the run's watches (nil in a dry run and for a client without Watch).
	hub *watchHub

	mu sync.Mutex
	// gone are the nodes found removed during this run; their steps are skipped.
	gone map[string]bool
	// reported remembers transient sandbox failures already reported.
	reported map[string]bool
	// scheduled are the nodes this run cordoned or uncordoned (or found so) itself.
	scheduled map[string]bool
	// ambientNS caches the ambient namespaces for drains (see ambientNamespacesFor).
	ambientNS   map[string]bool
	ambientNSAt time.Time
}

// run is one lane of a run: the steps outside waves go one after another on the run's main lane;
// each node unit of a wave runs on a lane of its own, at the same time as the other units of its
// wave. What a lane holds is its own: the working copies of its steps' journal entries, and what its
// last action saw of the cluster.
type run struct {
	*runShared
	// node is the wave unit's node; "" on the main lane.
	node string
	// recs are the lane's working copies of the journal entries of the steps it runs (see own);
	// touched those owned in its current unit, which publish hands to the journal.
	recs    map[string]*StepRecord
	touched map[string]bool
	// picked are the steps this lane picked up in this run; backoff counts consecutive
	// PDB-blocked drain passes per step.
	picked  map[string]bool
	backoff map[string]int
	// stuckSince is when a drain's pass first saw each budget ("namespace/name") allow no eviction
	// with all its pods ready (drainStuck).
	stuckSince map[string]time.Time
	// justSaw is what the current unit's action read or was answered, for its own postconditions.
	justSaw unitView
	// nodePods is what the last pass of a drain that finished in the current unit listed on its
	// node; lastPods the same from the previous unit, for the pod deletion that follows a drain in a
	// node's steps (see podsFromDrain). Every unit moves the first to the second.
	nodePods, lastPods podsView
	// waiting is what the lane's in-progress step waits for, set by the unit that returned
	// StatusInProgress (see waitOn); the lane wakes on it.
	waiting *waiter
	// proof is the object whose watch event woke the lane for the current unit, as the watch last
	// had it (nil when the unit was not woken by one; see watchHub.proof): a wait may judge its check
	// by it instead of reading the object again.
	proof client.Object
	// view is what holds the lane's drain right now, for wave progress (see unitHold).
	view unitHold
}

// podsView is a LIST of every pod on a node, made at a moment of the run's Clock.
type podsView struct {
	node string
	at   time.Time
	pods []corev1.Pod
}

// unitView is what a unit's action saw of the cluster just now: the node its cordon or uncordon was
// answered with, the node its drain found empty. Its own postconditions, checked in the same unit,
// read them instead of asking again; the next unit forgets them.
type unitView struct {
	step    string
	node    *corev1.Node
	drained string // node
	ambient bool   // drained of ambient pods only
}

func newRun(p *plan.Plan, hash string, dry bool) *run {
	s := &runShared{p: p, hash: hash, dry: dry, index: map[string]int{}, counted: map[string]int{}, totals: map[string]int{},
		gone: map[string]bool{}, reported: map[string]bool{}, scheduled: map[string]bool{}, j: &journalState{}}
	for i := range p.Steps {
		st := &p.Steps[i]
		s.index[st.ID] = i
		if a, ok := actions[st.Kind()]; ok && a.counts != "" && st.Node() != "" {
			s.totals[a.counts]++
			s.counted[st.ID] = s.totals[a.counts]
		}
	}
	return s.lane("")
}

// lane returns a new lane of the run, for the unit of node ("" for the main lane).
func (s *runShared) lane(node string) *run {
	return &run{runShared: s, node: node, recs: map[string]*StepRecord{}, touched: map[string]bool{},
		picked: map[string]bool{}, backoff: map[string]int{}, stuckSince: map[string]time.Time{}}
}

// saw remembers the node an action of st was answered with.
func (r *run) saw(st *plan.Step, n *corev1.Node) {
	r.justSaw.step, r.justSaw.node = st.ID, n.DeepCopy()
}

// seen returns the node st's action of this unit saw.
func (r *run) seen(st *plan.Step, node string) (*corev1.Node, bool) {
	if r.justSaw.step != st.ID || r.justSaw.node == nil || r.justSaw.node.Name != node {
		return nil, false
	}
	return r.justSaw.node, true
}

// own returns the lane's working copy of a step's journal entry, taken from the journal's record the
// first time; the lane's changes to it reach the record when it publishes them (publish, save).
// Only the lane that runs a step owns it.
func (r *run) own(id string) *StepRecord {
	rec, ok := r.recs[id]
	if !ok {
		rec = r.j.copyOf(id)
		r.recs[id] = rec
	}
	if rec.State == nil {
		rec.State = map[string]string{}
	}
	r.touched[id] = true
	return rec
}

// record returns a step's journal entry as the run knows it, for reading: the lane's own copy when
// it runs the step, else a copy of the record's; nil when the step has none.
func (r *run) record(id string) *StepRecord {
	if rec, ok := r.recs[id]; ok {
		return rec
	}
	return r.j.peek(id)
}

// status is where a step stands, as the lane knows it.
func (r *run) status(id string) StepStatus {
	if rec := r.record(id); rec != nil && rec.Status != "" {
		return rec.Status
	}
	return StatusPending
}

// publish hands the entries the lane owned in its current unit (they may have changed since the last
// publish) to the journal's record, for its next save.
func (r *run) publish() {
	if len(r.touched) == 0 {
		return
	}
	r.j.publish(r.recs, r.touched)
}

// isGone reports whether the run found the node removed.
func (r *run) isGone(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone[node]
}

// markGoneOnce records a node found gone; it reports whether this is the first time.
func (r *run) markGoneOnce(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone[node] {
		return false
	}
	r.gone[node] = true
	return true
}

// scheduledByRun reports whether this run cordoned or uncordoned the node itself.
func (r *run) scheduledByRun(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.scheduled[node]
}

func (r *run) markScheduled(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scheduled[node] = true
}

// reportOnce reports whether key is reported for the first time in this run.
func (r *run) reportOnce(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reported[key] {
		return false
	}
	r.reported[key] = true
	return true
}

// cachedAmbientNS returns the cached ambient namespaces while they are younger than ttl at now.
func (r *run) cachedAmbientNS(now time.Time, ttl time.Duration) (map[string]bool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ambientNS != nil && now.Sub(r.ambientNSAt) < ttl && !now.Before(r.ambientNSAt) {
		return r.ambientNS, true
	}
	return nil, false
}

func (r *run) cacheAmbientNS(ns map[string]bool, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ambientNS, r.ambientNSAt = ns, at
}

// copyRecord returns a deep copy of a step's entry.
func copyRecord(s *StepRecord) *StepRecord {
	c := *s
	c.State = maps.Clone(s.State)
	c.Changes = slices.Clone(s.Changes)
	return &c
}
