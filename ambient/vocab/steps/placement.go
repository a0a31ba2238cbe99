package steps

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Unplaced is a pod that a drain evicts and that no node left schedulable can take: it would stay
// Pending, its workload short of a replica, until room is made.
type Unplaced struct {
	Workload mesh.ObjectRef
	Pod      string
	// From is the node the drain evicts it from.
	From string
	// Requests are what the pod needs of a node.
	Requests mesh.Resources
	// Why counts, by reason ("cpu", "memory", "taint dedicated=db:NoSchedule", "node selector or
	// affinity", "anti-affinity", "topology spread", "volume data-db-0", "host port", "cordoned",
	// "drained by the wave", "not Ready"), the nodes refused for it; each node is counted under the
	// first reason it fails.
	Why map[string]int
}

// Reasons writes Why as "cpu on 3 nodes, anti-affinity on 2", the most common first.
func (u Unplaced) Reasons() string {
	keys := slices.Collect(maps.Keys(u.Why))
	sort.Slice(keys, func(i, j int) bool {
		if u.Why[keys[i]] != u.Why[keys[j]] {
			return u.Why[keys[i]] > u.Why[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		n := "nodes"
		if u.Why[k] == 1 {
			n = "node"
		}
		parts = append(parts, k+" on "+strconv.Itoa(u.Why[k])+" "+n)
	}
	if len(parts) == 0 {
		return "no node is left"
	}
	return strings.Join(parts, ", ")
}

// PlacementAssessed reports whether the snapshot holds what placing evicted pods needs: every node's
// allocatable resources and every moving workload's scheduling and pods. A snapshot observed before
// these were read (or a hand-made one) lacks them; Waves then counts nodes, not capacity.
func PlacementAssessed(s *mesh.Snapshot) bool {
	if len(s.Nodes) == 0 {
		return false
	}
	for _, n := range s.Nodes {
		if n.Allocatable == nil {
			return false
		}
	}
	for _, w := range s.Workloads {
		if w.Moves() && w.Pods > 0 && (w.Scheduling == nil || len(w.Placed) == 0) {
			return false
		}
	}
	return true
}

// placer simulates, pessimistically and deterministically, where the kube-scheduler puts the pods
// that drains evict: each pod on the open node with the most room for it (the scheduler's default
// scoring favours the least allocated node) that passes the filters the snapshot describes
// (resources, taints, cordons, node selector and affinity, volumes' node affinity, host ports,
// required pod anti-affinity both ways, required pod affinity, DoNotSchedule spread). It keeps a log
// of what it changed so that a trial can be undone.
type placer struct {
	nodes  []*pnode
	byName map[string]*pnode
	log    []move
	// anti is true when some workload has required pod anti-affinity: only then may a pod already
	// on a node refuse a newcomer, which costs a look at every placed pod.
	anti bool
	// next is the node the next search starts from, as the scheduler's nextStartNodeIndex.
	next int
}

type pnode struct {
	n    *mesh.Node
	free mesh.Resources
	pods []*ppod
	// inWave is true for a node the wave being filled cordons and drains; cordoned for one a
	// wave before (or the plan's start) cordoned and left so.
	inWave, cordoned bool
}

type ppod struct {
	w     *mesh.Workload
	place *mesh.PodPlace
	node  *pnode // nil while Pending
}

// move is one pod leaving from (nil: Pending) for to (nil: evicted, Pending).
type move struct {
	p        *ppod
	from, to *pnode
}

func newPlacer(s *mesh.Snapshot) *placer {
	pl := &placer{byName: map[string]*pnode{}}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		free := mesh.Resources{}
		for k, v := range n.Allocatable {
			free[k] = v - n.Requested[k]
		}
		pn := &pnode{n: n, free: free}
		pl.nodes = append(pl.nodes, pn)
		pl.byName[n.Name] = pn
	}
	sort.Slice(pl.nodes, func(i, j int) bool { return pl.nodes[i].n.Name < pl.nodes[j].n.Name })
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if w.Scheduling != nil && len(w.Scheduling.AntiAffinity) > 0 {
			pl.anti = true
		}
		for j := range w.Placed {
			if pn := pl.byName[w.Placed[j].Node]; pn != nil {
				pn.pods = append(pn.pods, &ppod{w: w, place: &w.Placed[j], node: pn})
			}
		}
	}
	return pl
}

// evicted returns the pods on the node that move when it is drained, in workload then pod order;
// with keepJobs the Jobs' pods finish where they are.
func (pn *pnode) evicted(keepJobs bool) []*ppod {
	var out []*ppod
	for _, p := range pn.pods {
		if p.w.Moves() && (!keepJobs || p.w.Kind != "Job" && p.w.Kind != "CronJob") {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].w.Ref(), out[j].w.Ref(); a != b {
			return a.Less(b)
		}
		return out[i].place.Name < out[j].place.Name
	})
	return out
}

