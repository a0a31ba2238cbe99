package execute

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var patchLabelsAction = action{
	run: func(e *Executor, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		return e.patchLabels(ctx, r, st.PatchLabels)
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return []mesh.ObjectRef{st.PatchLabels.Object} },
}

func (e *Executor) patchLabels(ctx context.Context, r *run, pl *plan.PatchLabels) (outcome, error) {
	var change string
	err := e.retry(ctx, "patch labels of "+pl.Object.String(), func(ctx context.Context) error {
		u, err := refObject(pl.APIVersion, pl.Object)
		if err != nil {
			return err
		}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		have := u.GetLabels()
		patch := map[string]any{}
		var what []string
		for k, v := range pl.Set {
			if cur, ok := have[k]; !ok || cur != v {
				patch[k] = v
				what = append(what, k+"="+v)
			}
		}
		for _, k := range pl.Remove {
			if _, ok := have[k]; ok {
				patch[k] = nil
				what = append(what, k+"-")
			}
		}
		if len(patch) == 0 {
			change = "labels of " + pl.Object.String() + " are already as planned"
			return nil
		}
		sortStrings(what)
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
		var opts []client.PatchOption
		change = "labelled " + pl.Object.String() + " " + strings.Join(what, " ")
		if r.dry {
			opts = append(opts, client.DryRunAll)
			change = "would label " + pl.Object.String() + " " + strings.Join(what, " ")
		}
		return e.c.Patch(ctx, u, client.RawPatch(types.MergePatchType, body), opts...)
	})
	if err != nil {
		return outcome{}, fmt.Errorf("patch labels of %s: %w", pl.Object, err)
	}
	return finished(change), nil
}
