package observe_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/observe"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// Live observes the demo cluster, other teams' release records (one of them broken) included, with a
// reader that refuses, as RBAC would, every LIST and watch its RequiredPermissionsFor do not grant:
// Secrets are read only in the namespaces of Istio's releases, never cluster-wide, watch-lists are
// allowed when asked for (else Live would quietly fall back to LISTs) and nothing else is refused.
func TestLiveNeedsNothingButItsRequiredPermissions(t *testing.T) {
	ctx := context.Background()
	want, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	objs := func(t *testing.T) []client.Object { return append(demoObjects(t), otherTeams()...) }
	for _, opts := range []observe.Options{{}, {WatchList: true}} {
		t.Run(fmt.Sprintf("WatchList=%t", opts.WatchList), func(t *testing.T) {
			rules := observe.RequiredPermissionsFor(want, opts).Rules()
			for _, r := range rules {
				if strings.Contains(strings.Join(r.Resources, ","), "secrets") && r.Namespace == "" {
					t.Errorf("rule %s grants Secrets cluster-wide", r)
				}
				if !opts.WatchList && slices.Contains(r.Verbs, "watch") {
					t.Errorf("rule %s grants watch, which paged LISTs do not need", r)
				}
			}
			wc := newWatchListClusterOf(t, streams, objs)
			// mu serialises the interceptor: it reads the fake client's scheme, which the fake client
			// writes while it lists (Live lists several kinds at once).
			var mu sync.Mutex
			var refused []string
			allow := func(c client.WithWatch, verb string, list client.ObjectList, opts []client.ListOption) error {
				lo := client.ListOptions{}
				lo.ApplyOptions(opts)
				gvk, err := apiutil.GVKForObject(list, c.Scheme())
				if err != nil {
					return err
				}
				kind := strings.TrimSuffix(gvk.Kind, "List")
				m, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: kind}, gvk.Version)
				res := ""
				if err == nil {
					res = m.Resource.Resource
				} else {
					_, res = rbac.Resource(gvk.GroupVersion().String(), kind)
				}
				p := rbac.Permission{Verb: verb, Group: gvk.Group, Resource: res, Namespace: lo.Namespace}
				if !rbac.Allowed(rules, p) {
					refused = append(refused, p.String())
					return apierrors.NewForbidden(schema.GroupResource{Group: gvk.Group, Resource: res}, "", nil)
				}
				return nil
			}
			r := interceptor.NewClient(wc, interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					mu.Lock()
					defer mu.Unlock()
					if err := allow(c, "list", list, opts); err != nil {
						return err
					}
					return c.List(ctx, list, opts...)
				},
				Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
					mu.Lock()
					defer mu.Unlock()
					if err := allow(c, "watch", list, opts); err != nil {
						return nil, err
					}
					return c.Watch(ctx, list, opts...)
				},
			})
			got, err := observe.Live(ctx, r, opts)
			if err != nil {
				t.Fatalf("Live with only its required permissions: %v (refused %v)", err, refused)
			}
			if len(refused) > 0 {
				t.Errorf("Live asked for what its permissions do not grant: %v", refused)
			}
			if d := cmp.Diff(want, got, ignoreObservation); d != "" {
				t.Errorf("snapshot differs from the demo's (-want +got):\n%s", d)
			}
			watches, _ := wc.watched()
			if opts.WatchList && (len(watches) == 0 || len(wc.listCalls()) > 0) {
				t.Errorf("%d watch-lists and %d LISTs, want only watch-lists", len(watches), len(wc.listCalls()))
			}
			var secrets []string
			for _, n := range observe.RequiredPermissionsFor(want, opts).Needs() {
				if n.Resource == "secrets" {
					secrets = append(secrets, n.Permission.String())
				}
			}
			wantSecrets := []string{"list secrets in namespace istio-ingress", "list secrets in namespace istio-system"}
			if opts.WatchList {
				wantSecrets = append(wantSecrets, "watch secrets in namespace istio-ingress", "watch secrets in namespace istio-system")
			}
			slices.Sort(secrets)
			slices.Sort(wantSecrets)
			if d := cmp.Diff(wantSecrets, secrets); d != "" {
				t.Errorf("Secrets needed (-want +got):\n%s", d)
			}
		})
	}
	if d := cmp.Diff(observe.RequiredPermissions(want).Rules(), observe.RequiredPermissionsFor(want, observe.Options{}).Rules()); d != "" {
		t.Errorf("RequiredPermissions differs from RequiredPermissionsFor with the zero Options (-want +got):\n%s", d)
	}
}