func (pl *placer) relocate(p *ppod, to *pnode) {
	pl.log = append(pl.log, move{p: p, from: p.node, to: to})
	pl.apply(p, p.node, to)
}

func (pl *placer) apply(p *ppod, from, to *pnode) {
	req := p.w.Scheduling.Requests
	if from != nil {
		from.pods = slices.DeleteFunc(from.pods, func(x *ppod) bool { return x == p })
		for k, v := range req {
			from.free[k] += v
		}
	}
	if to != nil {
		to.pods = append(to.pods, p)
		for k, v := range req {
			to.free[k] -= v
		}
	}
	p.node = to
}

// mark is a point of the log to undo to, and where the search started then.
type mark struct{ log, next int }

func (pl *placer) mark() mark { return mark{len(pl.log), pl.next} }

// undo reverses every move after the mark.
func (pl *placer) undo(m mark) {
	for i := len(pl.log) - 1; i >= m.log; i-- {
		mv := pl.log[i]
		pl.apply(mv.p, mv.to, mv.from)
	}
	pl.log, pl.next = pl.log[:m.log], m.next
}

// feasibleToFind is how many nodes that pass the filters the search looks at before it picks the
// one with most room, as the scheduler bounds it in a large cluster (k8s.io/kubernetes@v1.37.2
// pkg/scheduler/schedule_one.go, numFeasibleNodesToFind with percentageOfNodesToScore unset: every
// node below 100, else 50% less 1% per 125 nodes, at least 5% and 100 nodes). It keeps planning a
// large fleet from growing with nodes × pods, and changes only which feasible node is picked.
func feasibleToFind(nodes int) int {
	if nodes < 100 {
		return nodes
	}
	pct := max(50-nodes/125, 5)
	return max(nodes*pct/100, 100)
}

// place puts the pod on the open node with the most room of the first feasibleToFind nodes that
// pass the filters, searching from where the last search stopped as the scheduler does
// (schedule_one.go, findNodesThatPassFilters from nextStartNodeIndex), or leaves it Pending and
// says why every node refused it.
func (pl *placer) place(p *ppod) (Unplaced, bool) {
	var best *pnode
	var bestScore int64 = -1
	var why map[string]int
	n := len(pl.nodes)
	want, found, seen := feasibleToFind(n), 0, 0
	for ; seen < n && found < want; seen++ {
		c := pl.nodes[(pl.next+seen)%n]
		if r := pl.refuses(p, c); r != "" {
			if why == nil {
				why = map[string]int{}
			}
			why[r]++
			continue
		}
		found++
		if s := room(c, p.w.Scheduling.Requests); s > bestScore {
			best, bestScore = c, s
		}
	}
	if n > 0 {
		pl.next = (pl.next + seen) % n
	}
	if best == nil && why == nil {
		why = map[string]int{}
	}
	if best == nil {
		return Unplaced{Workload: p.w.Ref(), Pod: p.place.Name, Requests: p.w.Scheduling.Requests, Why: why}, false
	}
	pl.relocate(p, best)
	return Unplaced{}, true
}

