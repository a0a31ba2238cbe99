package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var helmUninstallAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.helmUninstall(ctx, r, st, rec, st.HelmUninstall)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef {
		return helmReleaseRef(st.HelmUninstall.Namespace, st.HelmUninstall.Release)
	},
	journal: journalAtOnce,
	// The backup the uninstall names is read back first (a dry run removes nothing, so reads none).
	backup: func(st *plan.Step, dry bool) (string, bool) {
		if dry {
			return "", false
		}
		return st.HelmUninstall.BackupStep, false
	},
}

func (e *engine) helmUninstall(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, u *plan.HelmUninstall) (outcome, error) {
	hc, err := e.helmClient()
	if err != nil {
		return outcome{}, err
	}
	name := u.Namespace + "/" + u.Release
	ref := mesh.ObjectRef{Kind: "HelmRelease", Namespace: u.Namespace, Name: u.Release}
	cur, err := e.helmGet(ctx, u.Release, u.Namespace)
	if err != nil {
		return outcome{}, err
	}
	var note string
	switch {
	case r.dry && u.BackupStep != "":
		note = fmt.Sprintf(" after checking the backup written by step %s", u.BackupStep)
	case r.dry:
		note = " after backing it up"
	case u.BackupStep != "":
		if err := e.requireBackup(ctx, r, u.BackupStep, ref); err != nil {
			return outcome{}, err
		}
	default:
		// A rollback that removes what the plan installed names no backup step: back it up here.
		if err := e.autoBackup(ctx, r, st, rec, BackupEntry{Ref: ref, Release: cur, Missing: cur == nil}); err != nil {
			return outcome{}, err
		}
	}
	if cur == nil {
		return finished(fmt.Sprintf("Helm release %s is not installed; nothing to uninstall", name)), nil
	}
	req := HelmUninstallRequest{Release: u.Release, Namespace: u.Namespace, DryRun: r.dry}
	if r.dry {
		if err := hc.Uninstall(ctx, req); err != nil {
			return outcome{}, fmt.Errorf("helm uninstall %s (dry run): %w", name, err)
		}
		return finished(fmt.Sprintf("would uninstall Helm release %s (chart %s)%s", name, chartLabel(cur), note)), nil
	}
	err = e.helmAct(ctx, "helm uninstall "+name, func(ctx context.Context) error {
		return hc.Uninstall(ctx, req)
	}, func(ctx context.Context) bool {
		_, err := hc.Get(ctx, u.Release, u.Namespace)
		return errors.Is(err, ErrReleaseNotFound)
	})
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("uninstalled Helm release %s (chart %s)", name, chartLabel(cur))), nil
}
