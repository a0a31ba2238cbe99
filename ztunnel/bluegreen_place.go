package ztunnel

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

const labelHostname = "kubernetes.io/hostname"

// freeLabels are the node labels a provider sets per node from what the pod it launches for needs
// (Karpenter picks the zone of a pod's zonal volume or zone selector).
var freeLabels = []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/region"}

// placement places the pods the waves evict, as the scheduler would, on the nodes left open and on
// the green capacity the plan knows of, and raises what cannot go: pods pinned to their blue node
// (blocking: no green node can ever take them) and pods no node takes when their wave evicts them
// (waivable). It returns what the capacity report says of green's room, "" when it was not assessed,
// and how many new green nodes the waves need in all.
func (x *bg) placement(ix *steps.Index, waves []wave, drains map[string]steps.DrainNode) (string, int) {
	pinned := x.pinnedToBlue()
	if !steps.PlacementAssessed(x.s) {
		x.b.PlacementNotAssessed(x.blue.Ref(), x.blue.Component(), "")
		return "", 0
	}
	growth, from := x.growth()
	green := 0
	for _, n := range x.s.Nodes {
		if n.Labels[x.label] == x.greenVal {
			green++
		}
	}
	if len(growth) == 0 && green == 0 && len(x.g.Capacity.Relabel) == 0 {
		x.b.PlacementNotAssessed(x.blue.Ref(), x.blue.Component(),
			fmt.Sprintf("green's room is not known: no node is labelled %s=%s yet and the plan is not told what the nodes the caller adds offer (GreenCapacity.NodeAllocatable)", x.label, x.greenVal))
		return "", 0
	}
	keepJobs := x.g.Jobs == "" || x.g.Jobs == JobsWait
	var seq []steps.SequenceWave
	for _, name := range x.g.Capacity.Relabel {
		n, _ := x.s.Node(name)
		d := x.b.DrainOrder(x.s, ix, []mesh.Node{n}, x.s.AmbientNodes())[0]
		d.Ambient, d.KeepJobs = true, keepJobs
		seq = append(seq, steps.SequenceWave{Nodes: []steps.DrainNode{d}, Reopen: true, Relabel: map[string]string{x.label: x.greenVal}})
	}
	var cordoned []string
	for _, w := range waves {
		sw := steps.SequenceWave{}
		for _, n := range w.nodes {
			d := drains[n.Name]
			d.Ambient, d.KeepJobs = true, keepJobs
			sw.Nodes = append(sw.Nodes, d)
			if x.g.CordonAll {
				cordoned = append(cordoned, n.Name)
			}
		}
		seq = append(seq, sw)
	}
	got := ix.PlaceSequence(x.s, cordoned, seq, growth)
	var unplaced []steps.Unplaced
	for _, u := range got.Unplaced {
		if !pinned[u.Workload.String()+"/"+u.Pod] {
			unplaced = append(unplaced, u)
		}
	}
	x.b.UnplacedFindings(x.blue.Ref(), unplaced, "for good: the drained blue nodes never take pods again", func(w mesh.ObjectRef, needs string) string {
		return fmt.Sprintf("bring more green capacity before the run (%s), room for %s with %s free on a node it may run on, or relax the constraint named; a smaller BlueGreen.BatchSize does not help", x.moreGreen(), w, needs)
	})
	said, added := x.roomSaid(green, growth, from, got, len(seq)-len(waves))
	return said, added
}

// moreGreen says how the plan's green capacity grows.
func (x *bg) moreGreen() string {
	if len(x.g.Capacity.NodePools) > 0 {
		return "raise the limits of NodePool " + strings.Join(x.g.Capacity.NodePools, ", ")
	}
	return fmt.Sprintf("add nodes labelled %s=%s", x.label, x.greenVal)
}

// roomSaid writes what the placement found of green's room for the capacity report.
func (x *bg) roomSaid(green int, growth []steps.Growth, from []string, got steps.Sequence, skip int) (string, int) {
	var parts []string
	total := 0
	if green > 0 {
		parts = append(parts, fmt.Sprintf("%d node(s) labelled green now", green))
	}
	if n := len(x.g.Capacity.Relabel); n > 0 {
		parts = append(parts, fmt.Sprintf("the %d relabelled node(s)", n))
	}
	for i, g := range growth {
		byWave := got.Added[i][skip:]
		var ws []string
		for _, n := range byWave {
			ws = append(ws, strconv.Itoa(n))
		}
		last := 0
		if len(byWave) > 0 {
			last = byWave[len(byWave)-1]
		}
		total += last
		if last == 0 && len(growth) > 1 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d new node(s) of %s (each %s, %s; by wave: %s)", last, g.Source, g.Shape.Allocatable.Format(), from[i], strings.Join(ws, ",")))
	}
	said := "placed by requests and constraints, the evicted pods take " + strings.Join(parts, " and ")
	if n := len(got.Unplaced); n > 0 {
		said += fmt.Sprintf("; %d pod(s) fit nowhere (see the findings)", n)
	}
	return said, total
}

