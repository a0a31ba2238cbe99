package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var deleteObjectAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.deleteObject(ctx, r, st, rec, st.DeleteObject)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return []mesh.ObjectRef{st.DeleteObject.Object} },
	journal: journalAtOnce,
	// The backup the deletion names is read back first (a dry run deletes nothing, so reads none).
	backup: func(st *plan.Step, dry bool) (string, bool) {
		if dry {
			return "", false
		}
		return st.DeleteObject.BackupStep, false
	},
}

func refObject(apiVersion string, ref mesh.ObjectRef) (*unstructured.Unstructured, error) {
	if apiVersion == "" {
		return nil, fmt.Errorf("%s has no apiVersion; fix the plan", ref)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: apiVersion %q: %w", ref, apiVersion, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gv.WithKind(ref.Kind))
	u.SetNamespace(ref.Namespace)
	u.SetName(ref.Name)
	return u, nil
}

func (e *engine) deleteObject(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, d *plan.DeleteObject) (outcome, error) {
	u, err := refObject(d.APIVersion, d.Object)
	if err != nil {
		return outcome{}, err
	}
	var opts []client.DeleteOption
	verb := "deleted"
	if r.dry {
		opts = append(opts, client.DryRunAll)
		verb = fmt.Sprintf("would delete (after checking the backup written by step %s)", d.BackupStep)
	} else if d.BackupStep == "" {
		// A rollback that removes what its step created names no backup step (plan validation
		// allows that only in rollbacks): back the object up here, as an uninstall's rollback does.
		ent, err := e.backupObject(ctx, plan.BackupObject{APIVersion: d.APIVersion, Object: d.Object})
		if err != nil {
			return outcome{}, err
		}
		if err := e.autoBackup(ctx, r, st, rec, ent); err != nil {
			return outcome{}, err
		}
	} else if err := e.requireBackup(ctx, r, d.BackupStep, d.Object); err != nil {
		return outcome{}, err
	}
	gone := false
	err = e.retry(ctx, "delete "+d.Object.String(), func(ctx context.Context) error {
		err := e.c.Delete(ctx, u.DeepCopy(), opts...)
		if apierrors.IsNotFound(err) {
			gone = true
			return nil
		}
		return err
	})
	if err != nil {
		return outcome{}, fmt.Errorf("delete %s: %w", d.Object, err)
	}
	if gone {
		return finished(d.Object.String() + " is already gone"), nil
	}
	return finished(verb + " " + d.Object.String()), nil
}
