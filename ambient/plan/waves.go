package plan

import (
	"encoding/json"
	"strings"
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

// nodeOf returns the node a step is done for, the last segment of its ID that names a node the step
// refers to; "" when it is no node's.
func nodeOf(s *Step) string {
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

// idPattern is the ID with the node's segment replaced by placeholder.
func idPattern(id, node, placeholder string) string {
	segs := strings.Split(id, "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i] == node {
			segs[i] = placeholder
			break
		}
	}
	return strings.Join(segs, "/")
}

// block is the steps [start, end) of one node that follow each other.
type block struct {
	node       string
	start, end int
	// shape is the IDs of its steps with the node replaced, joined: blocks of one shape repeat one
	// template.
	shape string
	// family is the pattern of its first step's ID, or its wave's when the planner set one: the
	// blocks of one wave phase share it, even when a node skips a step. name is the pattern of its
	// first step's ID, which the runbook names the phase by.
	family, name string
}

// blocks finds the blocks of a plan's steps, in order.
func blocks(steps []Step) []block {
	var out []block
	for i := 0; i < len(steps); {
		n := nodeOf(&steps[i])
		if n == "" {
			i++
			continue
		}
		j := i + 1
		for j < len(steps) && nodeOf(&steps[j]) == n {
			j++
		}
		var shape []string
		for k := i; k < j; k++ {
			shape = append(shape, idPattern(steps[k].ID, n, nodePlaceholder))
		}
		family := shape[0]
		if w := steps[i].Wave; w != nil {
			family = "wave " + numbered(w.ID) // the planner's own waves: one family whatever a node's first step
		}
		out = append(out, block{node: n, start: i, end: j, shape: strings.Join(shape, "\n"), family: family, name: shape[0]})
		i = j
	}
	return out
}

// nodePlaceholder stands for the node in templates.
const nodePlaceholder = "{node}"

// wave is one batch of a wave phase: the blocks of its nodes, with the steps that come before them
// (an approval) and after them (the health gate that waits for them).
type wave struct {
	lead, trail []int
	blocks      []block
}

// waveSet is a run of waves whose blocks share a family: a template the plan repeats for many
// nodes. Steps [start, end) of the plan belong to it.
type waveSet struct {
	family, name string
	waves        []wave
	start, end   int
}

// maxGlue is how many steps that are no node's may stand between two waves of one phase.
const maxGlue = 3

// waveSets finds the wave phases of a plan: runs of at least two blocks of one family, possibly
// split into waves by a few steps between them. A step between two waves that depends on a step of
// the wave before it (its health gate) closes that wave; the others open the next one.
func waveSets(steps []Step) []waveSet {
	bs := blocks(steps)
	var out []waveSet
	for i := 0; i < len(bs); {
		ph := waveSet{family: bs[i].family, name: bs[i].name, start: bs[i].start}
		w := wave{}
		j := i
		for {
			w.blocks = append(w.blocks, bs[j])
			end := bs[j].end
			if j+1 < len(bs) && bs[j+1].family == ph.family && bs[j+1].start-end <= maxGlue {
				glue := indexes(end, bs[j+1].start)
				if len(glue) > 0 {
					trail, lead := splitGlue(steps, glue, w)
					w.trail = trail
					ph.waves = append(ph.waves, w)
					w = wave{lead: lead}
				}
				j++
				continue
			}
			// The set ends: keep the steps right after it that close its last wave as they closed the
			// wave before (a health gate); a step that merely comes next is not the wave's.
			trail, _ := splitGlue(steps, indexes(end, min(end+maxGlue, len(steps))), w)
			w.trail = sameTrail(steps, leadingRun(trail, end), ph.waves)
			ph.waves = append(ph.waves, w)
			ph.end = end + len(w.trail)
			break
		}
		if n := countBlocks(ph); n >= 2 {
			out = append(out, ph)
		}
		i = j + 1
	}
	return out
}

// sameTrail keeps the steps of trail, in order, as long as they match the trail of the wave before,
// numbers aside; none without a wave before.
func sameTrail(steps []Step, trail []int, before []wave) []int {
	if len(before) == 0 {
		return nil
	}
	prev := before[len(before)-1].trail
	var out []int
	for i, t := range trail {
		if i >= len(prev) || numbered(steps[t].ID) != numbered(steps[prev[i]].ID) {
			break
		}
		out = append(out, t)
	}
	return out
}

// numbered is an ID with its segments that are numbers replaced by wavePlaceholder.
func numbered(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			segs[i] = wavePlaceholder
		}
	}
	return strings.Join(segs, "/")
}

func indexes(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// splitGlue parts the steps between two waves into those that depend on a step of w and the others.
func splitGlue(steps []Step, glue []int, w wave) (trail, lead []int) {
	ids := map[string]bool{}
	for _, b := range w.blocks {
		for k := b.start; k < b.end; k++ {
			ids[steps[k].ID] = true
		}
	}
	for _, g := range glue {
		if nodeOf(&steps[g]) != "" {
			lead = append(lead, g)
			continue
		}
		after := false
		for _, d := range steps[g].DependsOn {
			after = after || ids[d]
		}
		if after && len(lead) == 0 {
			trail = append(trail, g)
		} else {
			lead = append(lead, g)
		}
	}
	return trail, lead
}

// leadingRun keeps the indexes that follow from on without a gap.
func leadingRun(idx []int, from int) []int {
	var out []int
	for _, i := range idx {
		if i != from+len(out) {
			break
		}
		out = append(out, i)
	}
	return out
}

func countBlocks(ph waveSet) int {
	n := 0
	for _, w := range ph.waves {
		n += len(w.blocks)
	}
	return n
}

// ---- the node's name in text ----

// isNameByte reports whether c can be part of a node name.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// replaceName replaces the occurrences of name in s that stand alone (not inside a longer name; a
// full stop after it ends a sentence) with with.
func replaceName(s, name, with string) string {
	if name == "" || !strings.Contains(s, name) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], name)
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		j += i
		end := j + len(name)
		alone := (j == 0 || !isNameByte(s[j-1])) &&
			(end == len(s) || !isNameByte(s[end]) || s[end] == '.' && (end+1 == len(s) || !isNameByte(s[end+1])))
		b.WriteString(s[i:j])
		if alone {
			b.WriteString(with)
		} else {
			b.WriteString(name)
		}
		i = end
	}
	return b.String()
}

// replaceInJSON replaces name with with in every string and key of a decoded JSON value, where it
// stands alone.
func replaceInJSON(v any, name, with string) any {
	return mapStrings(v, func(s string) string { return replaceName(s, name, with) })
}

// mapStrings returns a decoded JSON value with f applied to every string and key.
func mapStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mapStrings(e, f)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[f(k)] = mapStrings(e, f)
		}
		return out
	}
	return v
}

// withNode returns a copy of the step with its node's name replaced by with wherever it stands alone.
func withNode(s Step, node, with string) Step {
	b, err := json.Marshal(s)
	if err != nil {
		return s
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return s
	}
	b, err = json.Marshal(replaceInJSON(v, node, with))
	if err != nil {
		return s
	}
	var out Step
	if err := json.Unmarshal(b, &out); err != nil {
		return s
	}
	return out
}
