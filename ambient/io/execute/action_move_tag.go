package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var moveTagAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		if len(st.MoveTag.Objects) == 0 {
			return outcome{}, fmt.Errorf("moveTag of tag %q carries no rendered objects; re-plan with a planner that renders them", st.MoveTag.Tag)
		}
		return e.applyObjects(ctx, r, st.MoveTag.Objects)
	},
	stale: func(st *plan.Step, s *mesh.Snapshot, _ map[string]bool, add func(string, ...any)) {
		m := st.MoveTag
		if m.From == "" {
			return
		}
		t, ok := s.Tag(m.Tag)
		switch {
		case !ok:
			add("tag %s no longer exists", m.Tag)
		case t.Revision != m.From && t.Revision != m.To:
			add("tag %s points at %s, the plan expected %s", t.Name, t.Revision, m.From)
		}
	},
	objects: func(st *plan.Step) []mesh.ObjectRef {
		var out []mesh.ObjectRef
		for _, o := range st.MoveTag.Objects {
			out = append(out, plan.ApplyObject{Object: o}.Ref())
		}
		return out
	},
	journal: journalAtOnce,
	backup:  usesNoBackup,
}
