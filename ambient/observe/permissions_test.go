package observe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ambientkit/ambientkit/ambient/demo"
	"github.com/ambientkit/ambientkit/ambient/observe"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

// Live observes the demo cluster, other teams' release records (one of them broken) included, with a
// reader that refuses, as RBAC would, every LIST its RequiredPermissions do not grant: Secrets are
// read only in the namespaces of Istio's releases, never cluster-wide, and nothing else is refused.
func TestLiveNeedsNothingButItsRequiredPermissions(t *testing.T) {
	ctx := context.Background()
	want, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rules := observe.RequiredPermissions(want).Rules()
	for _, r := range rules {
		if strings.Contains(strings.Join(r.Resources, ","), "secrets") && r.Namespace == "" {
			t.Errorf("rule %s grants Secrets cluster-wide", r)
		}
	}
	fc := newFakeCluster(t, append(demoObjects(t), otherTeams()...), nil)
	var refused []string
	r := interceptor.NewClient(fc, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
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
				_, res = plan.Resource(gvk.GroupVersion().String(), kind)
			}
			p := plan.Permission{Verb: "list", Group: gvk.Group, Resource: res, Namespace: lo.Namespace}
			if !plan.Allowed(rules, p) {
				refused = append(refused, p.String())
				return apierrors.NewForbidden(schema.GroupResource{Group: gvk.Group, Resource: res}, "", nil)
			}
			return c.List(ctx, list, opts...)
		},
	})
	got, err := observe.Live(ctx, r, observe.Options{})
	if err != nil {
		t.Fatalf("Live with only its required permissions: %v (refused %v)", err, refused)
	}
	if len(refused) > 0 {
		t.Errorf("Live asked for what its permissions do not grant: %v", refused)
	}
	if d := cmp.Diff(want, got, ignoreObservation); d != "" {
		t.Errorf("snapshot differs from the demo's (-want +got):\n%s", d)
	}
	var secrets []string
	for _, n := range observe.RequiredPermissions(want).Needs() {
		if n.Resource == "secrets" {
			secrets = append(secrets, n.Permission.String())
		}
	}
	if d := cmp.Diff([]string{"list secrets in namespace istio-ingress", "list secrets in namespace istio-system"}, secrets); d != "" {
		t.Errorf("Secrets needed (-want +got):\n%s", d)
	}
}
