package runbook

import (
	"encoding/json"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/nodename"
)

// wave is one batch of a wave phase: the blocks of its nodes, with the steps that come before them
// (an approval) and after them (the health gate that waits for them).
type wave struct {
	lead, trail []int
	blocks      []plan.NodeBlock
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
func waveSets(steps []plan.Step) []waveSet {
	bs := plan.NodeBlocks(steps)
	var out []waveSet
	for i := 0; i < len(bs); {
		ph := waveSet{family: bs[i].Family, name: bs[i].Name, start: bs[i].Start}
		w := wave{}
		j := i
		for {
			w.blocks = append(w.blocks, bs[j])
			end := bs[j].End
			if j+1 < len(bs) && bs[j+1].Family == ph.family && bs[j+1].Start-end <= maxGlue {
				glue := indexes(end, bs[j+1].Start)
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
func sameTrail(steps []plan.Step, trail []int, before []wave) []int {
	if len(before) == 0 {
		return nil
	}
	prev := before[len(before)-1].trail
	var out []int
	for i, t := range trail {
		if i >= len(prev) || nodename.Numbered(steps[t].ID) != nodename.Numbered(steps[prev[i]].ID) {
			break
		}
		out = append(out, t)
	}
	return out
}

func indexes(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// splitGlue parts the steps between two waves into those that depend on a step of w and the others.
func splitGlue(steps []plan.Step, glue []int, w wave) (trail, lead []int) {
	ids := map[string]bool{}
	for _, b := range w.blocks {
		for k := b.Start; k < b.End; k++ {
			ids[steps[k].ID] = true
		}
	}
	for _, g := range glue {
		if steps[g].BlockNode() != "" {
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

// withNode returns a copy of the step with its node's name replaced by with wherever it stands alone.
func withNode(s plan.Step, node, with string) plan.Step {
	b, err := json.Marshal(s)
	if err != nil {
		return s
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return s
	}
	b, err = json.Marshal(nodename.ReplaceInJSON(v, node, with))
	if err != nil {
		return s
	}
	var out plan.Step
	if err := json.Unmarshal(b, &out); err != nil {
		return s
	}
	return out
}
