package execute

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var patchLabelsAction = action{
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, _ *StepRecord) (outcome, error) {
		pl := st.PatchLabels
		return e.patchMetadata(ctx, r, st, metadataPatch{field: "labels", verb: "label", apiVersion: pl.APIVersion, objects: pl.Targets(), set: pl.Set, remove: pl.Remove})
	},
	objects: func(st *plan.Step) []mesh.ObjectRef { return st.PatchLabels.Targets() },
	journal: journalAtOnce,
	backup:  usesNoBackup,
}

// metadataPatch sets and removes keys of one metadata map (labels or annotations) of some objects
// of one kind.
type metadataPatch struct {
	field, verb string
	apiVersion  string
	objects     []mesh.ObjectRef
	set         map[string]string
	remove      []string
}

// patchMetadata merge-patches, object by object, only the keys that differ (a re-run that finds
// them as planned changes nothing). Several objects are read with one LIST of their metadata, so
// only the ones that differ cost a request. A node that is gone is skipped.
func (e *engine) patchMetadata(ctx context.Context, r *run, st *plan.Step, m metadataPatch) (outcome, error) {
	if len(m.objects) == 0 {
		return outcome{}, fmt.Errorf("%s names no object; fix the plan", m.verb)
	}
	gv, err := schema.ParseGroupVersion(m.apiVersion)
	if err != nil || m.apiVersion == "" {
		return outcome{}, fmt.Errorf("%s: apiVersion %q is not valid; fix the plan", m.objects[0], m.apiVersion)
	}
	gvk := gv.WithKind(m.objects[0].Kind)
	var have map[string]map[string]string // by name; nil: read each object
	if len(m.objects) > 1 {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		var opts []client.ListOption
		if ns := m.objects[0].Namespace; ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := e.list(ctx, strings.ToLower(gvk.Kind)+"s", l, opts...); err != nil {
			return outcome{}, fmt.Errorf("%s %d %ss: %w", m.verb, len(m.objects), strings.ToLower(gvk.Kind), err)
		}
		have = map[string]map[string]string{}
		for i := range l.Items {
			have[l.Items[i].Name] = metadataOf(&l.Items[i], m.field)
		}
	}
	var changes []string
	unchanged := 0
	for _, o := range m.objects {
		var cur map[string]string
		if have != nil {
			c, ok := have[o.Name]
			if !ok {
				if o.Kind == "Node" {
					e.markGone(r, st, o.Name)
					changes = append(changes, fmt.Sprintf("node %s is gone (removed from the cluster since planning): skipped", o.Name))
					continue
				}
				return outcome{}, fmt.Errorf("patch %s of %s: %s not found", m.field, o, o)
			}
			cur = c
		}
		change, err := e.patchOne(ctx, r, gvk, o, m, cur, have != nil)
		if apierrors.IsNotFound(err) && o.Kind == "Node" {
			e.markGone(r, st, o.Name)
			if len(m.objects) == 1 {
				return skippedGone(o.Name), nil
			}
			changes = append(changes, fmt.Sprintf("node %s is gone (removed from the cluster since planning): skipped", o.Name))
			continue
		}
		if err != nil {
			return outcome{}, fmt.Errorf("patch %s of %s: %w", m.field, o, err)
		}
		if change == "" {
			unchanged++
			continue
		}
		changes = append(changes, change)
	}
	if unchanged > 0 {
		if len(m.objects) == 1 {
			changes = append(changes, m.field+" of "+m.objects[0].String()+" are already as planned")
		} else {
			changes = append(changes, fmt.Sprintf("%s of %d %s(s) are already as planned", m.field, unchanged, strings.ToLower(gvk.Kind)))
		}
	}
	return finished(changes...), nil
}

// patchOne patches one object's keys that differ from cur (read first when known is false); it
// returns "" when none does.
func (e *engine) patchOne(ctx context.Context, r *run, gvk schema.GroupVersionKind, o mesh.ObjectRef, m metadataPatch, cur map[string]string, known bool) (string, error) {
	var change string
	err := e.retry(ctx, "patch "+m.field+" of "+o.String(), func(ctx context.Context) error {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		obj.SetNamespace(o.Namespace)
		obj.SetName(o.Name)
		have := cur
		if !known {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			have = metadataOf(obj, m.field)
		}
		patch := map[string]any{}
		var what []string
		for k, v := range m.set {
			if c, ok := have[k]; !ok || c != v {
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
			change = ""
			return nil
		}
		sortStrings(what)
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{m.field: patch}})
		var opts []client.PatchOption
		change = m.verb + "ed " + o.String() + " " + strings.Join(what, " ")
		if m.verb == "label" {
			change = "labelled " + o.String() + " " + strings.Join(what, " ")
		}
		if r.dry {
			opts = append(opts, client.DryRunAll)
			change = "would " + m.verb + " " + o.String() + " " + strings.Join(what, " ")
		}
		return e.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), opts...)
	})
	return change, err
}

func metadataOf(o *metav1.PartialObjectMetadata, field string) map[string]string {
	if field == "annotations" {
		return o.GetAnnotations()
	}
	return o.GetLabels()
}
