package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var helmInstallAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.helmInstall(ctx, r, rec, st.HelmInstall)
	},
	stale: func(st *plan.Step, s *mesh.Snapshot, _ map[string]bool, add func(string, ...any)) {
		key := st.HelmInstall.Namespace + "/" + st.HelmInstall.Release
		for _, h := range s.HelmReleases {
			if h.Namespace+"/"+h.Name == key {
				add("Helm release %s already exists; the plan installs it", key)
			}
		}
	},
	objects: func(st *plan.Step) []mesh.ObjectRef {
		return helmReleaseRef(st.HelmInstall.Namespace, st.HelmInstall.Release)
	},
	journal: journalAtOnce,
	backup:  usesNoBackup,
}

func (e *engine) helmInstall(ctx context.Context, r *run, rec *StepRecord, h *plan.HelmRelease) (outcome, error) {
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
	if cur != nil {
		attempted := rec.State["helmInstallAttempted"] == "true"
		switch {
		case atTarget(cur, req), attempted && cur.Status == "deployed" && cur.ChartVersion == h.Chart.Version:
			return finished(fmt.Sprintf("Helm release %s is installed at chart %s", name, chartLabel(cur))), nil
		case attempted:
			return outcome{}, fmt.Errorf("Helm release %s exists with status %q after an earlier attempt of this step; look at it (helm status -n %s %s), uninstall it and run again",
				name, cur.Status, h.Namespace, h.Release)
		}
		return outcome{}, fmt.Errorf("Helm release %s already exists (chart %s, %s); the plan installs it fresh: re-plan from a fresh snapshot", name, chartLabel(cur), cur.Status)
	}
	if r.dry {
		if _, err := hc.Install(ctx, req); err != nil {
			return outcome{}, fmt.Errorf("helm install %s (dry run): %w", name, err)
		}
		return finished(fmt.Sprintf("would install Helm release %s from chart %s %s", name, h.Chart.Name, h.Chart.Version)), nil
	}
	rec.State["helmInstallAttempted"] = "true"
	if err := e.save(ctx, r); err != nil {
		return outcome{}, err
	}
	err = e.helmAct(ctx, "helm install "+name, func(ctx context.Context) error {
		_, err := hc.Install(ctx, req)
		return err
	}, func(ctx context.Context) bool {
		rel, err := hc.Get(ctx, h.Release, h.Namespace)
		return err == nil && rel.Status == "deployed" && (h.Chart.Version == "" || rel.ChartVersion == h.Chart.Version)
	})
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("installed Helm release %s from chart %s %s", name, h.Chart.Name, h.Chart.Version)), nil
}
