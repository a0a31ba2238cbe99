package execute

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var reinjectAction = action{
	workloads: func(st *plan.Step) []mesh.ObjectRef { return st.Reinject.Workloads },
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.reinject(ctx, r, st, rec, st.Reinject)
	},
	journal: journalAtOnce,
	backup:  usesNoBackup,
}

// reinject labels the namespace for injection again, then restarts its workloads in batches (the
// restart's own bookkeeping makes each batch happen once).
func (e *engine) reinject(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, ri *plan.Reinject) (outcome, error) {
	var changes []string
	if rec.State["labelled"] != "true" {
		out, err := e.patchMetadata(ctx, r, st, metadataPatch{field: "labels", verb: "label", apiVersion: "v1",
			objects: []mesh.ObjectRef{{Kind: "Namespace", Name: ri.Namespace}}, set: ri.Labels, remove: ri.Remove})
		if err != nil {
			return outcome{}, err
		}
		if r.dry {
			changes = out.changes
		} else {
			rec.Changes = append(rec.Changes, out.changes...)
			rec.State["labelled"] = "true"
			if err := e.save(ctx, r); err != nil {
				return outcome{}, err
			}
		}
	}
	if len(ri.Workloads) == 0 {
		return finished(changes...), nil
	}
	if !r.dry && rec.State["restartedAt"] == "" {
		// The restart's stamp must differ from the one the migration's restart left, or nothing
		// would roll (stamps have a resolution of one second).
		stamp := e.clock.Now().UTC().Truncate(time.Second)
		for _, w := range ri.Workloads {
			if cur, err := e.restartStamp(ctx, w); err == nil {
				if t, err := time.Parse(time.RFC3339, cur); err == nil && !t.Before(stamp) {
					stamp = t.Add(time.Second)
				}
			}
		}
		rec.State["restartedAt"] = stamp.Format(time.RFC3339)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	out, err := e.restart(ctx, r, st, rec, &plan.Restart{Workloads: ri.Workloads, BatchSize: ri.BatchSize})
	if err != nil {
		return outcome{}, err
	}
	out.changes = append(changes, out.changes...)
	return out, nil
}

// restartStamp reads the restartedAt annotation of a workload's pod template.
func (e *engine) restartStamp(ctx context.Context, w mesh.ObjectRef) (string, error) {
	gvk, err := workloadGVK(w.Kind)
	if err != nil {
		return "", err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if _, err := e.get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Name}, u); err != nil {
		return "", err
	}
	s, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", annotationRestartedAt)
	return s, nil
}
