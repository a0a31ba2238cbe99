package execute

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var helmUpgradeAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.helmUpgrade(ctx, r, rec, st.HelmUpgrade)
	},
	stale: func(st *plan.Step, s *mesh.Snapshot, first map[string]bool, add func(string, ...any)) {
		h := st.HelmUpgrade
		key := h.Namespace + "/" + h.Release
		if h.PreviousRevision <= 0 || first["helm "+key] {
			return
		}
		first["helm "+key] = true
		for _, live := range s.HelmReleases {
			if live.Namespace+"/"+live.Name != key {
				continue
			}
			if live.Revision != h.PreviousRevision && !live.Inferred {
				add("Helm release %s is at revision %d (chart %s), the plan expected revision %d", key, live.Revision, live.ChartVersion, h.PreviousRevision)
			}
			return
		}
		add("Helm release %s no longer exists", key)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef {
		return helmReleaseRef(st.HelmUpgrade.Namespace, st.HelmUpgrade.Release)
	},
	journal: journalAtOnce,
	backup:  usesNoBackup,
}

func (e *engine) helmUpgrade(ctx context.Context, r *run, rec *StepRecord, h *plan.HelmRelease) (outcome, error) {
	hc, err := e.helmClient()
	if err != nil {
		return outcome{}, err
	}
	name := h.Namespace + "/" + h.Release
	req := HelmRequest{Release: h.Release, Namespace: h.Namespace, Chart: h.Chart, Values: h.Values, ReuseValues: h.ReuseValues, DryRun: r.dry}
	cur, err := e.helmGet(ctx, h.Release, h.Namespace)
	if err != nil {
		return outcome{}, err
	}
	if cur == nil {
		return outcome{}, fmt.Errorf("Helm release %s does not exist; the plan upgrades it: install it first or re-plan", name)
	}
	if err := stuck(cur); err != nil {
		return outcome{}, err
	}
	if atTarget(cur, req) {
		return finished(fmt.Sprintf("Helm release %s is already at chart %s with the planned values; nothing to do", name, chartLabel(cur))), nil
	}
	if b, ok := rec.State["helmRevisionBefore"]; ok && cur.Revision > atoi(b) && cur.Status == "deployed" &&
		(h.Chart.Version == "" || cur.ChartVersion == h.Chart.Version) {
		return finished(fmt.Sprintf("an earlier attempt upgraded Helm release %s to chart %s", name, chartLabel(cur))), nil
	}
	diff := valueDiff(h.Values, cur.Values)
	if r.dry {
		if _, err := hc.Upgrade(ctx, req); err != nil {
			return outcome{}, fmt.Errorf("helm upgrade %s (dry run): %w", name, err)
		}
		return finished(fmt.Sprintf("would upgrade Helm release %s from chart %s to %s %s (values that change: %s)",
			name, chartLabel(cur), h.Chart.Name, h.Chart.Version, orNone(diff))), nil
	}
	if _, ok := rec.State["helmRevisionBefore"]; !ok {
		rec.State["helmRevisionBefore"] = strconv.Itoa(cur.Revision)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	before := atoi(rec.State["helmRevisionBefore"])
	err = e.helmAct(ctx, "helm upgrade "+name, func(ctx context.Context) error {
		_, err := hc.Upgrade(ctx, req)
		return err
	}, func(ctx context.Context) bool {
		rel, err := hc.Get(ctx, h.Release, h.Namespace)
		return err == nil && rel.Revision > before && rel.Status == "deployed" && (h.Chart.Version == "" || rel.ChartVersion == h.Chart.Version)
	})
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("upgraded Helm release %s from chart %s to %s %s (values that changed: %s)",
		name, chartLabel(cur), h.Chart.Name, h.Chart.Version, orNone(diff))), nil
}
