package execute

import (
	"context"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// dryStep reports what a step would do: its action in dry-run form (server-side dry run for writes,
// Helm's dry run), preceded by its preconditions and followed by its verification, described.
func (e *engine) dryStep(ctx context.Context, r *run, st *plan.Step) (StepResult, error) {
	sr := StepResult{StepID: st.ID, Kind: st.Kind(), Status: StatusWouldRun}
	rec := r.own(st.ID)
	var changes []string
	if len(st.Preconditions) > 0 {
		changes = append(changes, "would first check: "+describeChecks(st.Preconditions))
	}
	out, err := e.act(ctx, r, st, rec)
	if err != nil {
		return sr, stepErr(st.ID, err)
	}
	changes = append(changes, out.changes...)
	if !out.finished && out.progress != "" {
		changes = append(changes, out.progress)
	}
	if len(st.Postconditions) > 0 {
		changes = append(changes, "would then verify: "+describeChecks(st.Postconditions))
	}
	sr.Changes, sr.Message = changes, summary(out.changes)
	sr.Objects, sr.Held = objectsOf(st, out), out.held
	ev := e.stepEvent(r, st, EventDryRun, st.Description)
	ev.Changes = changes
	e.emit(ev)
	return sr, nil
}

func describeChecks(cs []plan.Check) string {
	var out []string
	for _, c := range cs {
		d := c.Description
		if d == "" {
			d = string(c.Type)
		}
		out = append(out, d)
	}
	return strings.Join(out, "; ")
}
