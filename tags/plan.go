package tags

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/ambient/steps"
)

// MovesOptions configure PlanMoves.
type MovesOptions struct {
	// To is the revision the tags move to.
	To string
	// From are the revisions whose tags move; the tags of other revisions stay.
	From []string
	// Order moves these tags first, in this order; the others follow lowest risk first (Order),
	// default last. A tag that does not exist is an error wrapping plan.ErrInvalidOptions.
	Order []string
	// SkipRestart and BatchSize are as in MoveOptions.
	SkipRestart bool
	BatchSize   int
	// IDPrefix is put before every step ID (chained hops).
	IDPrefix string
}

// PlanMoves adds the move of every tag of opts.From revisions to opts.To, one tag at a time in risk
// order, each with its restarts and health gate (MoveSteps). staged is the mesh with the new revision
// in it (ready), as it will be once the earlier steps have run; the order is decided on before, where
// the tags still point at their old revisions.
func PlanMoves(b *steps.Builder, before, staged *mesh.Snapshot, opts MovesOptions) error {
	ranked := Order(before, opts.From...)
	order := make([]string, 0, len(ranked))
	for _, t := range opts.Order {
		if _, ok := before.Tag(t); !ok {
			return fmt.Errorf("%w: tagOrder names tag %q, which does not exist (tags: %v)", plan.ErrInvalidOptions, t, before.TagNames())
		}
		if !steps.Contains(order, t) {
			order = append(order, t)
		}
	}
	reasons := map[string]string{}
	for _, r := range ranked {
		reasons[r.Radius.Tag] = r.Reason
		if !steps.Contains(order, r.Radius.Tag) {
			order = append(order, r.Radius.Tag)
		}
	}
	for _, t := range order {
		moves, _, err := MoveSteps(staged, t, opts.To, MoveOptions{SkipRestart: opts.SkipRestart, BatchSize: opts.BatchSize,
			Probe: b.Probe(), IDPrefix: opts.IDPrefix, DependsOn: []string{b.Last()}})
		if err != nil {
			return fmt.Errorf("move tag %q: %w", t, err)
		}
		if steps.Contains(opts.Order, t) {
			moves[0].Notes = append(moves[0].Notes, "order: given by the caller")
		} else if reasons[t] != "" {
			moves[0].Notes = append(moves[0].Notes, "order: "+reasons[t])
		}
		for _, st := range moves {
			b.Append(st)
		}
	}
	return nil
}
