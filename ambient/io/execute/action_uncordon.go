package execute

import (
	"context"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var uncordonAction = action{
	phase: "uncordoning",
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		return e.setUnschedulable(ctx, r, st, st.Uncordon.Node, false)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return nodeRef(st.Uncordon.Node) },
	journal: schedulingJournal,
	backup:  usesNoBackup,
}
