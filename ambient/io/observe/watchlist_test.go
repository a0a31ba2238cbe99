package observe_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
)

// How the watch-list cluster answers a watch.
type watchMode int

const (
	// streams: every object as ADDED, then the bookmark that ends the initial list.
	streams watchMode = iota
	// refuses: 400 Bad Request, as a server without the WatchList feature answers.
	refuses
	// breaksAfterTwo: two objects, then an ERROR event.
	breaksAfterTwo
	// forbids: 403 Forbidden, as RBAC answers a reader granted list but not watch.
	forbids
)

// watchListCluster is a fakeCluster (paged LISTs) whose Watch plays an API server's watch-list,
// which controller-runtime's fake client does not (it ignores sendInitialEvents).
type watchListCluster struct {
	*fakeCluster
	plain client.WithWatch // the same objects, without paging or recording
	mode  watchMode

	mu      sync.Mutex
	watches []schema.GroupVersionKind
	badOpts []string
}

func newWatchListCluster(t *testing.T, mode watchMode) *watchListCluster {
	t.Helper()
	return newWatchListClusterOf(t, mode, demoObjects)
}

// newWatchListClusterOf is newWatchListCluster holding the objects objs returns (called twice: the
// two clients get objects of their own).
func newWatchListClusterOf(t *testing.T, mode watchMode, objs func(*testing.T) []client.Object) *watchListCluster {
	t.Helper()
	return &watchListCluster{
		fakeCluster: newFakeCluster(t, objs(t), nil),
		plain: fake.NewClientBuilder().WithScheme(observe.Scheme()).WithObjects(objs(t)...).
			WithIndex(&corev1.ConfigMap{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
			Build(),
		mode: mode,
	}
}

func (c *watchListCluster) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gvk, err := apiutil.GVKForObject(list, c.plain.Scheme())
	if err != nil {
		return nil, err
	}
	c.watches = append(c.watches, gvk)
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if r := lo.Raw; r == nil || r.SendInitialEvents == nil || !*r.SendInitialEvents || !r.AllowWatchBookmarks ||
		r.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || lo.Limit != 0 {
		c.badOpts = append(c.badOpts, gvk.Kind)
	}
	switch c.mode {
	case refuses:
		return nil, apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
	case forbids:
		return nil, apierrors.NewForbidden(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}, "", errors.New("watch is not granted"))
	}
	if err := c.plain.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	w := watch.NewFakeWithChanSize(len(items)+2, false)
	for i, o := range items {
		if c.mode == breaksAfterTwo && i == 2 {
			w.Error(&apierrors.NewInternalError(context.DeadlineExceeded).ErrStatus)
			return w, nil
		}
		w.Add(o)
	}
	end := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	w.Action(watch.Bookmark, runtime.Object(end))
	return w, nil
}

func (c *watchListCluster) watched() ([]schema.GroupVersionKind, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]schema.GroupVersionKind(nil), c.watches...), append([]string(nil), c.badOpts...)
}

func TestLiveReadsKindsInParallelAndWithWatchLists(t *testing.T) {
	ctx := context.Background()
	want, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		mode        watchMode
		opts        observe.Options
		wantWatches bool // every kind is read by a watch-list
		wantLists   bool // every kind is read by LISTs
	}{
		{name: "one kind at a time in pages of three gives the demo snapshot", opts: observe.Options{Parallel: 1, PageSize: 3}, wantLists: true},
		{name: "eight kinds at a time in pages of three gives the demo snapshot", opts: observe.Options{Parallel: 8, PageSize: 3}, wantLists: true},
		{name: "watch-lists give the demo snapshot without a LIST", mode: streams, opts: observe.Options{WatchList: true}, wantWatches: true},
		{name: "watch-lists one kind at a time give the demo snapshot", mode: streams, opts: observe.Options{WatchList: true, Parallel: 1}, wantWatches: true},
		{name: "a server that refuses watch-lists is listed in pages instead", mode: refuses, opts: observe.Options{WatchList: true, PageSize: 3}, wantLists: true},
		{name: "a reader not granted watch is listed in pages instead", mode: forbids, opts: observe.Options{WatchList: true, PageSize: 3}, wantLists: true},
		{name: "watch-lists are not tried unless asked for", mode: streams, opts: observe.Options{}, wantLists: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newWatchListCluster(t, tt.mode)
			got, err := observe.Live(ctx, c, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, ignoreObservation); d != "" {
				t.Errorf("snapshot differs from the demo snapshot (-want +got):\n%s", d)
			}
			watches, badOpts := c.watched()
			lists := c.listCalls()
			if len(badOpts) > 0 {
				t.Errorf("watches of %v were not watch-lists (sendInitialEvents, allowWatchBookmarks, resourceVersionMatch NotOlderThan, no limit)", badOpts)
			}
			switch {
			case tt.wantWatches:
				if len(lists) > 0 {
					t.Errorf("%d LIST requests, want none: every kind streams", len(lists))
				}
				// One watch per list a LIST observation makes: every kind (ConfigMaps three times) and the
				// Helm records of two namespaces.
				if len(watches) != len(expectedKinds)+len(expectedRecordLists)-1 {
					t.Errorf("%d watches, want %d", len(watches), len(expectedKinds)+len(expectedRecordLists)-1)
				}
				if got.Observation.Requests != len(watches) {
					t.Errorf("Observation.Requests = %d, want %d (one per watch)", got.Observation.Requests, len(watches))
				}
			case tt.wantLists:
				if len(lists) == 0 {
					t.Error("no LIST requests")
				}
				// A refusing server (or RBAC) is asked once per kind in flight before Live stops asking.
				if p := max(tt.opts.Parallel, observe.DefaultParallel); len(watches) > p {
					t.Errorf("%d watches of a server that refuses them, want at most %d", len(watches), p)
				}
				if !tt.opts.WatchList && len(watches) > 0 {
					t.Errorf("%d watches without Options.WatchList", len(watches))
				}
			}
		})
	}
}

func TestLiveFailsAWatchListThatBreaksMidway(t *testing.T) {
	c := newWatchListCluster(t, breaksAfterTwo)
	_, err := observe.Live(context.Background(), c, observe.Options{WatchList: true})
	if err == nil || !strings.Contains(err.Error(), "the watch-list failed after 2 objects") {
		t.Fatalf("error = %v, want one saying the watch-list failed after 2 objects", err)
	}
}
