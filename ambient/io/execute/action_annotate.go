package execute

import (
	"context"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var annotateAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		a := st.Annotate
		return e.patchMetadata(ctx, r, st, metadataPatch{field: "annotations", verb: "annotate", apiVersion: a.APIVersion, objects: a.Targets(), set: a.Set, remove: a.Remove})
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return st.Annotate.Targets() },
	journal: journalAtOnce,
	backup:  usesNoBackup,
}