// growth is the green capacity that comes as pods need it: each NodePool's nodes within its limits,
// or the nodes the caller adds when their allocatable is given. from says where each shape was
// taken from.
func (x *bg) growth() ([]steps.Growth, []string) {
	c := x.g.Capacity
	var out []steps.Growth
	var from []string
	for _, name := range c.NodePools {
		p, _ := x.s.NodePool(name)
		var own []mesh.Node
		for _, n := range x.s.Nodes {
			if n.Labels[labelNodePool] == name {
				own = append(own, n)
			}
		}
		shape, said := x.shape(own, "NodePool "+name)
		maps.Copy(shape.Labels, p.Labels)
		shape.Labels[x.label] = x.greenVal
		shape.Labels[labelNodePool] = name
		shape.Taints = p.Taints
		shape.Name = "green-" + name
		g := steps.Growth{Source: "NodePool " + name, Shape: shape, Free: freeLabels}
		if p.Limit != nil {
			// Karpenter counts the capacity of every node of the pool, the blue ones it holds too.
			g.Budget = mesh.Resources{}
			for k, v := range p.Limit {
				used := int64(0)
				for _, n := range own {
					used += capacityOf(n)[k]
				}
				g.Budget[k] = max(0, v-used)
			}
			said += "; within the pool's limits (" + p.Limit.Format() + ") less its nodes' capacity"
		}
		out, from = append(out, g), append(from, said)
	}
	if len(c.NodePools) == 0 && len(c.Relabel) == 0 && len(c.NodeAllocatable) > 0 {
		shape, said := x.shape(nil, "")
		shape.Labels[x.label] = x.greenVal
		shape.Name = "green"
		out, from = append(out, steps.Growth{Source: "the green nodes the caller adds", Shape: shape, Free: freeLabels}), append(from, said)
	}
	return out, from
}

// shape is a new green node: of the given allocatable (GreenCapacity.NodeAllocatable), or like the
// largest of the nodes given, or else the largest blue node. A node like one of like carries its
// labels (but its hostname) and its taints; else it carries the labels every blue node carries and
// no taint. Either starts with the DaemonSets' requests of the node it is taken from. It says where
// it was taken from.
func (x *bg) shape(like []mesh.Node, what string) (mesh.Node, string) {
	said := "as GreenCapacity.NodeAllocatable says"
	src, ok := largest(like)
	labels := maps.Clone(src.Labels)
	if !ok {
		src, _ = largest(x.blueNodes)
		labels = commonLabels(x.blueNodes)
		if len(x.g.Capacity.NodeAllocatable) == 0 {
			said = "sized like blue node " + src.Name
			if what != "" {
				said = what + " has no node yet: " + said
			}
		}
	} else if len(x.g.Capacity.NodeAllocatable) == 0 {
		said = "like its largest node " + src.Name
	}
	n := mesh.Node{Labels: labels, Allocatable: src.Allocatable, Capacity: src.Capacity, Ready: true}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	delete(n.Labels, labelHostname)
	if a := x.g.Capacity.NodeAllocatable; len(a) > 0 {
		n.Allocatable, n.Capacity = a, nil
	}
	if ok {
		for _, t := range src.Taints {
			if !strings.HasPrefix(t.Key, "node.kubernetes.io/") && !strings.HasPrefix(t.Key, "karpenter.sh/") && t.Key != "ToBeDeletedByClusterAutoscaler" {
				n.Taints = append(n.Taints, t)
			}
		}
	}
	n.Requested = mesh.Resources{}
	for _, w := range x.s.Workloads {
		if w.Kind != "DaemonSet" || w.Scheduling == nil {
			continue
		}
		for _, p := range w.Placed {
			if p.Node == src.Name {
				n.Requested = n.Requested.Add(w.Scheduling.Requests)
				break
			}
		}
	}
	return n, said
}

