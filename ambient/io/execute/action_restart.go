package execute

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var restartAction = action{
	workloads: func(st *plan.Step) []mesh.ObjectRef { return st.Restart.Workloads },
	// A restart waits on its workloads' rollouts.
	interests: func(st *plan.Step) []interest {
		var out []interest
		for _, w := range st.Restart.Workloads {
			out = append(out, workloadInterest(w.Kind, w.Namespace, w.Name)...)
		}
		return out
	},
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.restart(ctx, r, st, rec, st.Restart)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return append([]mesh.ObjectRef(nil), st.Restart.Workloads...) },
	journal: journalAtOnce,
	backup:  usesNoBackup,
}

// annotationRestartedAt is what kubectl rollout restart stamps on the pod template.
const annotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

func workloadGVK(kind string) (schema.GroupVersionKind, error) {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}, nil
	}
	return schema.GroupVersionKind{}, fmt.Errorf("cannot restart a %s; only Deployments, StatefulSets and DaemonSets roll out", kind)
}

func (e *engine) restart(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, rs *plan.Restart) (outcome, error) {
	size := max(1, rs.BatchSize)
	batches := (len(rs.Workloads) + size - 1) / size
	if r.dry {
		var names []string
		for _, w := range rs.Workloads {
			if _, err := workloadGVK(w.Kind); err != nil {
				return outcome{}, fmt.Errorf("%s: %w", w, err)
			}
			names = append(names, w.String())
		}
		return finished(fmt.Sprintf("would restart %s in %d batch(es) of %d: %s", plural(len(names), "workload", "workloads"), batches, size, plan.ListSome(names, 10))), nil
	}
	if rec.State["restartedAt"] == "" {
		rec.State["restartedAt"] = e.clock.Now().UTC().Format(time.RFC3339)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	stamp := rec.State["restartedAt"]
	var changes []string
	for b := atoi(rec.State["batch"]); b < batches; b = atoi(rec.State["batch"]) {
		ws := rs.Workloads[b*size : min(len(rs.Workloads), (b+1)*size)]
		key := fmt.Sprintf("batch%dPatched", b)
		if rec.State[key] != "true" {
			for _, w := range ws {
				changed, err := e.stampRestart(ctx, w, stamp)
				if err != nil {
					return outcome{}, err
				}
				if changed {
					changes = append(changes, fmt.Sprintf("restarted %s (restartedAt %s)", w, stamp))
				}
			}
			rec.State[key] = "true"
			if err := e.save(ctx, r); err != nil {
				return outcome{}, err
			}
		}
		var waiting []string
		for _, w := range ws {
			ok, reason, err := e.rolloutDone(ctx, nil, w)
			if err != nil {
				return outcome{}, err
			}
			if !ok {
				waiting = append(waiting, reason)
			}
		}
		if len(waiting) > 0 {
			if e.clock.Now().Sub(rec.AttemptStarted) > e.opts.VerifyTimeout {
				return outcome{}, fmt.Errorf("%w: restart batch %d of %d did not roll out within %s: %s", ErrTimeout, b+1, batches, e.opts.VerifyTimeout, strings.Join(waiting, "; "))
			}
			rec.Changes = append(rec.Changes, changes...)
			return outcome{progress: fmt.Sprintf("batch %d/%d: waiting for %s", b+1, batches, strings.Join(waiting, "; ")), done: b, of: batches}, nil
		}
		rec.State["batch"] = strconv.Itoa(b + 1)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	return finished(changes...), nil
}

// stampRestart sets the restartedAt annotation of a workload's pod template to stamp, unless it is
// already there.
func (e *engine) stampRestart(ctx context.Context, w mesh.ObjectRef, stamp string) (bool, error) {
	gvk, err := workloadGVK(w.Kind)
	if err != nil {
		return false, fmt.Errorf("%s: %w", w, err)
	}
	changed := false
	err = e.retry(ctx, "restart "+w.String(), func(ctx context.Context) error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Name}, u); err != nil {
			return err
		}
		cur, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", annotationRestartedAt)
		if cur == stamp {
			return nil
		}
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{annotationRestartedAt: stamp}}}}})
		if err := e.c.Patch(ctx, u, client.RawPatch(types.MergePatchType, body)); err != nil {
			return err
		}
		changed = true
		return nil
	})
	if apierrors.IsNotFound(err) {
		return false, fmt.Errorf("%s does not exist; re-plan from a fresh snapshot", w)
	}
	if err != nil {
		return false, fmt.Errorf("restart %s: %w", w, err)
	}
	return changed, nil
}
