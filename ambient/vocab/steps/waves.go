package steps

import (
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Room is why Waves put nodes in later waves than the batch size alone would: the workloads whose
// pods, evicted by a wave, would have had no schedulable node left in their pools.
type Room struct {
	// Pools are the pools the workloads run in, sorted ("" for nodes without a pool label).
	Pools []string
	// Schedulable counts the schedulable, Ready nodes of Pools when the plan was made.
	Schedulable int
	// Workloads are, for each node put off, the first workload (by namespace, kind, name) it would
	// have left no room, sorted.
	Workloads []mesh.ObjectRef
	// Deferred counts the times a node was put off to a later wave for them.
	Deferred int
	// Capacity is true for a room PlaceWaves counted in capacity: then Workloads is the one workload
	// whose evicted pod no node outside the wave could take, and Pools and Schedulable are empty.
	Capacity bool
}

// Waves cuts the drain order into waves of at most batch nodes, keeping the order, so that no wave
// cordons every schedulable node a workload it evicts may move to. The nodes of a wave are cordoned
// and drained together: if they were all the nodes the evicted pods can run on, those pods would stay
// Pending until the wave ends, and a PodDisruptionBudget covering them, waiting for them to run
// again, would hold every drain of the wave: the wave could never end. A node that would leave a
// workload no such node goes to a later wave; a node alone in its wave always fits (a node drained
// by itself is no worse off than node by node).
//
// The snapshot holds no scheduling constraints, so the nodes a workload may move to are the
// schedulable, Ready nodes of the pools its pods run in (a workload pinned to a pool by a node
// selector, the common case, runs in that pool only). Only workloads on nodes drained whole
// (DrainNode.Ambient) count, without DaemonSets (their pods do not move) and pods no controller
// owns (eviction deletes them for good). The rooms it returns say, per set of pools, what cut waves
// short, sorted by pools.
func (ix *Index) Waves(s *mesh.Snapshot, order []DrainNode, batch int) ([][]DrainNode, []Room) {
	batch = max(1, batch)
	c := newRoomCounter(s, ix)
	pending := order
	var waves [][]DrainNode
	for len(pending) > 0 {
		var wave, later []DrainNode
		c.reset()
		for _, d := range pending {
			if len(wave) < batch {
				w := c.blocker(d)
				if len(wave) == 0 || w == nil {
					c.add(d)
					wave = append(wave, d)
					continue
				}
				c.putOff(w)
			}
			later = append(later, d)
		}
		waves = append(waves, wave)
		pending = later
	}
	return waves, c.rooms()
}

// roomCounter counts, for the wave being filled, the schedulable nodes each workload it evicts has
// left outside it.
type roomCounter struct {
	ix *Index
	// pool and movable are each node's pool and whether it counts as a place pods move to.
	pool    map[string]string
	movable map[string]bool
	// schedulable counts the movable nodes by pool.
	schedulable map[string]int
	// pools are each workload's pools, sorted, by workload.
	pools map[*mesh.Workload][]string
	// inWave counts the wave's movable nodes by pool; touched are the workloads its drains evict.
	inWave  map[string]int
	touched map[*mesh.Workload]bool
	// why is what put nodes off, by the pools of the workload that did.
	why map[string]*Room
}

func newRoomCounter(s *mesh.Snapshot, ix *Index) *roomCounter {
	c := &roomCounter{ix: ix, pool: map[string]string{}, movable: map[string]bool{}, schedulable: map[string]int{},
		pools: map[*mesh.Workload][]string{}, why: map[string]*Room{}}
	for _, n := range s.Nodes {
		c.pool[n.Name] = n.Pool
		if n.Ready && !n.Unschedulable {
			c.movable[n.Name] = true
			c.schedulable[n.Pool]++
		}
	}
	return c
}

func (c *roomCounter) reset() {
	c.inWave, c.touched = map[string]int{}, map[*mesh.Workload]bool{}
}

// poolsOf returns the pools of the workload's nodes, sorted.
func (c *roomCounter) poolsOf(w *mesh.Workload) []string {
	if ps, ok := c.pools[w]; ok {
		return ps
	}
	seen := map[string]bool{}
	var ps []string
	for _, n := range w.Nodes {
		p, ok := c.pool[n]
		if ok && !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	c.pools[w] = ps
	return ps
}

// outside counts the workload's movable nodes not in the wave, plus extra nodes of pool taken.
func (c *roomCounter) outside(w *mesh.Workload, pool string, extra int) (left, all int) {
	for _, p := range c.poolsOf(w) {
		all += c.schedulable[p]
		left += c.schedulable[p] - c.inWave[p]
		if p == pool {
			left -= extra
		}
	}
	return left, all
}

// evicts returns the workloads a drain of d evicts that move.
func (c *roomCounter) evicts(d DrainNode) []*mesh.Workload {
	if !d.Ambient {
		return nil
	}
	var ws []*mesh.Workload
	for _, w := range c.ix.On(d.Node.Name) {
		if w.Moves() {
			ws = append(ws, w)
		}
	}
	return ws
}

// blocker returns a workload that adding d to the wave leaves with no movable node outside it
// where it had one (or, for a workload d brings in, had any), nil when d fits.
func (c *roomCounter) blocker(d DrainNode) *mesh.Workload {
	extra := 0
	if c.movable[d.Node.Name] {
		extra = 1
	}
	pool := c.pool[d.Node.Name]
	check := func(w *mesh.Workload, brought bool) bool {
		before, all := c.outside(w, "", 0)
		after, _ := c.outside(w, pool, extra)
		return all > 0 && after < 1 && (brought || after < before)
	}
	for _, w := range c.sortedTouched() {
		if check(w, false) {
			return w
		}
	}
	for _, w := range c.evicts(d) {
		if !c.touched[w] && check(w, true) {
			return w
		}
	}
	return nil
}

func (c *roomCounter) add(d DrainNode) {
	if c.movable[d.Node.Name] {
		c.inWave[c.pool[d.Node.Name]]++
	}
	for _, w := range c.evicts(d) {
		c.touched[w] = true
	}
}

// putOff records that a node goes to a later wave for w.
func (c *roomCounter) putOff(w *mesh.Workload) {
	ps := c.poolsOf(w)
	key := strings.Join(ps, "\x00")
	r := c.why[key]
	if r == nil {
		r = &Room{Pools: ps}
		for _, p := range ps {
			r.Schedulable += c.schedulable[p]
		}
		c.why[key] = r
	}
	r.Deferred++
	ref := w.Ref()
	for _, x := range r.Workloads {
		if x == ref {
			return
		}
	}
	r.Workloads = append(r.Workloads, ref)
}

// sortedTouched returns the wave's workloads in a fixed order, so that the blocker named is the
// same on every run.
func (c *roomCounter) sortedTouched() []*mesh.Workload {
	ws := make([]*mesh.Workload, 0, len(c.touched))
	for w := range c.touched {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Ref().Less(ws[j].Ref()) })
	return ws
}

func (c *roomCounter) rooms() []Room {
	keys := make([]string, 0, len(c.why))
	for k := range c.why {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Room, 0, len(keys))
	for _, k := range keys {
		r := *c.why[k]
		sort.Slice(r.Workloads, func(i, j int) bool { return r.Workloads[i].Less(r.Workloads[j]) })
		out = append(out, r)
	}
	return out
}