// commonLabels are the labels, with their values, that every node carries.
func commonLabels(nodes []mesh.Node) map[string]string {
	if len(nodes) == 0 {
		return map[string]string{}
	}
	out := maps.Clone(nodes[0].Labels)
	for _, n := range nodes[1:] {
		maps.DeleteFunc(out, func(k, v string) bool { return n.Labels[k] != v })
	}
	return out
}

// largest is the node with the most cpu, then memory, allocatable (the first by name on a tie).
func largest(nodes []mesh.Node) (mesh.Node, bool) {
	if len(nodes) == 0 {
		return mesh.Node{}, false
	}
	best := nodes[0]
	for _, n := range nodes[1:] {
		a, b := n.Allocatable, best.Allocatable
		switch {
		case a[mesh.ResourceCPU] != b[mesh.ResourceCPU]:
			if a[mesh.ResourceCPU] > b[mesh.ResourceCPU] {
				best = n
			}
		case a[mesh.ResourceMemory] != b[mesh.ResourceMemory]:
			if a[mesh.ResourceMemory] > b[mesh.ResourceMemory] {
				best = n
			}
		case n.Name < best.Name:
			best = n
		}
	}
	return best, true
}

func capacityOf(n mesh.Node) mesh.Resources {
	if n.Capacity != nil {
		return n.Capacity
	}
	return n.Allocatable
}

// pinnedToBlue raises BLUEGREEN_POD_PINNED_TO_BLUE (blocking) for every workload with a pod on a
// blue node that no green node could take, however much room green has: a node like its own but
// green and of another name fails the pod's node selector or affinity, or its volume's node
// affinity, or its volume is local to its node. It returns those pods as "Kind/ns/name/pod".
func (x *bg) pinnedToBlue() map[string]bool {
	blue := map[string]mesh.Node{}
	for _, n := range x.blueNodes {
		blue[n.Name] = n
	}
	out := map[string]bool{}
	for _, w := range x.s.Workloads {
		if !w.Moves() || w.Scheduling == nil {
			continue
		}
		sc := w.Scheduling
		var pods, whys []string
		first := mesh.PodPlace{}
		for _, p := range w.Placed {
			n, ok := blue[p.Node]
			if !ok {
				continue
			}
			like := maps.Clone(n.Labels)
			if like == nil {
				like = map[string]string{}
			}
			like[x.label] = x.greenVal
			other := maps.Clone(like)
			other[labelHostname] = "a-new-green-node"
			var why []string
			if mesh.Places(sc.NodeSelector, sc.NodeAffinity, n.Labels) && !mesh.Places(sc.NodeSelector, sc.NodeAffinity, other) {
				if mesh.Places(sc.NodeSelector, sc.NodeAffinity, like) {
					why = append(why, "its node selector or affinity names its node")
				} else {
					why = append(why, fmt.Sprintf("its node selector or affinity keeps it off nodes labelled %s=%s", x.label, x.greenVal))
				}
			}
			for _, v := range p.Volumes {
				switch {
				case v.Local:
					why = append(why, "local volume "+v.Claim+" ("+v.Volume+")")
				case v.Matches(n.Labels) && !v.Matches(other):
					why = append(why, "volume "+v.Claim+" ("+v.Volume+") is bound to its node")
				}
			}
			if len(why) == 0 {
				continue
			}
			if len(pods) == 0 {
				first = p
			}
			out[w.Ref().String()+"/"+p.Name] = true
			pods = append(pods, p.Name+" on "+p.Node+" ("+strings.Join(why, "; ")+")")
			whys = append(whys, why...)
		}
		if len(pods) == 0 {
			continue
		}
		sort.Strings(pods)
		x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenPodPinnedToBlue, Severity: plan.Blocking, Object: w.Ref(), Related: []mesh.ObjectRef{x.blue.Ref()}, Component: x.blue.Component(),
			Message: fmt.Sprintf("%d pod(s) of %s can run on no green node, so the drain of their blue node would leave them Pending for good and blue could not go: %s", len(pods), w.Ref(), strings.Join(pods, "; ")),
			Remedy:  fmt.Sprintf("free %s from its node before a blue-green: take the hostname out of its node selector or affinity, or move its data to a volume green nodes can attach (a snapshot restored to a new claim); or upgrade ztunnel node by node (NodeByNode), which drains and reopens the same nodes", w.Ref()),
			Details: map[string]string{"pods": strconv.Itoa(len(pods)), "pod": first.Name, "node": first.Node, "why": whys[0]}})
	}
	return out
}
