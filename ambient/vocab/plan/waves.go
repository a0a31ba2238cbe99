package plan

import (
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/nodename"
)

// Repetition in a plan. Planners that work node by node (ztunnel node by node, blue-green drains,
// relabelled nodes) add the same few steps once per node, so a plan of a large mesh holds thousands
// of steps that differ only by a node name. Nothing here knows a planner: a step is a node's when a
// segment of its ID names a node the step itself acts on or checks; the steps of one node that
// follow each other form a block; blocks whose IDs have the same shape are repetitions of one
// template. The Markdown runbook renders such runs once as a wave template with a table of nodes, and
// EncodeYAML writes them once with the list of nodes (see forEachNode).

// nodesOf returns the names of the nodes a step refers to: the node of its action (as its kind's
// spec names it), of its checks and of its rollback.
func nodesOf(s *Step) []string {
	var out []string
	add := func(n string) {
		if n != "" {
			out = append(out, n)
		}
	}
	for i := range kindSpecs {
		if kindSpecs[i].payload(s) != nil {
			add(kindSpecs[i].node(s))
		}
	}
	for _, c := range s.Checks() {
		add(c.Params["node"])
		if c.Object.Kind == "Node" {
			add(c.Object.Name)
		}
	}
	if s.Rollback != nil {
		out = append(out, nodesOf(s.Rollback)...)
	}
	return out
}

// Checks returns every check of the step: its preconditions, its wait or verification, its
// postconditions.
func (s *Step) Checks() []Check {
	out := append([]Check(nil), s.Preconditions...)
	if s.WaitFor != nil {
		out = append(out, s.WaitFor.Check)
	}
	if s.Verify != nil {
		out = append(out, s.Verify.Checks...)
	}
	return append(out, s.Postconditions...)
}

// BlockNode returns the node a step is done for, the last segment of its ID that names a node the
// step refers to; "" when it is no node's. The steps of one node that follow each other form its
// NodeBlock.
func (s *Step) BlockNode() string {
	nodes := nodesOf(s)
	if len(nodes) == 0 {
		return ""
	}
	segs := strings.Split(s.ID, "/")
	for i := len(segs) - 1; i >= 0; i-- {
		for _, n := range nodes {
			if segs[i] == n {
				return n
			}
		}
	}
	return ""
}

// NodeBlock is the steps [Start, End) of one node that follow each other: the unit the plan's YAML
// (forEachNode) and its runbook (wave templates) write once for many nodes.
type NodeBlock struct {
	Node       string
	Start, End int
	// Shape is the IDs of its steps with the node replaced, joined: blocks of one shape repeat one
	// template.
	Shape string
	// Family is the pattern of its first step's ID, or its wave's when the planner set one: the
	// blocks of one wave phase share it, even when a node skips a step. Name is the pattern of its
	// first step's ID, which the runbook names the phase by.
	Family, Name string
}

// NodeBlocks finds the node blocks of a plan's steps, in order.
func NodeBlocks(steps []Step) []NodeBlock {
	var out []NodeBlock
	for i := 0; i < len(steps); {
		n := steps[i].BlockNode()
		if n == "" {
			i++
			continue
		}
		j := i + 1
		for j < len(steps) && steps[j].BlockNode() == n {
			j++
		}
		var shape []string
		for k := i; k < j; k++ {
			shape = append(shape, nodename.IDPattern(steps[k].ID, n, nodename.Node))
		}
		family := shape[0]
		if w := steps[i].Wave; w != nil {
			family = "wave " + nodename.Numbered(w.ID) // the planner's own waves: one family whatever a node's first step
		}
		out = append(out, NodeBlock{Node: n, Start: i, End: j, Shape: strings.Join(shape, "\n"), Family: family, Name: shape[0]})
		i = j
	}
	return out
}
