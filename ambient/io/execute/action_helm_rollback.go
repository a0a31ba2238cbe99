package execute

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var helmRollbackAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.helmRollback(ctx, r, rec, st.HelmRollback)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef {
		return helmReleaseRef(st.HelmRollback.Namespace, st.HelmRollback.Release)
	},
	journal: journalAtOnce,
	backup:  usesNoBackup,
}

func (e *engine) helmRollback(ctx context.Context, r *run, rec *StepRecord, h *plan.HelmRollback) (outcome, error) {
	hc, err := e.helmClient()
	if err != nil {
		return outcome{}, err
	}
	name := h.Namespace + "/" + h.Release
	cur, err := e.helmGet(ctx, h.Release, h.Namespace)
	if err != nil {
		return outcome{}, err
	}
	if cur == nil {
		return outcome{}, fmt.Errorf("Helm release %s does not exist; there is nothing to roll back", name)
	}
	if err := stuck(cur); err != nil {
		return outcome{}, err
	}
	if b, ok := rec.State["helmRevisionBefore"]; ok && cur.Revision > atoi(b) && cur.Status == "deployed" {
		return finished(fmt.Sprintf("an earlier attempt rolled Helm release %s back to revision %d (now %s)", name, h.Revision, chartLabel(cur))), nil
	}
	if cur.Revision == h.Revision && cur.Status == "deployed" {
		return finished(fmt.Sprintf("Helm release %s is already at revision %d", name, h.Revision)), nil
	}
	req := HelmRollbackRequest{Release: h.Release, Namespace: h.Namespace, Revision: h.Revision, DryRun: r.dry}
	if r.dry {
		if err := hc.Rollback(ctx, req); err != nil {
			return outcome{}, fmt.Errorf("helm rollback %s (dry run): %w", name, err)
		}
		return finished(fmt.Sprintf("would roll Helm release %s back from %s to revision %d", name, chartLabel(cur), h.Revision)), nil
	}
	if _, ok := rec.State["helmRevisionBefore"]; !ok {
		rec.State["helmRevisionBefore"] = strconv.Itoa(cur.Revision)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	before := atoi(rec.State["helmRevisionBefore"])
	err = e.helmAct(ctx, "helm rollback "+name, func(ctx context.Context) error {
		return hc.Rollback(ctx, req)
	}, func(ctx context.Context) bool {
		rel, err := hc.Get(ctx, h.Release, h.Namespace)
		return err == nil && rel.Revision > before && rel.Status == "deployed"
	})
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("rolled Helm release %s back from %s to revision %d", name, chartLabel(cur), h.Revision)), nil
}
