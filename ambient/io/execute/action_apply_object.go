package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var applyObjectAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		return e.applyObjects(ctx, r, []map[string]any{st.ApplyObject.Object})
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return []mesh.ObjectRef{st.ApplyObject.Ref()} },
	journal: journalAtOnce,
	backup:  usesNoBackup,
}

func objectFromPlan(m map[string]any) (*unstructured.Unstructured, error) {
	cp, err := jsonCopy(m)
	if err != nil {
		return nil, fmt.Errorf("object is not JSON data: %w", err)
	}
	u := &unstructured.Unstructured{Object: cp}
	if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
		return nil, fmt.Errorf("object %s has no apiVersion, kind or metadata.name; fix the plan", describeObj(u))
	}
	return u, nil
}

func describeObj(u *unstructured.Unstructured) string {
	return mesh.ObjectRef{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}.String()
}

func (e *engine) applyObjects(ctx context.Context, r *run, objs []map[string]any) (outcome, error) {
	var changes []string
	for _, m := range objs {
		u, err := objectFromPlan(m)
		if err != nil {
			return outcome{}, err
		}
		opts := []client.ApplyOption{client.FieldOwner(e.opts.FieldOwner), client.ForceOwnership}
		verb := "applied"
		if r.dry {
			opts = append(opts, client.DryRunAll)
			verb = "would apply (server dry run passed)"
		}
		what := describeObj(u)
		already := false
		err = e.retry(ctx, "apply "+what, func(ctx context.Context) error {
			// An object that already holds every planned field is not applied again: an earlier
			// attempt went through and only its response was lost, or a run that crashed before
			// its journal write applied it.
			if !r.dry && e.applied(ctx, u) {
				already = true
				return nil
			}
			return e.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...)
		})
		if err != nil {
			return outcome{}, fmt.Errorf("server-side apply %s (field owner %s): %w", what, e.opts.FieldOwner, err)
		}
		if already {
			changes = append(changes, what+" already holds the planned fields")
			continue
		}
		changes = append(changes, verb+" "+what)
	}
	return finished(changes...), nil
}

// applied reports whether the live object already holds every field of the desired one.
func (e *engine) applied(ctx context.Context, desired *unstructured.Unstructured) bool {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return false
	}
	return contains(desired.Object, live.Object)
}

// contains reports whether have holds want: every key of a map, every element of a list (same
// length, element by element), equal scalars. Fields the server defaulted do not matter.
func contains(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !contains(v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(w[i], h[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	}
	return fmt.Sprint(want) == fmt.Sprint(have)
}
