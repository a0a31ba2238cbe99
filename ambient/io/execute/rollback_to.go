package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// rollbackTo is Executor.RollbackTo.
func (e *engine) rollbackTo(ctx context.Context, p *plan.Plan, to string) ([]StepResult, error) {
	if err := admit(p, e.opts.Gates, "", true); err != nil {
		return nil, err
	}
	first := -1
	for i := range p.Steps {
		if p.Steps[i].ID == to {
			first = i
		}
	}
	if first < 0 {
		return nil, fmt.Errorf("plan %q has no step %q to roll back to", p.Metadata.Name, to)
	}
	hash, err := PlanHash(p)
	if err != nil {
		return nil, err
	}
	var rec *Record
	if err := e.retry(ctx, "load journal", func(ctx context.Context) error {
		var err error
		rec, err = e.journal.Load(ctx, hash)
		return err
	}); err != nil {
		return nil, fmt.Errorf("load journal of plan %q: %w", p.Metadata.Name, err)
	}
	if rec == nil {
		return nil, fmt.Errorf("plan %q (%s) has no journal: nothing of it ran, so there is nothing to roll back", p.Metadata.Name, hash)
	}
	var out []StepResult
	for i := len(p.Steps) - 1; i >= first; i-- {
		st := &p.Steps[i]
		if st.Rollback == nil {
			continue
		}
		switch rec.status(st.ID) {
		case StatusPending, StatusRolledBack:
			continue
		}
		sr, err := e.rollback(ctx, p, st.ID)
		out = append(out, sr)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
