//go:build e2e

package e2e

// Least privilege, derived and proven (issue 12): TestUpgrade applies its plan as a ServiceAccount
// bound to exactly the rules the plan derives (rbac.Render of execute.Executor.RequiredPermissions,
// observe.RequiredPermissions and execute.KubernetesEventsPermissions), on the real kube-apiserver with
// RBAC authorization (kwokctl --kube-authorization: --authorization-mode=Node,RBAC). Before the run,
// each rule is taken away in turn: the preflight names exactly what that rule alone granted, and
// nothing changes in the cluster.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/releaseutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// The identity TestUpgrade applies its plan as.
const (
	rbacNamespace = "ambientkit-e2e-rbac"
	rbacAccount   = "upgrader"
	rbacName      = "ambientkit-upgrader"
)

// leastPrivilege is a ServiceAccount bound to exactly the rules a plan's run derives.
type leastPrivilege struct {
	// kubeconfig authenticates as the ServiceAccount (a bound token).
	kubeconfig string
	// perms are what the run needs, rules what grants them, extra what Snapshot and the events need.
	perms, extra *rbac.Permissions
	rules        []rbac.Rule
	// objects are the roles and bindings applied (and the namespaces created for them).
	objects []*unstructured.Unstructured
	// created are the namespaces the RBAC created ahead of their Roles (rbac.RenderOptions.CreateNamespaces).
	created []string
	// client and clientset act as the ServiceAccount.
	client    client.Client
	clientset kubernetes.Interface
	discovery discovery.DiscoveryInterface
}

// createAccount creates the ServiceAccount the plan will run as, and its namespace. Call it before
// observing the cluster for the plan: a new namespace changes the snapshot's fingerprint.
func createAccount(ctx context.Context, t *testing.T) {
	t.Helper()
	// A suite before this one deletes the namespace when it ends; a namespace still terminating
	// refuses new objects, so wait until it is gone.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ns, err := h.Clientset.CoreV1().Namespaces().Get(ctx, rbacNamespace, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, err
		}
		return ns.DeletionTimestamp == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s is still terminating: %v", rbacNamespace, err)
	}
	if _, err := h.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rbacNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := h.Clientset.CoreV1().ServiceAccounts(rbacNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: rbacAccount}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// grantDerivedRBAC applies, for the ServiceAccount createAccount made, the roles rbac.Render writes for the plan's run
