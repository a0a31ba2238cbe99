package execute

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// meshGroup reports whether a CRD group is Istio's (istio.io, *.istio.io) or the Gateway API's.
func meshGroup(g string) bool {
	return g == "istio.io" || strings.HasSuffix(g, ".istio.io") || g == "gateway.networking.k8s.io"
}

// meshKinds lists the namespaced Istio and Gateway API kinds the cluster serves, at their storage
// versions, from the CRDs (one LIST).
func (e *engine) meshKinds(ctx context.Context) ([]schema.GroupVersionKind, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apiextensions.k8s.io/v1")
	list.SetKind("CustomResourceDefinitionList")
	if err := e.list(ctx, "CustomResourceDefinitions", list); err != nil {
		return nil, err
	}
	var out []schema.GroupVersionKind
	for _, crd := range list.Items {
		g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if !meshGroup(g) || scope != "Namespaced" || kind == "" {
			continue
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		version := ""
		for _, vi := range versions {
			v, _ := vi.(map[string]any)
			name, _ := v["name"].(string)
			if served, _ := v["served"].(bool); !served {
				continue
			}
			if storage, _ := v["storage"].(bool); storage || version == "" {
				version = name
			}
		}
		if version != "" {
			out = append(out, schema.GroupVersionKind{Group: g, Version: version, Kind: kind})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Kind < out[j].Kind
	})
	return out, nil
}

// backupNamespace reads every Istio and Gateway API object of the namespace (one LIST per kind the
// cluster serves), leaving out those already in have.
func (e *engine) backupNamespace(ctx context.Context, ns string, have []BackupEntry) ([]BackupEntry, error) {
	kinds, err := e.meshKinds(ctx)
	if err != nil {
		return nil, fmt.Errorf("find the Istio and Gateway API kinds to back up: %w", err)
	}
	seen := map[string]bool{}
	for _, h := range have {
		seen[entryKey(h.APIVersion, h.Ref)] = true
	}
	var out []BackupEntry
	for _, gvk := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := e.list(ctx, gvk.Kind+" in "+ns, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list %s (%s) in namespace %s to back them up: %w", gvk.Kind, gvk.GroupVersion(), ns, err)
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
		for i := range list.Items {
			u := &list.Items[i]
			ref := mesh.ObjectRef{Kind: gvk.Kind, Namespace: ns, Name: u.GetName()}
			if seen[entryKey(u.GetAPIVersion(), ref)] {
				continue
			}
			u.SetManagedFields(nil)
			out = append(out, BackupEntry{Ref: ref, APIVersion: u.GetAPIVersion(), Object: u.Object})
		}
	}
	return out, nil
}

// entryKey tells entries apart by API group and object (an Istio Gateway is not a Gateway API one).
func entryKey(apiVersion string, ref mesh.ObjectRef) string {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.Group + "|" + ref.String()
}

// findEntry finds the entry for an object of the API group of apiVersion.
func (b *Backup) findEntry(apiVersion string, ref mesh.ObjectRef) (BackupEntry, bool) {
	want := entryKey(apiVersion, ref)
	for _, e := range b.Entries {
		if entryKey(e.APIVersion, e.Ref) == want {
			return e, true
		}
	}
	return BackupEntry{}, false
}
