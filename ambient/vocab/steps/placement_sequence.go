package steps

import (
	"fmt"
	"maps"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Growth is capacity that comes as pods need it, as Karpenter or a caller brings it: for a pod no
// open node takes, a node like Shape is added, while the capacity the added nodes sum to stays
// within Budget.
type Growth struct {
	// Source names the capacity in findings ("NodePool green", "the green nodes the caller adds").
	Source string
	// Shape is what each added node is: its Labels (a node's own hostname is set on each), Taints,
	// Allocatable, Capacity (what counts against Budget; Allocatable when nil) and Requested (what
	// it holds before any evicted pod lands: its DaemonSets). Its Name is the stem of the added
	// nodes' names.
	Shape mesh.Node
	// Free are label keys the provider picks for each node from what the pod needs
	// (topology.kubernetes.io/zone): an added node takes the value the pod's node selector, node
	// affinity or volumes ask for.
	Free []string
	// Budget bounds the capacity of the added nodes, summed; nil is no bound.
	Budget mesh.Resources
}

// SequenceWave is one wave of drains that run together: its nodes are cordoned and their pods
// evicted. When the wave ends they stay cordoned, unless Reopen: then Relabel is set on them and
// they take pods again.
type SequenceWave struct {
	Nodes   []DrainNode
	Reopen  bool
	Relabel map[string]string
}

// Sequence is what PlaceSequence found.
type Sequence struct {
	// Unplaced are the pods that neither an open node nor an added one could take when their wave
	// evicted them.
	Unplaced []Unplaced
	// Added holds, for each Growth, how many nodes were added by the end of each wave.
	Added [][]int
}

// PlaceSequence places, wave after wave and by the placer's rules, the pods the waves' drains
// evict, on the nodes left open and on nodes the growths add, and says which fit nowhere. The nodes
// of cordoned are cordoned before the first wave. Unlike PlaceWaves it keeps the waves as given: a
// blue-green's drained nodes never take pods again, so a smaller wave does not make room, only more
// capacity does. Pods stay where they were put for the waves after.
func (ix *Index) PlaceSequence(s *mesh.Snapshot, cordoned []string, waves []SequenceWave, growth []Growth) Sequence {
	pl := newPlacer(s)
	for _, name := range cordoned {
		if pn := pl.byName[name]; pn != nil {
			pn.cordoned = true
		}
	}
	out := Sequence{Added: make([][]int, len(growth))}
	spent := make([]mesh.Resources, len(growth))
	added := make([]int, len(growth))
	var stranded []*ppod
	for _, w := range waves {
		var in []*pnode
		for _, d := range w.Nodes {
			if pn := pl.byName[d.Node.Name]; pn != nil {
				pn.inWave, pn.cordoned = true, true
				in = append(in, pn)
			}
		}
		for _, d := range w.Nodes {
			pn := pl.byName[d.Node.Name]
			if pn == nil || !d.Ambient {
				continue
			}
			for _, p := range pn.evicted(d.KeepJobs) {
				u, ok := pl.place(p)
				for g := 0; !ok && g < len(growth); g++ {
					ok = pl.grow(p, &growth[g], &spent[g], &added[g], u.Why)
				}
				if !ok {
					u.From = pn.n.Name
					out.Unplaced = append(out.Unplaced, u)
					pl.relocate(p, nil)
					stranded = append(stranded, p)
				}
			}
		}
		for _, pn := range in {
			pn.inWave = false
			if w.Reopen {
				pn.cordoned = false
				if len(w.Relabel) > 0 {
					n := *pn.n
					n.Labels = maps.Clone(n.Labels)
					if n.Labels == nil {
						n.Labels = map[string]string{}
					}
					maps.Copy(n.Labels, w.Relabel)
					pn.n = &n
				}
			}
		}
		var still []*ppod
		for _, p := range stranded {
			if _, ok := pl.place(p); !ok {
				still = append(still, p)
			}
		}
		stranded = still
		pl.log = pl.log[:0]
		for g := range growth {
			out.Added[g] = append(out.Added[g], added[g])
		}
	}
	return out
}

// grow adds a node of the growth for the pod when its budget allows one and the pod may run there,
// and puts the pod on it; else it counts why under the growth's name.
func (pl *placer) grow(p *ppod, g *Growth, spent *mesh.Resources, added *int, why map[string]int) bool {
	cost := g.Shape.Capacity
	if cost == nil {
		cost = g.Shape.Allocatable
	}
	if g.Budget != nil {
		after := spent.Add(cost)
		for k, limit := range g.Budget {
			if after[k] > limit {
				why[g.Source+": limit of "+k+" reached"]++
				return false
			}
		}
	}
	n := g.Shape
	n.Name = fmt.Sprintf("%s-%d", g.Shape.Name, *added+1)
	n.Labels = maps.Clone(g.Shape.Labels)
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["kubernetes.io/hostname"] = n.Name
	for _, k := range g.Free {
		if v, ok := asked(p, k); ok {
			n.Labels[k] = v
		}
	}
	n.Ready = true
	free := mesh.Resources{}
	for k, v := range n.Allocatable {
		free[k] = v - n.Requested[k]
	}
	c := &pnode{n: &n, free: free}
	if r := pl.refuses(p, c); r != "" {
		why["a new node of "+g.Source+": "+r]++
		return false
	}
	*spent = spent.Add(cost)
	*added++
	pl.nodes = append(pl.nodes, c)
	pl.byName[n.Name] = c
	pl.relocate(p, c)
	return true
}

// asked returns the value of the label key that the pod's node selector, the first term of its
// node affinity or its volumes ask for (an In of one value or more: the first), if any does.
func asked(p *ppod, key string) (string, bool) {
	sc := p.w.Scheduling
	if v, ok := sc.NodeSelector[key]; ok {
		return v, true
	}
	var terms [][]mesh.NodeSelectorTerm
	terms = append(terms, sc.NodeAffinity)
	for _, v := range p.place.Volumes {
		terms = append(terms, v.Terms)
	}
	for _, ts := range terms {
		if len(ts) == 0 {
			continue
		}
		for _, r := range ts[0].MatchExpressions {
			if r.Key == key && r.Operator == "In" && len(r.Values) > 0 {
				return r.Values[0], true
			}
		}
	}
	return "", false
}
