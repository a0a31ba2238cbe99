package execute_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// demoRun is the demo world, its upgrade plan, an executor for it whose Permissions are what its
// Snapshot reads (and tweak's), and what a run of the plan needs.
func demoRun(t *testing.T, tweak ...func(*execute.Options)) (*world, *plan.Plan, *execute.Executor, *rbac.Permissions) {
	t.Helper()
	w := demoWorld(t)
	p := demoPlan(t, w)
	e := w.Executor(append([]func(*execute.Options){w.observed(t)}, tweak...)...)
	ps, err := e.RequiredPermissions(p)
	if err != nil {
		t.Fatal(err)
	}
	return w, p, e, ps
}

// observed returns executor options whose Permissions are what the world's Snapshot (observe.Live)
// reads.
func (w *world) observed(t *testing.T) func(*execute.Options) {
	t.Helper()
	snap, err := w.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return func(o *execute.Options) { o.Permissions = observe.RequiredPermissions(snap) }
}

// permissionError asserts err is an ErrForbidden *PermissionError and returns its missing permissions.
func permissionError(t *testing.T, err error) []rbac.Permission {
	t.Helper()
	var pe *execute.PermissionError
	if !errors.Is(err, execute.ErrForbidden) || !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *PermissionError wrapping ErrForbidden", err)
	}
	var out []rbac.Permission
	for _, n := range pe.Missing {
		out = append(out, n.Permission)
	}
	return out
}

// untouched asserts the run changed nothing: no effect on the mesh, no Lease, no journal.
func untouched(t *testing.T, w *world, before any) {
	t.Helper()
	if eff := w.Effects(); len(eff) != 0 {
		t.Errorf("the refused run changed the cluster: %v", eff)
	}
	if d := cmp.Diff(before, w.State()); d != "" {
		t.Errorf("the refused run changed the cluster (-before +after):\n%s", d)
	}
	var l coordinationv1.Lease
	if err := w.Base.Get(context.Background(), client.ObjectKey{Namespace: "istio-system", Name: execute.LockName}, &l); !apierrors.IsNotFound(err) {
		t.Errorf("the refused run took the Lease (%v)", err)
	}
	var cms corev1.ConfigMapList
	if err := w.Base.List(context.Background(), &cms, client.InNamespace("istio-system")); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "ambientkit-journal-") {
			t.Errorf("the refused run wrote journal %s", cm.Name)
		}
	}
}

// Every rule the demo upgrade needs is needed: with any one of them taken away, Apply stops before it
// changes anything and names exactly the permissions that rule alone granted, with their steps.
func TestTheDemoUpgradeStopsBeforeAnyChangeWithoutAnyOneOfItsRules(t *testing.T) {
	w, p, e, ps := demoRun(t)
	rules := ps.Rules()
	if len(rules) < 20 {
		t.Fatalf("the demo upgrade needs only %d rules; the derivation lost some", len(rules))
	}
	before := w.State()
	for i, r := range rules {
		w.Deny(r)
		var want []rbac.Permission
		for _, n := range ps.NotGranted(slices.Delete(slices.Clone(rules), i, i+1)) {
			want = append(want, n.Permission)
		}
		if len(want) == 0 {
			t.Errorf("rule %s grants nothing the others do not: it is not needed", r)
			continue
		}
		_, err := e.Apply(context.Background(), p, execute.ApplyOptions{})
		if d := cmp.Diff(want, permissionError(t, err)); d != "" {
			t.Errorf("without %s, the preflight named (-want +got):\n%s", r, d)
		}
	}
	w.Deny()
	untouched(t, w, before)
}