// and the ServiceAccount's bindings, writes its kubeconfig, and waits until its own preflight passes.
func grantDerivedRBAC(ctx context.Context, t *testing.T, p *plan.Plan, snap *mesh.Snapshot) *leastPrivilege {
	t.Helper()
	t0 := time.Now()
	hash, err := execute.PlanHash(p)
	if err != nil {
		t.Fatal(err)
	}
	lp := &leastPrivilege{extra: observe.RequiredPermissions(snap)}
	lp.extra.Merge(execute.KubernetesEventsPermissions(execute.KubernetesEventsOptions{PlanHash: hash, Namespace: harness.IstioNamespace}))
	// The executor the apply processes make (e2e/internal/upgrade): the default namespace, journal
	// and backup store.
	ex, err := execute.New(h.Client, execute.Options{Gates: ambient.Gates(), Snapshot: func(context.Context) (*mesh.Snapshot, error) { return snap, nil }, Permissions: lp.extra})
	if err != nil {
		t.Fatal(err)
	}
	if lp.perms, err = ex.RequiredPermissions(p); err != nil {
		t.Fatal(err)
	}
	lp.rules = lp.perms.Rules()
	if u := lp.perms.Unknown(); len(u) > 0 {
		t.Fatalf("the derivation does not cover: %v", u)
	}

	o := rbac.RenderOptions{Name: rbacName, ServiceAccountNamespace: rbacNamespace, ServiceAccountName: rbacAccount,
		Labels: map[string]string{"app.kubernetes.io/part-of": "ambientkit-e2e"}}
	for _, ns := range lp.perms.Namespaces() {
		if _, ok := snap.Namespace(ns); !ok {
			o.CreateNamespaces = append(o.CreateNamespaces, ns) // the plan installs into it: created ahead of its Role
		}
	}
	lp.created = o.CreateNamespaces
	rendered := rbac.Render(lp.perms, o)
	path := filepath.Join(h.Cluster.RunDir(), "upgrade.rbac.yaml")
	if err := os.WriteFile(path, rendered, 0o644); err != nil {
		t.Fatal(err)
	}
	if lp.objects, err = kube.DecodeYAML(rendered); err != nil {
		t.Fatalf("the rendered RBAC (%s) does not decode: %v", path, err)
	}
	if err := h.Applier.Apply(ctx, lp.objects...); err != nil {
		t.Fatalf("apply the rendered RBAC (%s): %v", path, err)
	}
	t.Cleanup(func() { lp.revoke(context.WithoutCancel(ctx), t) })

	tok, err := h.Clientset.CoreV1().ServiceAccounts(rbacNamespace).CreateToken(ctx, rbacAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", rbacNamespace, rbacAccount, err)
	}
	lp.kubeconfig = filepath.Join(h.Cluster.RunDir(), "upgrader.kubeconfig")
	if err := writeTokenKubeconfig(h.Cluster.Kubeconfig(), lp.kubeconfig, tok.Status.Token); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", lp.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS = -1 // no client-side limit: the preflights of the minimality check ask hundreds of reviews each
	if lp.client, err = client.NewWithWatch(rc, client.Options{Scheme: observe.Scheme()}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	lp.clientset, lp.discovery = cs, cs.Discovery()

	// RBAC is in force: the account may not do what nothing grants it.
	if ok, err := lp.can(ctx, rbac.Permission{Verb: "list", Resource: "secrets"}); err != nil || ok {
		t.Fatalf("the ServiceAccount may list Secrets cluster-wide (%v, %v): the API server does not authorize with RBAC", ok, err)
	}
	lp.waitPreflight(ctx, t, lp.executor(t), p, "the ServiceAccount bound to the derived rules")
	h.Logf("rbac: ServiceAccount %s/%s bound to %d rules for %d permissions (%s) in %s", rbacNamespace, rbacAccount, len(lp.rules), lp.perms.Len(), path,
		time.Since(t0).Round(100*time.Millisecond))
	return lp
}

// cannotEscalate proves the derived account cannot rewrite its own grants or any role the plan does
// not install: patching its own ClusterRole and ClusterRoleBinding, and the cluster's built-in
// roles, is refused by the API server's RBAC authorizer (dry-run, so a wrong grant changes nothing).
// Grants of roles and bindings are by resourceNames (plan/rbac), so only the charts' names match.
func cannotEscalate(ctx context.Context, t *testing.T, lp *leastPrivilege) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"ambientkit.io/escalation-probe":"true"}}}`))
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: rbacName}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: rbacName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}},
	} {
		kind := fmt.Sprintf("%T", obj)
		err := lp.client.Patch(ctx, obj, patch, client.DryRunAll)
		if !apierrors.IsForbidden(err) {
			t.Errorf("the derived account patched %s %s (dry run): %v; want Forbidden: it could grant itself more", kind, obj.GetName(), err)
		}
	}
	// Creating a binding to cluster-admin needs bind on that name, which nothing grants.
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ambientkit-escalation-probe"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: rbacNamespace, Name: rbacAccount}}}
	if err := lp.client.Create(ctx, crb, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("the derived account bound itself to cluster-admin (dry run): %v; want Forbidden", err)
	}
}

// executor is an executor as the ServiceAccount, with the options the apply processes use.
func (lp *leastPrivilege) executor(t *testing.T) *execute.Executor {
	t.Helper()
	ex, err := execute.New(lp.client, execute.Options{Gates: ambient.Gates(),
		Snapshot: func(ctx context.Context) (*mesh.Snapshot, error) {
			return observe.Live(ctx, lp.client, observe.Options{ServerVersion: lp.discovery})
		},
		Identity: "e2e-rbac-preflight", Permissions: lp.extra,
	})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// waitPreflight waits until the ServiceAccount passes the plan's preflight (the RBAC authorizer
// reads roles from an informer).
func (lp *leastPrivilege) waitPreflight(ctx context.Context, t *testing.T, ex *execute.Executor, p *plan.Plan, who string) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = ex.Preflight(ctx, p)
		return last == nil, nil
	}); err != nil {
		t.Fatalf("%s does not pass the preflight: %v", who, last)
	}
}

// can asks the API server whether the ServiceAccount may do p.
func (lp *leastPrivilege) can(ctx context.Context, p rbac.Permission) (bool, error) {
	r, err := lp.clientset.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Namespace: p.Namespace, Name: p.Name}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

// revoke deletes the roles, the bindings and the ServiceAccount's namespace.
func (lp *leastPrivilege) revoke(ctx context.Context, t *testing.T) {
	for _, o := range lp.objects {
		if o.GetKind() == "Namespace" {
			continue // the plan installed into it; it is the plan's now
		}
		if err := h.Applier.Delete(ctx, o); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	if err := h.Clientset.CoreV1().Namespaces().Delete(ctx, rbacNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: %v", err)
	}
}

// writeTokenKubeconfig writes a kubeconfig for the admin kubeconfig's cluster that authenticates
// with token, mode 0600.
func writeTokenKubeconfig(admin, path, token string) error {
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		return err
	}
	cur, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.Clusters[cur.Cluster] == nil {
		return fmt.Errorf("kubeconfig %s has no current cluster", admin)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["e2e"] = cfg.Clusters[cur.Cluster]
	out.AuthInfos[rbacAccount] = &clientcmdapi.AuthInfo{Token: token}
	out.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: rbacAccount}
	out.CurrentContext = "e2e"
	b, err := clientcmd.Write(*out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// roleObject is the Role (or ClusterRole, for namespace "") of the rendered RBAC with the given rules
// of its namespace, to server-side apply.
func roleObject(ns string, rules []rbac.Rule) *unstructured.Unstructured {
	var rs []any
	for _, r := range rules {
		if r.Namespace != ns {
			continue
		}
		m := map[string]any{"apiGroups": toAny(r.APIGroups), "resources": toAny(r.Resources), "verbs": toAny(r.Verbs)}
		if len(r.ResourceNames) > 0 {
			m["resourceNames"] = toAny(r.ResourceNames)
		}
		rs = append(rs, m)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": rbacName, "namespace": ns}, "rules": rs}}
	if ns == "" {
		u.SetKind("ClusterRole")
		unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
	}
	if rs == nil {
		u.Object["rules"] = []any{}
	}
	return u
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// missingWithout is what the preflight must name when rules[i] is taken away: the needs no other rule
// grants.
func (lp *leastPrivilege) missingWithout(i int) []rbac.Permission {
	var out []rbac.Permission
	for _, n := range lp.perms.NotGranted(slices.Delete(slices.Clone(lp.rules), i, i+1)) {
		out = append(out, n.Permission)
	}
	return out
}

// everyRuleIsNeeded takes each rule away in turn (server-side applying its role without it, and the
// rule taken away before it back), waits until the API server refuses it, and applies the plan as the
// ServiceAccount: the preflight must name exactly the permissions that rule alone granted, and
// nothing may change (no Lease taken or renewed, no journal, the cluster's fingerprint the plan's).
func everyRuleIsNeeded(ctx context.Context, t *testing.T, lp *leastPrivilege, p *plan.Plan) {
	t.Helper()
	t0 := time.Now()
	hash, err := execute.PlanHash(p)
	if err != nil {
		t.Fatal(err)
	}
	leaseRV := func() string {
		var l coordinationv1.Lease
		err := h.Client.Get(ctx, client.ObjectKey{Namespace: harness.IstioNamespace, Name: execute.LockName}, &l)
		if apierrors.IsNotFound(err) {
			return "none"
		} else if err != nil {
			t.Fatal(err)
		}
		return l.ResourceVersion
	}
	journal := (&execute.ConfigMapJournal{}).Name(hash)
	lease := leaseRV()
	ex := lp.executor(t)
	prev := -1
	for i, r := range lp.rules {
		want := lp.missingWithout(i)
		if len(want) == 0 {
			t.Errorf("rule %s grants nothing the other rules do not", r)
			continue
		}
		changed := []string{r.Namespace}
		if prev >= 0 && lp.rules[prev].Namespace != r.Namespace {
			changed = append(changed, lp.rules[prev].Namespace)
		}
		others := slices.Delete(slices.Clone(lp.rules), i, i+1)
		for _, ns := range changed {
			if err := h.Applier.Apply(ctx, roleObject(ns, others)); err != nil {
				t.Fatal(err)
			}
		}
		// The RBAC authorizer reads roles from an informer: wait until it refuses the rule and grants
		// the one taken away before it again.
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			denied, err := lp.can(ctx, want[0])
			if err != nil || denied {
				return false, err
			}
			if prev >= 0 {
				return lp.can(ctx, lp.missingWithout(prev)[0])
			}
			return true, nil
		}); err != nil {
			t.Fatalf("rule %s: the API server did not take the change: %v", r, err)
		}
		prev = i
		_, err := ex.Apply(ctx, p, execute.ApplyOptions{})
		var pe *execute.PermissionError
		if !errors.Is(err, execute.ErrForbidden) || !errors.As(err, &pe) {
			t.Errorf("without %s, Apply returned %v; want a *PermissionError", r, err)
			continue
		}
		var got []rbac.Permission
		for _, n := range pe.Missing {
			got = append(got, n.Permission)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("without %s, the preflight named (-want +got):\n%s", r, d)
		}
		if i == 0 {
			t.Logf("without the first rule: %v", err)
		}
		if rv := leaseRV(); rv != lease {
			t.Fatalf("without %s, the refused run touched Lease %s (resourceVersion %s → %s)", r, execute.LockName, lease, rv)
		}
		var cm corev1.ConfigMap
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: harness.IstioNamespace, Name: journal}, &cm); !apierrors.IsNotFound(err) {
			t.Fatalf("without %s, the refused run wrote journal %s (%v)", r, journal, err)
		}
	}
	for _, ns := range namespacesOf(lp.rules) {
		if err := h.Applier.Apply(ctx, roleObject(ns, lp.rules)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Fingerprint() != p.Metadata.Fingerprint {
		t.Errorf("the refused runs changed the cluster: fingerprint %s, the plan's %s", s.Fingerprint(), p.Metadata.Fingerprint)
	}
	lp.waitPreflight(ctx, t, ex, p, "with every rule back, the ServiceAccount")
	h.Logf("rbac: each of %d rules taken away in turn: the preflight named what it alone granted, nothing changed (%s)", len(lp.rules), time.Since(t0).Round(100*time.Millisecond))
}

func namespacesOf(rules []rbac.Rule) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rules {
		if !seen[r.Namespace] {
			seen[r.Namespace] = true
			out = append(out, r.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

// chartObjectsAreGranted renders, with the real charts and the plan's values, every release the plan
// installs or upgrades, and checks that the rules grant what Helm does to each object it renders
// (get and create; patch for upgrades), named as the API server maps its kind.
func chartObjectsAreGranted(t *testing.T, lp *leastPrivilege, p *plan.Plan) {
	t.Helper()
	mapper := h.Client.RESTMapper()
	kinds := map[string]bool{}
	for _, st := range p.Steps {
		rel, verbs := st.HelmInstall, []string{"get", "create"}
		if st.HelmUpgrade != nil {
			rel, verbs = st.HelmUpgrade, []string{"get", "create", "patch"}
		}
		if rel == nil {
			continue
		}
		if rel.Chart.Path == "" {
			t.Fatalf("step %s: chart %s is not a local path; the e2e plans from stamped chart folders", st.ID, rel.Chart.Name)
		}
		objs, err := renderChart(rel)
		if err != nil {
			t.Fatalf("step %s: %v", st.ID, err)
		}
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("step %s: %s %s: the API server does not serve it: %v", st.ID, gvk, o.GetName(), err)
				continue
			}
			ns := ""
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				if ns = o.GetNamespace(); ns == "" {
					ns = rel.Namespace
				}
			}
			kinds[m.Resource.Resource] = true
			for _, v := range verbs {
				perm := rbac.Permission{Verb: v, Group: gvk.Group, Resource: m.Resource.Resource, Namespace: ns, Name: o.GetName()}
				if !rbac.Allowed(lp.rules, perm) {
					t.Errorf("step %s renders %s %s/%s, but the rules do not grant %s", st.ID, gvk.Kind, ns, o.GetName(), perm)
				}
			}
		}
	}
	h.Logf("rbac: the real charts render %d kinds for the plan's Helm steps, every object granted: %s", len(kinds), strings.Join(sortedSet(kinds), " "))
}

// renderChart renders a release client-side, as Helm would install it.
func renderChart(rel *plan.HelmRelease) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(rel.Chart.Path)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(new(action.Configuration))
	in.ReleaseName, in.Namespace, in.DryRun, in.ClientOnly, in.Replace = rel.Release, rel.Namespace, true, true, true
	r, err := in.Run(ch, rel.Values)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", rel.Chart.Path, err)
	}
	var out []*unstructured.Unstructured
	for _, m := range releaseutil.SplitManifests(r.Manifest) {
		objs, err := kube.DecodeYAML([]byte(m))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