// room scores what is left of the node's cpu and memory after the pod, in thousandths of its
// allocatable, averaged.
func room(c *pnode, req mesh.Resources) int64 {
	var score, n int64
	for _, k := range []string{mesh.ResourceCPU, mesh.ResourceMemory} {
		if a := c.n.Allocatable[k]; a > 0 {
			score += (c.free[k] - req[k]) * 1000 / a
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return score / n
}

// refuses returns why the node cannot take the pod, "" when it can.
func (pl *placer) refuses(p *ppod, c *pnode) string {
	sc := p.w.Scheduling
	switch {
	case !c.n.Ready:
		return "not Ready"
	case c.inWave || p.node == c:
		return "drained by the wave"
	case (c.n.Unschedulable || c.cordoned) && !tolerates(sc.Tolerations, mesh.Taint{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"}):
		return "cordoned"
	}
	for _, t := range c.n.Taints {
		if (t.Effect == "NoSchedule" || t.Effect == "NoExecute") && !tolerates(sc.Tolerations, t) {
			return "taint " + t.Key + "=" + t.Value + ":" + t.Effect
		}
	}
	if !mesh.Places(sc.NodeSelector, sc.NodeAffinity, c.n.Labels) {
		return "node selector or affinity"
	}
	for _, v := range p.place.Volumes {
		if !v.Matches(c.n.Labels) {
			return "volume " + v.Claim
		}
	}
	if short := sc.Requests.FirstShort(c.free); short != "" {
		return short
	}
	if len(sc.HostPorts) > 0 {
		for _, q := range c.pods {
			if q.w.Scheduling != nil && portsClash(sc.HostPorts, q.w.Scheduling.HostPorts) {
				return "host port"
			}
		}
	}
	if r := pl.affinityRefuses(p, c); r != "" {
		return r
	}
	return ""
}

func tolerates(ts []mesh.Toleration, t mesh.Taint) bool { return mesh.Tolerated(ts, t) }

// portsClash reports whether two pods bind a host port in common ("TCP/8080" clashes with
// "TCP/10.0.0.1:8080": an address of 0.0.0.0 is every address).
func portsClash(a, b []string) bool {
	split := func(s string) (proto, ip, port string) {
		proto, rest, _ := strings.Cut(s, "/")
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			return proto, rest[:i], rest[i+1:]
		}
		return proto, "", rest
	}
	for _, x := range a {
		px, ix, nx := split(x)
		for _, y := range b {
			py, iy, ny := split(y)
			if px == py && nx == ny && (ix == "" || iy == "" || ix == iy) {
				return true
			}
		}
	}
	return false
}

// inDomain calls f for every pod on the nodes that share the node's value of key (none when the
// node lacks the key).
func (pl *placer) inDomain(c *pnode, key string, f func(*ppod) bool) bool {
	v, ok := c.n.Labels[key]
	if !ok {
		return false
	}
	for _, n := range pl.nodes {
		if w, ok := n.n.Labels[key]; !ok || w != v {
			continue
		}
		for _, q := range n.pods {
			if f(q) {
				return true
			}
		}
	}
	return false
}

// affinityRefuses applies required pod anti-affinity (the pod's terms, and the terms of the pods
// already there against it), required pod affinity and DoNotSchedule spread.
func (pl *placer) affinityRefuses(p *ppod, c *pnode) string {
	sc, ns, labels := p.w.Scheduling, p.w.Namespace, p.w.Labels
	for _, t := range sc.AntiAffinity {
		if pl.inDomain(c, t.TopologyKey, func(q *ppod) bool { return q != p && t.AppliesTo(ns, q.w.Namespace, q.w.Labels) }) {
			return "anti-affinity"
		}
	}
	for _, n := range pl.nodes {
		if !pl.anti {
			break
		}
		for _, q := range n.pods {
			if q == p || q.w.Scheduling == nil {
				continue
			}
			for _, t := range q.w.Scheduling.AntiAffinity {
				if v, ok := n.n.Labels[t.TopologyKey]; ok && c.n.Labels[t.TopologyKey] == v && t.AppliesTo(q.w.Namespace, ns, labels) {
					return "anti-affinity of " + q.w.Kind + " " + q.w.Namespace + "/" + q.w.Name
				}
			}
		}
	}
	for _, t := range sc.Affinity {
		if !pl.inDomain(c, t.TopologyKey, func(q *ppod) bool { return q != p && t.AppliesTo(ns, q.w.Namespace, q.w.Labels) }) {
			return "pod affinity"
		}
	}
	for _, sp := range sc.Spread {
		if !pl.spreadAllows(p, c, sp) {
			return "topology spread"
		}
	}
	return ""
}

// spreadAllows applies one DoNotSchedule constraint (k8s.io/kubernetes@v1.37.2
// pkg/scheduler/framework/plugins/podtopologyspread/filtering.go): the matching pods of the
// node's domain, plus the pod itself when it matches, less the smallest count of any eligible
// domain (0 when fewer than minDomains), may not exceed maxSkew. Eligible nodes carry the key and,
// under the default Honor, pass the pod's node selector and affinity (taints count only under
// Honor). Pods are counted in the pod's namespace.
func (pl *placer) spreadAllows(p *ppod, c *pnode, sp mesh.SpreadConstraint) bool {
	v, ok := c.n.Labels[sp.TopologyKey]
	if !ok {
		return false
	}
	sc := p.w.Scheduling
	counts := map[string]int{}
	for _, n := range pl.nodes {
		d, ok := n.n.Labels[sp.TopologyKey]
		if !ok {
			continue
		}
		if sp.NodeAffinityPolicy != "Ignore" && !mesh.Places(sc.NodeSelector, sc.NodeAffinity, n.n.Labels) {
			continue
		}
		if sp.NodeTaintsPolicy == "Honor" && slices.ContainsFunc(n.n.Taints, func(t mesh.Taint) bool {
			return (t.Effect == "NoSchedule" || t.Effect == "NoExecute") && !tolerates(sc.Tolerations, t)
		}) {
			continue
		}
		counts[d] += 0
		for _, q := range n.pods {
			if q != p && q.w.Namespace == p.w.Namespace && sp.Selector.Matches(q.w.Labels) {
				counts[d]++
			}
		}
	}
	low := -1
	for _, k := range counts {
		if low < 0 || k < low {
			low = k
		}
	}
	if low < 0 || int32(len(counts)) < max(1, sp.MinDomains) {
		low = 0
	}
	self := 0
	if sp.Selector.Matches(p.w.Labels) {
		self = 1
	}
	return int32(counts[v]+self-low) <= sp.MaxSkew
}

// PlaceWaves cuts the drain order into waves of at most batch nodes, as Waves does, but counts room
// in capacity rather than in nodes: before a node joins a wave, the pods its drain evicts (and those
// the wave had already put on it) are placed on the nodes the wave leaves schedulable, by the
// placer's rules; a node whose pods do not all fit goes to a later wave, where the nodes drained
// before are schedulable again (a node-by-node wave uncordons its nodes when it ends). A node alone
// in its wave is always taken: the pods no node can take are returned as Unplaced (they would stay
// Pending). The pods a wave moves stay where they were put for the waves after it. The rooms say
// which workloads put nodes off, with Capacity set. Use it when PlacementAssessed holds.
func (ix *Index) PlaceWaves(s *mesh.Snapshot, order []DrainNode, batch int) ([][]DrainNode, []Room, []Unplaced) {
	batch = max(1, batch)
	pl := newPlacer(s)
	why := map[mesh.ObjectRef]*Room{}
	var unplaced []Unplaced
	var stranded []*ppod // Pending pods
	pending := order
	var waves [][]DrainNode
	for len(pending) > 0 {
		var wave, later []DrainNode
		var inWave []*pnode
		for _, d := range pending {
			pn := pl.byName[d.Node.Name]
			if len(wave) >= batch || pn == nil {
				if pn == nil && len(wave) < batch {
					wave = append(wave, d) // a node the snapshot does not hold: nothing to place
					continue
				}
				later = append(later, d)
				continue
			}
			m := pl.mark()
			pn.inWave = true
			var moved []*ppod
			if d.Ambient {
				moved = pn.evicted(d.KeepJobs)
			}
			var missed []Unplaced
			var missedPods []*ppod
			for _, p := range moved {
				if u, ok := pl.place(p); !ok {
					u.From = pn.n.Name
					missed = append(missed, u)
					missedPods = append(missedPods, p)
				}
			}
			if len(missed) > 0 && len(wave) > 0 {
				pl.undo(m)
				pn.inWave = false
				w := missed[0].Workload
				r := why[w]
				if r == nil {
					r = &Room{Capacity: true, Workloads: []mesh.ObjectRef{w}}
					why[w] = r
				}
				r.Deferred++
				later = append(later, d)
				continue
			}
			for _, p := range missedPods {
				pl.relocate(p, nil) // evicted, Pending
				stranded = append(stranded, p)
			}
			unplaced = append(unplaced, missed...)
			wave = append(wave, d)
			inWave = append(inWave, pn)
		}
		for _, pn := range inWave {
			pn.inWave = false
		}
		// The wave's nodes are schedulable again: the scheduler places what stayed Pending.
		var still []*ppod
		for _, p := range stranded {
			if _, ok := pl.place(p); !ok {
				still = append(still, p)
			}
		}
		stranded = still
		pl.log = pl.log[:0]
		waves = append(waves, wave)
		pending = later
	}
	var rooms []Room
	for _, r := range why {
		rooms = append(rooms, *r)
	}
	sort.Slice(rooms, func(i, j int) bool { return rooms[i].Workloads[0].Less(rooms[j].Workloads[0]) })
	return waves, rooms, unplaced
}

// UnplacedFindings raises EVICTED_POD_FITS_NOWHERE (waivable) once per workload whose evicted pods
// PlaceWaves or PlaceSequence could put on no node, naming each pod, the node it leaves, what it
// needs and why every node refused it. object is the component whose plan drains the nodes; within
// says when the pods stay Pending ("until their wave ends"); remedy writes what makes room for the
// workload's pods, given what one of them needs.
func (b *Builder) UnplacedFindings(object mesh.ObjectRef, unplaced []Unplaced, within string, remedy func(w mesh.ObjectRef, needs string) string) {
	byW := map[mesh.ObjectRef][]Unplaced{}
	var order []mesh.ObjectRef
	for _, u := range unplaced {
		if _, ok := byW[u.Workload]; !ok {
			order = append(order, u.Workload)
		}
		byW[u.Workload] = append(byW[u.Workload], u)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].Less(order[j]) })
	for _, w := range order {
		us := byW[w]
		var pods []string
		for _, u := range us {
			pods = append(pods, u.Pod+" (from "+u.From+", needs "+u.Requests.Format()+"; refused: "+u.Reasons()+")")
		}
		u := us[0]
		b.Finding(plan.Finding{Code: plan.CodeEvictedPodFitsNowhere, Severity: plan.Waivable, Object: w, Related: []mesh.ObjectRef{object},
			Message: fmt.Sprintf("%d pod(s) of %s that the drains evict fit on no node left schedulable and would stay Pending %s: %s",
				len(us), w, within, strings.Join(pods, "; ")),
			Remedy:  remedy(w, u.Requests.Format()),
			Details: map[string]string{"pods": strconv.Itoa(len(us)), "pod": u.Pod, "from": u.From, "requests": u.Requests.Format(), "why": u.Reasons()}})
	}
}

// PlacementNotAssessed raises PLACEMENT_NOT_ASSESSED (info) for the component whose plan drains
// nodes: why says what the placement lacked; "" says the snapshot lacks node capacity and pods'
// requests (PlacementAssessed is false).
func (b *Builder) PlacementNotAssessed(object mesh.ObjectRef, component, why string) {
	f := plan.Finding{Code: plan.CodePlacementNotAssessed, Severity: plan.Info, Object: object, Component: component,
		Message: "the snapshot does not say how much room the nodes have or what the evicted pods need (node allocatable, pods' requests and constraints), so waves keep a schedulable node per pool for the pods they evict but do not count capacity",
		Remedy:  "observe the cluster again (observe.Live, or a dump made with the current DumpCommands) to have the waves planned against capacity"}
	if why != "" {
		f.Message = why + "; the waves are not planned against capacity"
		f.Remedy = "say what green nodes offer (GreenCapacity.NodeAllocatable), or add green nodes before observing"
	}
	b.Finding(f)
}