// The preflight names the missing permission, where, and the steps that need it; a dry run and a
// resumed run check it too.
func TestThePreflightNamesTheMissingPermissionAndItsSteps(t *testing.T) {
	eviction := rbac.Rule{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}}
	tests := []struct {
		name   string
		dryRun bool
		resume bool
	}{
		{name: "a fresh run is refused before it takes the Lease"},
		{name: "a dry run is refused too: its evictions are sent with dryRun=All, which needs the same verb", dryRun: true},
		{name: "a resumed run is refused before it goes on", resume: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := demoWorld(t)
			p := demoPlan(t, w)
			ctx := context.Background()
			if tc.resume {
				until := ""
				for _, s := range p.Steps {
					if s.Drain != nil {
						break
					}
					until = s.ID
				}
				if _, err := w.Executor(w.observed(t)).Apply(ctx, p, execute.ApplyOptions{Until: until}); err != nil {
					t.Fatalf("apply up to %s: %v", until, err)
				}
			}
			w.Deny(eviction)
			e := w.Executor(w.observed(t), func(o *execute.Options) { o.DryRun = tc.dryRun })
			w.ResetCounts()
			_, err := e.Apply(ctx, p, execute.ApplyOptions{Resume: tc.resume})
			missing := permissionError(t, err)
			if want := []rbac.Permission{{Verb: "create", Resource: "pods", Subresource: "eviction"}}; !cmp.Equal(want, missing) {
				t.Errorf("missing %v, want %v", missing, want)
			}
			msg := err.Error()
			for _, want := range []string{"create pods/eviction (cluster-wide)", "/drain", "nothing was changed"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if cluster, book := w.CallCount(); cluster != 0 || book != 0 {
				t.Errorf("the refused run made %d cluster and %d bookkeeping calls (%v); the preflight comes first", cluster, book, w.Calls())
			}
		})
	}
}

// Preflight can be called on its own: it asks one review per permission and changes nothing.
func TestPreflightOnItsOwnAsksOneReviewPerPermission(t *testing.T) {
	w, p, e, ps := demoRun(t)
	before := w.State()
	if err := e.Preflight(context.Background(), p); err != nil {
		t.Fatalf("everything is allowed: %v", err)
	}
	var want []rbac.Permission
	for _, n := range ps.Needs() {
		want = append(want, n.Permission)
	}
	got := w.Reviews()
	slices.SortFunc(got, func(a, b rbac.Permission) int { return strings.Compare(a.String(), b.String()) })
	slices.SortFunc(want, func(a, b rbac.Permission) int { return strings.Compare(a.String(), b.String()) })
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reviews (-want +got):\n%s", d)
	}
	untouched(t, w, before)
}

// The derived permissions are sufficient: every request the executor, observe.Live and
// KubernetesEvents make while the demo upgrade runs to its end is granted by the rules (Helm's own requests are the real SDK's and are
// proven on a real API server by the e2e suite).
func TestEveryRequestOfTheDemoUpgradeIsGrantedByItsDerivedRules(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	w := demoWorld(t)
	p := demoPlan(t, w)
	hash, err := execute.PlanHash(p)
	if err != nil {
		t.Fatal(err)
	}
	// observe.Live and KubernetesEvents through the recording client, so that their requests are
	// checked too.
	events := execute.KubernetesEventsOptions{PlanHash: hash, QPS: 1e6, Burst: 1e6}
	e := w.Executor(w.observed(t), func(o *execute.Options) {
		o.Snapshot = func(ctx context.Context) (*mesh.Snapshot, error) {
			return observe.Live(ctx, w.Client, observe.Options{})
		}
		o.Observer = execute.KubernetesEvents(w.Client, events)
		o.Permissions.Merge(execute.KubernetesEventsPermissions(events))
	})
	ps, err := e.RequiredPermissions(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Apply(context.Background(), p, execute.ApplyOptions{})
	if err != nil || !res.Done {
		t.Fatalf("apply: %v (done %v)", err, res != nil && res.Done)
	}
	rules := ps.Rules()
	reqs := w.Requests()
	if len(reqs) < 20 {
		t.Fatalf("only %d distinct requests were recorded", len(reqs))
	}
	for _, r := range reqs {
		if !rbac.Allowed(rules, r) {
			t.Errorf("request %s is not granted by the derived rules", r)
		}
	}
}
