package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Live observes a cluster through r and returns its snapshot (Observation.Source "live").
//
// Each kind is listed once, cluster-wide, in pages of opts.PageSize; pods are summarised page by
// page. Kinds that are optional (Istio and Gateway API custom resources, Karpenter NodePools) and
// not served by the cluster are recorded in Observation.Skipped. Observation.Requests counts the API
// requests made. The ConfigMap list uses the field selector metadata.name=istio-cni-config: a
// cache-backed reader needs an index for that field.
//
// Every kind of mesh.ConfigGroups is read: the kinds of mesh.ConfigKinds from the table, and a kind
// newer than the code from its CustomResourceDefinition (one GET for its kind and versions, then a
// LIST); one that cannot be read is recorded in Observation.Unread.
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
	l := &lister{r: r, b: newBuilder(), pageSize: opts.pageSize()}
	if opts.WatchList {
		l.w, _ = r.(client.WithWatch)
	}
	var clusterKinds, records []*kind
	for i := range kinds {
		if kinds[i].perRelease {
			records = append(records, &kinds[i])
		} else {
			clusterKinds = append(clusterKinds, &kinds[i])
		}
	}
	skipped, err := l.listAll(ctx, clusterKinds, opts.parallel())
	if err != nil {
		return nil, err
	}
	l.b.complete = true
	for _, k := range clusterKinds {
		if !containsString(skipped, k.label()) {
			l.b.read[k.resource()] = true
		}
	}
	if err := l.listNewConfigKinds(ctx); err != nil {
		return nil, err
	}
	// Second phase: the builder knows Istio's releases only now.
	for _, k := range records {
		if err := l.listHelmRecords(ctx, k); err != nil {
			return nil, err
		}
	}
	requests := int(l.requests.Load())
	if opts.ServerVersion != nil {
		requests++
	}
	s, err := l.b.finish("live", opts)
	if err != nil {
		return nil, err
	}
	s.Observation.Skipped = skipped
	s.Observation.Requests = requests
	s.Normalize()
	return s, nil
}

