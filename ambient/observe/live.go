package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// Live observes a cluster through r and returns its snapshot (Observation.Source "live").
//
// Each kind is listed once, cluster-wide, in pages of opts.PageSize; pods are summarised page by
// page. Kinds that are optional (Istio and Gateway API custom resources, Karpenter NodePools) and
// not served by the cluster are recorded in Observation.Skipped. Observation.Requests counts the API
// requests made. The ConfigMap list uses the field selector metadata.name=istio-cni-config: a
// cache-backed reader needs an index for that field.
//
// Secrets are never listed cluster-wide. Once every other kind is read, the Helm releases that
// Istio's objects belong to are known (meta.helm.sh/release-name and -namespace, else the
// app.kubernetes.io/instance label); then, per namespace holding such releases, one LIST with the
// label selector owner=helm,name in (<releases>) reads their records (Helm's storage Secrets) and
// nothing else. The observer needs list on Secrets in those namespaces only. Give it an uncached
// reader (client.New, or a manager's GetAPIReader): a cache-backed one would start a cluster-wide
// informer for every kind it lists, Secrets included.
func Live(ctx context.Context, r client.Reader, opts Options) (*mesh.Snapshot, error) {
	if r == nil {
		return nil, errors.New("observe.Live: the client.Reader is nil; pass a controller-runtime client (client.New) or a manager's API reader")
	}
	b := newBuilder()
	var skipped []string
	requests := 0
	var records []*kind
	for i := range kinds {
		k := &kinds[i]
		if k.perRelease {
			records = append(records, k)
			continue
		}
		n, notServed, err := listKind(ctx, r, b, k, opts.pageSize(), clusterWide)
		requests += n
		if err != nil {
			return nil, err
		}
		if notServed {
			skipped = append(skipped, k.label())
		}
	}
	// Second phase: the builder knows Istio's releases only now.
	for _, k := range records {
		n, err := listHelmRecords(ctx, r, b, k, opts.pageSize())
		requests += n
		if err != nil {
			return nil, err
		}
	}
	if opts.ServerVersion != nil {
		requests++
	}
	s, err := b.finish("live", opts)
	if err != nil {
		return nil, err
	}
	s.Observation.Skipped = skipped
	s.Observation.Requests = requests
	s.Normalize()
	return s, nil
}

// notServed reports whether an error means the API server does not serve the kind at all.
func notServed(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) ||
		strings.Contains(err.Error(), "the server could not find the requested resource")
}

// listScope is where a LIST looks: cluster-wide with the kind's own list options, or one namespace
// with options of its own.
type listScope struct {
	namespace string
	opts      []client.ListOption
	// why says what the LIST is for, in errors about access.
	why string
}

var clusterWide = listScope{}

func (s listScope) where() string {
	if s.namespace == "" {
		return "cluster-wide"
	}
	return "in namespace " + s.namespace
}

func (s listScope) access() string {
	if s.namespace == "" {
		return "in all namespaces"
	}
	return "in namespace " + s.namespace
}

// listHelmRecords lists the Helm release records of Istio's releases: one paged LIST per namespace
// holding such releases, selecting owner=helm,name in (<the releases there>).
func listHelmRecords(ctx context.Context, r client.Reader, b *builder, k *kind, pageSize int64) (requests int, err error) {
	namespaces, names := b.releaseNamespaces()
	for _, ns := range namespaces {
		sel, err := releaseSelector(names[ns])
		if err != nil { // cannot happen: noteRelease keeps only valid label values
			return requests, fmt.Errorf("list %s in namespace %s: %w", k.plural, ns, err)
		}
		scope := listScope{namespace: ns,
			opts: []client.ListOption{client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}},
			why:  "to read Helm's records of the Istio releases " + strings.Join(names[ns], ", ")}
		n, _, err := listKind(ctx, r, b, k, pageSize, scope)
		requests += n
		if err != nil {
			return requests, err
		}
	}
	return requests, nil
}

// listKind lists one kind in pages and hands every item to the builder. It tries the kind's versions
// in order while the server does not serve them. It returns the number of requests made and whether
// no version is served (only for optional kinds; for required ones that is an error).
func listKind(ctx context.Context, r client.Reader, b *builder, k *kind, pageSize int64, scope listScope) (requests int, skipped bool, err error) {
	if k.maxPage > 0 && pageSize > k.maxPage {
		pageSize = k.maxPage
	}
	for vi, v := range k.versions {
		gvk := schema.GroupVersionKind{Group: k.group, Version: v, Kind: k.kind}
		cont := ""
		for page := 0; ; page++ {
			if err := ctx.Err(); err != nil {
				return requests, false, fmt.Errorf("list %s: %w", k.plural, err)
			}
			list := newList(k, gvk)
			opts := []client.ListOption{client.Limit(pageSize)}
			if scope.namespace == "" {
				opts = append(opts, k.listOpts...)
			} else {
				opts = append(opts, scope.opts...)
			}
			if cont != "" {
				opts = append(opts, client.Continue(cont))
			}
			requests++
			if err := r.List(ctx, list, opts...); err != nil {
				if page == 0 && notServed(err) {
					if vi+1 < len(k.versions) {
						break // try the next version
					}
					if k.optional {
						return requests, true, nil
					}
				}
				why := ""
				if scope.why != "" {
					why = " " + scope.why
				}
				return requests, false, fmt.Errorf("list %s (%s) %s: %w; the observer needs get/list on %s %s%s (check RBAC and that the API server serves %s)",
					k.plural, gvk.GroupVersion(), scope.where(), err, k.plural, scope.access(), why, gvk.GroupVersion())
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return requests, false, fmt.Errorf("list %s: read the items: %w", k.plural, err)
			}
			for _, o := range items {
				if err := b.addObject(k, o); err != nil {
					return requests, false, fmt.Errorf("list %s: %w", k.plural, err)
				}
			}
			cont = list.GetContinue()
			if cont == "" {
				return requests, false, nil
			}
		}
	}
	return requests, false, nil
}

// newList returns an empty list of the kind in its form.
func newList(k *kind, gvk schema.GroupVersionKind) client.ObjectList {
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	switch k.form {
	case metadataOnly:
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(listGVK)
		return l
	case untyped:
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(listGVK)
		return l
	default:
		return k.newList()
	}
}
