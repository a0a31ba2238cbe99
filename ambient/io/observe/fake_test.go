package observe_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
)

// listCall records one List request the fake cluster served.
type listCall struct {
	gvk       schema.GroupVersionKind
	selector  string // label and field selectors, "" when none
	namespace string
	labels    string // the label selector, "" for none
	continued bool
	items     int // items in this page
	total     int // items the whole list has (after selectors)
}

// fakeCluster is a controller-runtime fake client that pages like an API server (the fake client
// ignores Limit and Continue), records every List, and lets a test fail chosen Lists.
type fakeCluster struct {
	client.WithWatch
	mu    sync.Mutex
	calls []listCall
	// serve is held for each List: Live lists several kinds at once, and the fake client registers
	// unstructured kinds in the scheme that GVKForObject reads.
	serve sync.Mutex
}

// failFunc decides whether a List of gvk fails, and with what.
type failFunc func(gvk schema.GroupVersionKind) error

func newFakeCluster(t *testing.T, objs []client.Object, fail failFunc) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{}
	base := fake.NewClientBuilder().
		WithScheme(observe.Scheme()).
		WithObjects(objs...).
		// A real API server supports metadata.name for every kind; the fake needs an index.
		WithIndex(&corev1.ConfigMap{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		WithInterceptorFuncs(interceptor.Funcs{List: fc.list(fail)}).
		Build()
	fc.WithWatch = base
	return fc
}

func (fc *fakeCluster) list(fail failFunc) func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	return func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		fc.serve.Lock()
		defer fc.serve.Unlock()
		lo := client.ListOptions{}
		lo.ApplyOptions(opts)
		gvk, err := apiutil.GVKForObject(list, c.Scheme())
		if err != nil {
			return err
		}
		call := listCall{gvk: gvk, namespace: lo.Namespace, continued: lo.Continue != ""}
		if lo.LabelSelector != nil {
			call.labels = lo.LabelSelector.String()
			call.selector = lo.LabelSelector.String()
		}
		if lo.FieldSelector != nil {
			call.selector += ";" + lo.FieldSelector.String()
		}
		if fail != nil {
			if err := fail(gvk); err != nil {
				fc.record(call)
				return err
			}
		}
		if err := c.List(ctx, list, opts...); err != nil {
			fc.record(call)
			return err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		start := 0
		if lo.Continue != "" {
			if start, err = strconv.Atoi(lo.Continue); err != nil || start > len(items) {
				return fmt.Errorf("bad continue token %q", lo.Continue)
			}
		}
		end := len(items)
		if lo.Limit > 0 && start+int(lo.Limit) < end {
			end = start + int(lo.Limit)
		}
		if err := meta.SetList(list, items[start:end]); err != nil {
			return err
		}
		if end < len(items) {
			list.SetContinue(strconv.Itoa(end))
		} else {
			list.SetContinue("")
		}
		call.items, call.total = end-start, len(items)
		fc.record(call)
		return nil
	}
}

func (fc *fakeCluster) record(c listCall) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.calls = append(fc.calls, c)
}

func (fc *fakeCluster) listCalls() []listCall {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]listCall(nil), fc.calls...)
}