// listNewConfigKinds reads the kinds of mesh.ConfigGroups that the cluster's CRDs serve and the
// kind table does not hold (CRDs newer than the code): one GET of each such CRD for its kind and
// served versions, then its objects as any custom resource. A kind that cannot be read (the CRD
// or the list refused) stays unread, and the plans name it as not assessed.
func (l *lister) listNewConfigKinds(ctx context.Context) error {
	for _, c := range l.b.crds {
		if !mesh.IsConfigGroup(c.Group) || l.b.read[c.Name] {
			continue
		}
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		l.requests.Add(1)
		if err := l.r.Get(ctx, client.ObjectKey{Name: c.Name}, crd); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		k := crdKind(crd)
		if k == nil {
			continue
		}
		if skipped, err := l.listKind(ctx, k, clusterWide); err == nil && !skipped {
			l.b.read[c.Name] = true
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// crdKind is the kind table entry for a CRD's objects: its kind and plural, its served versions
// with the storage version first; nil when the CRD says none.
func crdKind(crd *unstructured.Unstructured) *kind {
	kindName, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var served []string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if ok, _ := m["served"].(bool); !ok || name == "" {
			continue
		}
		if storage, _ := m["storage"].(bool); storage {
			served = append([]string{name}, served...)
		} else {
			served = append(served, name)
		}
	}
	if kindName == "" || plural == "" || len(served) == 0 {
		return nil
	}
	k := configKind(schema.GroupVersionKind{Group: group, Kind: kindName, Version: served[0]})
	k.plural, k.versions = plural, served
	return k
}

// lister reads kinds into one builder, several at a time.
type lister struct {
	r client.Reader
	// w streams kinds with watch-lists when set (Options.WatchList and a reader that watches).
	w        client.WithWatch
	pageSize int64
	requests atomic.Int64
	// noWatchList is set once the server refused a watch-list: the other kinds are listed.
	noWatchList atomic.Bool

	mu sync.Mutex // guards b
	b  *builder
}

// add hands objects of one kind to the builder.
func (l *lister) add(k *kind, objs ...runtime.Object) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range objs {
		if err := l.b.addObject(k, o); err != nil {
			return fmt.Errorf("list %s: %w", k.plural, err)
		}
	}
	return nil
}

// listAll reads every kind of ks cluster-wide, up to parallel at a time, heavy kinds started
// first. It returns the labels of the optional kinds not served, in table order, and the first
// error in table order (an error that only reports the others' cancellation comes last).
func (l *lister) listAll(ctx context.Context, ks []*kind, parallel int) ([]string, error) {
	type result struct {
		skipped bool
		err     error
	}
	results := make([]result, len(ks))
	order := make([]int, 0, len(ks))
	for _, heavy := range []bool{true, false} {
		for i, k := range ks {
			if k.heavy == heavy {
				order = append(order, i)
			}
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for _, i := range order {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			skipped, err := l.listKind(runCtx, ks[i], clusterWide)
			if err != nil {
				cancel()
			}
			results[i] = result{skipped, err}
		}()
	}
	wg.Wait()
	var skipped []string
	var first, cancelled error
	for i, res := range results {
		switch {
		case res.err == nil:
			if res.skipped {
				skipped = append(skipped, ks[i].label())
			}
		case ctx.Err() == nil && errors.Is(res.err, context.Canceled):
			if cancelled == nil {
				cancelled = res.err // cancelled because another kind failed
			}
		case first == nil:
			first = res.err
		}
	}
	if first == nil {
		first = cancelled
	}
	return skipped, first
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
func (l *lister) listHelmRecords(ctx context.Context, k *kind) error {
	namespaces, names := l.b.releaseNamespaces()
	for _, ns := range namespaces {
		sel, err := releaseSelector(names[ns])
		if err != nil { // cannot happen: noteRelease keeps only valid label values
			return fmt.Errorf("list %s in namespace %s: %w", k.plural, ns, err)
		}
		scope := listScope{namespace: ns,
			opts: []client.ListOption{client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}},
			why:  "to read Helm's records of the Istio releases " + strings.Join(names[ns], ", ")}
		if _, err := l.listKind(ctx, k, scope); err != nil {
			return err
		}
	}
	return nil
}

// listKind reads one kind and hands every item to the builder: with a watch-list when the lister
// streams (falling back to LISTs when the server refuses it), else in pages. It tries the kind's
// versions in order while the server does not serve them, and reports whether no version is
// served (only for optional kinds; for required ones that is an error).
func (l *lister) listKind(ctx context.Context, k *kind, scope listScope) (skipped bool, err error) {
	pageSize := l.pageSize
	if k.maxPage > 0 && pageSize > k.maxPage {
		pageSize = k.maxPage
	}
	selection := k.listOpts
	if scope.namespace != "" {
		selection = scope.opts
	}
	for vi, v := range k.versions {
		gvk := schema.GroupVersionKind{Group: k.group, Version: v, Kind: k.kind}
		fail := func(err error) (bool, error) {
			why := ""
			if scope.why != "" {
				why = " " + scope.why
			}
			return false, fmt.Errorf("list %s (%s) %s: %w; the observer needs get/list on %s %s%s (check RBAC and that the API server serves %s)",
				k.plural, gvk.GroupVersion(), scope.where(), err, k.plural, scope.access(), why, gvk.GroupVersion())
		}
		if l.w != nil && !l.noWatchList.Load() {
			done, err := l.watchList(ctx, k, gvk, selection)
			switch {
			case done:
				return false, nil
			case err != nil && notServed(err):
				if vi+1 < len(k.versions) {
					continue // try the next version
				}
				if k.optional {
					return true, nil
				}
				return fail(err)
			case err != nil:
				return false, fmt.Errorf("list %s (%s) %s: %w", k.plural, gvk.GroupVersion(), scope.where(), err)
			}
			// Refused: list it.
		}
		cont := ""
		for page := 0; ; page++ {
			if err := ctx.Err(); err != nil {
				return false, fmt.Errorf("list %s: %w", k.plural, err)
			}
			list := newList(k, gvk)
			opts := append([]client.ListOption{client.Limit(pageSize)}, selection...)
			if cont != "" {
				opts = append(opts, client.Continue(cont))
			}
			l.requests.Add(1)
			if err := l.r.List(ctx, list, opts...); err != nil {
				if page == 0 && notServed(err) {
					if vi+1 < len(k.versions) {
						break // try the next version
					}
					if k.optional {
						return true, nil
					}
				}
				return fail(err)
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return false, fmt.Errorf("list %s: read the items: %w", k.plural, err)
			}
			if err := l.add(k, items...); err != nil {
				return false, err
			}
			cont = list.GetContinue()
			if cont == "" {
				return false, nil
			}
		}
	}
	return false, nil
}

// watchList streams one kind with a watch that sends every object that exists first and then a
// bookmark annotated k8s.io/initial-events-end (sendInitialEvents with resourceVersionMatch
// NotOlderThan: the consistent read a LIST makes). Objects are handed to the builder as they
// arrive, so none is held once summarised. done reports that the kind was read. When the server
// refuses the watch before sending anything (one without the WatchList feature answers 400 or 422),
// done and err are both unset and noWatchList is set: the caller lists. An error that notServed
// recognises is returned as it is; an error after objects arrived is fatal, as is a LIST whose
// later page fails.
func (l *lister) watchList(ctx context.Context, k *kind, gvk schema.GroupVersionKind, selection []client.ListOption) (done bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	raw := &metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	}
	opts := append([]client.ListOption{&client.ListOptions{Raw: raw}}, selection...)
	l.requests.Add(1)
	w, err := l.w.Watch(ctx, newList(k, gvk), opts...)
	if err != nil {
		if notServed(err) || ctx.Err() != nil {
			return false, err
		}
		if refusedWatchList(err) {
			l.noWatchList.Store(true)
		}
		return false, nil
	}
	defer w.Stop()
	added := 0
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				if added == 0 {
					return false, nil // closed before anything arrived: list it
				}
				return false, fmt.Errorf("the watch-list ended after %d objects, before the server said the initial list was complete; retry, or observe without Options.WatchList", added)
			}
			switch ev.Type {
			case watch.Added:
				if err := l.add(k, ev.Object); err != nil {
					return false, err
				}
				added++
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					return true, nil
				}
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if added == 0 {
					if refusedWatchList(err) {
						l.noWatchList.Store(true)
					}
					return false, nil
				}
				return false, fmt.Errorf("the watch-list failed after %d objects: %w", added, err)
			default:
				// The initial events are all ADDED; anything else means the server does not send them
				// as a list, and the objects seen so far cannot be taken back.
				return false, fmt.Errorf("the watch-list sent a %s event before the initial list was complete; observe without Options.WatchList", ev.Type)
			}
		}
	}
}

// refusedWatchList tells whether a server answered a watch-list as one that does not support it, or
// forbade it (RBAC without watch, RequiredPermissions rather than RequiredPermissionsFor): either
// way the other kinds are listed without asking again.
func refusedWatchList(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsForbidden(err)
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
