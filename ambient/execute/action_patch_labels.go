package execute

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

var patchLabelsAction = action{
	run: func(e *Executor, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		pl := st.PatchLabels
		return e.patchMetadata(ctx, r, st, metadataPatch{field: "labels", verb: "label", apiVersion: pl.APIVersion, object: pl.Object, set: pl.Set, remove: pl.Remove})
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return []mesh.ObjectRef{st.PatchLabels.Object} },
	node:    func(st *plan.Step) string { return nodeName(st.PatchLabels.Object) },
}

// nodeName is the object's name when it is a node, else "".
func nodeName(o mesh.ObjectRef) string {
	if o.Kind == "Node" {
		return o.Name
	}
	return ""
}

// metadataPatch sets and removes keys of one metadata map (labels or annotations) of one object.
type metadataPatch struct {
	field, verb string
	apiVersion  string
	object      mesh.ObjectRef
	set         map[string]string
	remove      []string
}

// patchMetadata merge-patches only the keys that differ (a re-run that finds them as planned changes
// nothing). A node that is gone is skipped.
func (e *Executor) patchMetadata(ctx context.Context, r *run, st *plan.Step, m metadataPatch) (outcome, error) {
	var change string
	err := e.retry(ctx, "patch "+m.field+" of "+m.object.String(), func(ctx context.Context) error {
		u, err := refObject(m.apiVersion, m.object)
		if err != nil {
			return err
		}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		have := u.GetLabels()
		if m.field == "annotations" {
			have = u.GetAnnotations()
		}
		patch := map[string]any{}
		var what []string
		for k, v := range m.set {
			if cur, ok := have[k]; !ok || cur != v {
				patch[k] = v
				what = append(what, k+"="+v)
			}
		}
		for _, k := range m.remove {
			if _, ok := have[k]; ok {
				patch[k] = nil
				what = append(what, k+"-")
			}
		}
		if len(patch) == 0 {
			change = m.field + " of " + m.object.String() + " are already as planned"
			return nil
		}
		sortStrings(what)
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{m.field: patch}})
		var opts []client.PatchOption
		change = m.verb + "ed " + m.object.String() + " " + strings.Join(what, " ")
		if m.verb == "label" {
			change = "labelled " + m.object.String() + " " + strings.Join(what, " ")
		}
		if r.dry {
			opts = append(opts, client.DryRunAll)
			change = "would " + m.verb + " " + m.object.String() + " " + strings.Join(what, " ")
		}
		return e.c.Patch(ctx, u, client.RawPatch(types.MergePatchType, body), opts...)
	})
	if apierrors.IsNotFound(err) && m.object.Kind == "Node" {
		e.markGone(r, st, m.object.Name)
		return skippedGone(m.object.Name), nil
	}
	if err != nil {
		return outcome{}, fmt.Errorf("patch %s of %s: %w", m.field, m.object, err)
	}
	return finished(change), nil
}
