package rbac

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

// TestEveryCheckTypeHasAPermissionEntry fails when a check type is added without saying what it
// needs of the cluster. (A kind says it in its spec's permissions part, which
// TestEveryActionFieldIsAKindWithEveryPart requires.)
func TestEveryCheckTypeHasAPermissionEntry(t *testing.T) {
	for _, c := range plan.CheckTypes() {
		if checkPermissions[c] == nil {
			t.Errorf("check type %s has no entry in checkPermissions", c)
		}
	}
	if len(checkPermissions) != len(plan.CheckTypes()) {
		t.Errorf("checkPermissions has %d entries for %d check types", len(checkPermissions), len(plan.CheckTypes()))
	}
}

func perm(verb, group, resource, ns, name string) Permission {
	p := Permission{Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name}
	if r, s, ok := strings.Cut(resource, "/"); ok {
		p.Resource, p.Subresource = r, s
	}
	return p
}

func TestRequiredPermissionsOfOneStep(t *testing.T) {
	istiod := &plan.HelmRelease{Release: "istiod-1-31-4", Namespace: "istio-system", Chart: plan.ChartRef{Name: "istiod", Path: "/c"},
		Values: map[string]any{"revision": "1-31-4", "autoscaleEnabled": false, "replicaCount": float64(2)}}
	tests := []struct {
		name string
		step plan.Step
		dry  bool
		// want must all be needed, none of notWant.
		want, notWant []Permission
	}{
		{name: "a drain lists the node's pods in every namespace, evicts them and reads the budgets",
			step: plan.Step{Drain: &plan.NodeDrain{Node: "n1", AmbientOnly: true}},
			want: []Permission{perm("list", "", "pods", "", ""), perm("create", "", "pods/eviction", "", ""),
				perm("list", "policy", "poddisruptionbudgets", "", ""), perm("list", "", "namespaces", "", ""), perm("get", "", "nodes", "", "n1")},
			notWant: []Permission{perm("delete", "", "pods", "", "")}},
		{name: "a cordon reads and patches only its node",
			step:    plan.Step{Cordon: &plan.NodeRef{Node: "n1"}},
			want:    []Permission{perm("get", "", "nodes", "", "n1"), perm("patch", "", "nodes", "", "n1")},
			notWant: []Permission{perm("patch", "", "nodes", "", "")}},
		{name: "a helm install of istiod stores its release, creates the chart's objects and may grant their rules",
			step: plan.Step{HelmInstall: istiod},
			want: []Permission{perm("list", "", "secrets", "istio-system", ""), perm("create", "", "secrets", "istio-system", ""),
				perm("update", "", "secrets", "istio-system", "sh.helm.release.v1.istiod-1-31-4.v1"), perm("create", "", "namespaces", "", ""),
				perm("create", "apps", "deployments", "istio-system", ""), perm("get", "apps", "deployments", "istio-system", ""),
				perm("create", "rbac.authorization.k8s.io", "clusterroles", "", ""), perm("escalate", "rbac.authorization.k8s.io", "clusterroles", "", ""),
				perm("get", "rbac.authorization.k8s.io", "clusterroles", "", "istiod-clusterrole-1-31-4-istio-system"),
				perm("bind", "rbac.authorization.k8s.io", "clusterroles", "", "istiod-clusterrole-1-31-4-istio-system"),
				perm("bind", "rbac.authorization.k8s.io", "clusterroles", "", "istio-reader-clusterrole-1-31-4-istio-system"),
				perm("escalate", "rbac.authorization.k8s.io", "roles", "istio-system", ""),
				perm("bind", "rbac.authorization.k8s.io", "roles", "istio-system", "istiod-1-31-4"), perm("create", "policy", "poddisruptionbudgets", "istio-system", "")},
			notWant: []Permission{perm("delete", "", "secrets", "istio-system", ""), perm("patch", "apps", "deployments", "istio-system", ""),
				perm("update", "", "secrets", "istio-system", ""), perm("bind", "rbac.authorization.k8s.io", "clusterroles", "", ""),
				perm("get", "rbac.authorization.k8s.io", "clusterroles", "", ""),
				perm("create", "autoscaling", "horizontalpodautoscalers", "istio-system", ""), perm("create", "networking.k8s.io", "networkpolicies", "istio-system", "")}},
		{name: "a dry run of a helm upgrade only reads the release and the chart's objects",
			step: plan.Step{HelmUpgrade: istiod}, dry: true,
			want: []Permission{perm("list", "", "secrets", "istio-system", ""), perm("get", "apps", "deployments", "istio-system", "")},
			notWant: []Permission{perm("create", "", "secrets", "istio-system", ""), perm("patch", "apps", "deployments", "istio-system", ""),
				perm("escalate", "rbac.authorization.k8s.io", "clusterroles", "", "")}},
		{name: "an upgrade of base never deletes the CRDs, which the chart keeps",
			step:    plan.Step{HelmUpgrade: &plan.HelmRelease{Release: "istio-base", Namespace: "istio-system", Chart: plan.ChartRef{Name: "base", Path: "/c"}}},
			want:    []Permission{perm("patch", "apiextensions.k8s.io", "customresourcedefinitions", "", ""), perm("delete", "", "secrets", "istio-system", "")},
			notWant: []Permission{perm("delete", "apiextensions.k8s.io", "customresourcedefinitions", "", "")}},
		{name: "with reused values a chart's conditional objects may render, so they are included",
			step: plan.Step{HelmUpgrade: &plan.HelmRelease{Release: "istio-cni", Namespace: "istio-system", Chart: plan.ChartRef{Name: "cni", Path: "/c"}, ReuseValues: true}},
			want: []Permission{perm("patch", "networking.k8s.io", "networkpolicies", "istio-system", ""), perm("patch", "", "resourcequotas", "istio-system", ""),
				perm("patch", "k8s.cni.cncf.io", "network-attachment-definitions", "default", "")}},
		{name: "the gateway chart's workload follows its kind value",
			step: plan.Step{HelmUpgrade: &plan.HelmRelease{Release: "gw", Namespace: "gw", Chart: plan.ChartRef{Name: "gateway", Path: "/c"}, Values: map[string]any{"kind": "DaemonSet"}}},
			want: []Permission{perm("patch", "apps", "daemonsets", "gw", "")},
			notWant: []Permission{perm("patch", "apps", "deployments", "gw", ""),
				perm("patch", "autoscaling", "horizontalpodautoscalers", "gw", "")}},
		{name: "an uninstall deletes what its chart renders and purges the release records",
			step: plan.Step{HelmUninstall: &plan.HelmUninstall{Release: "ztunnel", Namespace: "istio-system", Chart: "ztunnel", BackupStep: "b"}},
			want: []Permission{perm("delete", "apps", "daemonsets", "istio-system", ""), perm("delete", "", "secrets", "istio-system", ""),
				perm("get", "", "secrets", "istio-system", "")},
			notWant: []Permission{perm("create", "apps", "daemonsets", "istio-system", ""), perm("delete", "apps", "deployments", "istio-system", "")}},
		{name: "a helm rollback reads the revision it returns to by its record's name",
			step: plan.Step{HelmRollback: &plan.HelmRollback{Release: "istio-base", Namespace: "istio-system", Revision: 2}}, dry: true,
			want: []Permission{perm("get", "", "secrets", "istio-system", "sh.helm.release.v1.istio-base.v2")}},
		{name: "a tag move applies its rendered objects by name and may create them",
			step: plan.Step{MoveTag: &plan.TagMove{Tag: "prod", To: "1-31-4", Objects: []map[string]any{{"apiVersion": "admissionregistration.k8s.io/v1",
				"kind": "MutatingWebhookConfiguration", "metadata": map[string]any{"name": "istio-revision-tag-prod"}}}}},
			want: []Permission{perm("get", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "istio-revision-tag-prod"),
				perm("patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "istio-revision-tag-prod"),
				perm("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "istio-revision-tag-prod")}},
		{name: "labelling several namespaces lists them once and patches each",
			step:    plan.Step{PatchLabels: &plan.PatchLabels{APIVersion: "v1", Objects: []mesh.ObjectRef{{Kind: "Namespace", Name: "a"}, {Kind: "Namespace", Name: "b"}}, Set: map[string]string{"x": "y"}}},
			want:    []Permission{perm("list", "", "namespaces", "", ""), perm("patch", "", "namespaces", "", "a"), perm("patch", "", "namespaces", "", "b")},
			notWant: []Permission{perm("get", "", "namespaces", "", "a")}},
		{name: "a namespace backup lists the Istio and Gateway API kinds of the namespace",
			step: plan.Step{Backup: &plan.Backup{Namespace: "shop"}},
			want: []Permission{perm("list", "apiextensions.k8s.io", "customresourcedefinitions", "", ""), perm("list", "networking.istio.io", "*", "shop", ""),
				perm("list", "gateway.networking.k8s.io", "*", "shop", "")}},
		{name: "a wait runs its check: a DaemonSet rollout under OnDelete reads its pods",
			step: plan.Step{WaitFor: &plan.WaitFor{Check: plan.NewCheck(mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}, plan.DaemonSetRolledOutArgs{Version: "1.31.4"}, "d")}},
			want: []Permission{perm("get", "apps", "daemonsets", "istio-system", "ztunnel"), perm("list", "", "pods", "istio-system", "")}},
		{name: "a dry run runs no check",
			step:    plan.Step{WaitFor: &plan.WaitFor{Check: plan.NewCheck(mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}, plan.DaemonSetRolledOutArgs{}, "d")}},
			dry:     true,
			notWant: []Permission{perm("get", "apps", "daemonsets", "istio-system", "ztunnel")}},
		{name: "a restart reads and patches each workload by name",
			step: plan.Step{Restart: &plan.Restart{Workloads: []mesh.ObjectRef{{Kind: "StatefulSet", Namespace: "data", Name: "pg"}}}},
			want: []Permission{perm("get", "apps", "statefulsets", "data", "pg"), perm("patch", "apps", "statefulsets", "data", "pg")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.step
			st.ID = "s"
			p := &plan.Plan{Steps: []plan.Step{st}}
			ps := RequiredPermissions(p, Options{DryRun: tc.dry})
			have := map[Permission]Need{}
			for _, n := range ps.Needs() {
				have[n.Permission] = n
			}
			for _, w := range tc.want {
				n, ok := have[w]
				if !ok {
					t.Errorf("missing %s", w)
					continue
				}
				if !cmp.Equal(n.By, []string{"s"}) {
					t.Errorf("%s: needed by %v, want [s]", w, n.By)
				}
			}
			for _, w := range tc.notWant {
				if _, ok := have[w]; ok {
					t.Errorf("needs %s, which the step does not", w)
				}
			}
			if len(ps.Unknown()) > 0 {
				t.Errorf("unknown: %v", ps.Unknown())
			}
		})
	}
}

func TestAChartThatIsNotIstiosIsReportedAsNotCovered(t *testing.T) {
	p := &plan.Plan{Steps: []plan.Step{{ID: "x", HelmUpgrade: &plan.HelmRelease{Release: "other", Namespace: "ns", Chart: plan.ChartRef{Name: "nginx", Path: "/c"}}}}}
	ps := RequiredPermissions(p, Options{})
	if u := ps.Unknown(); len(u) != 1 || !strings.Contains(u[0], `chart "nginx"`) {
		t.Errorf("unknown %v, want the nginx release named", u)
	}
	if !bytes.Contains(Render(ps, RenderOptions{}), []byte("# not covered: Helm release ns/other")) {
		t.Error("the rendered RBAC does not say what it does not cover")
	}
}

func TestRollbacksAreIncludedOnlyWhenAsked(t *testing.T) {
	p := &plan.Plan{Steps: []plan.Step{{ID: "up", HelmUpgrade: &plan.HelmRelease{Release: "istio-base", Namespace: "istio-system", Chart: plan.ChartRef{Name: "base", Path: "/c"}},
		Rollback: &plan.Step{ID: "up/undo", HelmRollback: &plan.HelmRollback{Release: "istio-base", Namespace: "istio-system", Revision: 3}}}}}
	rec := perm("get", "", "secrets", "istio-system", "sh.helm.release.v1.istio-base.v3")
	if n := RequiredPermissions(p, Options{}); hasNeed(n, rec) {
		t.Error("a run of the plan needs the rollback's reads, but Apply runs no rollback")
	}
	n := RequiredPermissions(p, Options{Rollbacks: true})
	if !hasNeed(n, rec) {
		t.Error("with Rollbacks the rollback's read of revision 3 is missing")
	}
	// The rollback knows its release's chart from the step it undoes: base's objects.
	if !hasNeed(n, perm("patch", "apiextensions.k8s.io", "customresourcedefinitions", "", "")) || len(n.Unknown()) > 0 {
		t.Errorf("the rollback of base does not cover base's objects (unknown %v)", n.Unknown())
	}
}

func hasNeed(ps *Permissions, p Permission) bool {
	for _, n := range ps.Needs() {
		if n.Permission == p {
			return true
		}
	}
	return false
}

func TestRulesGrantEveryNeedAndNothingElse(t *testing.T) {
	ps := &Permissions{}
	ps.Add(perm("get", "", "nodes", "", "n1"), "a")
	ps.Add(perm("patch", "", "nodes", "", "n1"), "a")
	ps.Add(perm("get", "", "nodes", "", "n2"), "b")
	ps.Add(perm("list", "", "pods", "", ""), "c")
	ps.Add(perm("list", "", "pods", "istio-system", ""), "d") // covered by the cluster-wide list
	ps.Add(perm("get", "", "configmaps", "ns", "j"), "e")     // covered by the unnamed get
	ps.Add(perm("get", "", "configmaps", "ns", ""), "f")
	ps.Add(perm("create", "", "pods/eviction", "", ""), "g")
	ps.Add(perm("list", "", "namespaces", "", ""), "h")
	want := []Rule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "pods"}, Verbs: []string{"list"}, By: []string{"c", "d", "h"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, ResourceNames: []string{"n1"}, Verbs: []string{"get", "patch"}, By: []string{"a"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, ResourceNames: []string{"n2"}, Verbs: []string{"get"}, By: []string{"b"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}, By: []string{"g"}},
		{Namespace: "ns", APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, By: []string{"e", "f"}},
	}
	got := ps.Rules()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}
	for _, n := range ps.Needs() {
		if !Allowed(got, n.Permission) {
			t.Errorf("%s is not granted", n.Permission)
		}
	}
	for _, p := range []Permission{perm("patch", "", "nodes", "", "n2"), perm("get", "", "nodes", "", ""), perm("list", "", "secrets", "", ""),
		perm("get", "", "configmaps", "other", ""), perm("create", "", "pods", "", ""), perm("list", "apps", "pods", "", "")} {
		if Allowed(got, p) {
			t.Errorf("%s is granted, but nothing needs it", p)
		}
	}
}

func TestRenderedRBACReadsBackAsRolesAndBindings(t *testing.T) {
	ps := &Permissions{}
	ps.Add(perm("create", "", "pods/eviction", "", ""), "drain", "k8s.io/api@v0.37.2 policy/v1 Eviction")
	ps.Add(perm("get", "", "configmaps", "istio-system", "ambientkit-journal-x"), "executor: journal")
	ps.Add(perm("list", "", "secrets", "istio-ingress", ""), "gw")
	out := Render(ps, RenderOptions{Name: "upgrader", ServiceAccountNamespace: "ops", ServiceAccountName: "runner", Labels: map[string]string{"team": "mesh"}})
	if !bytes.Equal(out, Render(ps, RenderOptions{Name: "upgrader", ServiceAccountNamespace: "ops", ServiceAccountName: "runner", Labels: map[string]string{"team": "mesh"}})) {
		t.Fatal("rendering is not deterministic")
	}
	docs := strings.Split(string(out), "---\n")
	if len(docs) != 6 {
		t.Fatalf("%d documents, want a ClusterRole, two Roles and their three bindings:\n%s", len(docs), out)
	}
	var cr rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cr); err != nil {
		t.Fatal(err)
	}
	if cr.Kind != "ClusterRole" || cr.Name != "upgrader" || cr.Labels["team"] != "mesh" ||
		!cmp.Equal(cr.Rules, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}}}) {
		t.Errorf("ClusterRole %+v", cr)
	}
	if !strings.Contains(docs[0], "# for drain\n#   per k8s.io/api@v0.37.2 policy/v1 Eviction\n- apiGroups") {
		t.Errorf("the rule does not say what needs it and why:\n%s", docs[0])
	}
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict([]byte(docs[2]), &role); err != nil {
		t.Fatal(err)
	}
	if role.Namespace != "istio-system" || !cmp.Equal(role.Rules[0].ResourceNames, []string{"ambientkit-journal-x"}) {
		t.Errorf("Role %+v", role)
	}
	var rb rbacv1.RoleBinding
	if err := yaml.UnmarshalStrict([]byte(docs[5]), &rb); err != nil {
		t.Fatal(err)
	}
	if rb.Namespace != "istio-system" || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "upgrader" ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Namespace != "ops" || rb.Subjects[0].Name != "runner" {
		t.Errorf("RoleBinding %+v", rb)
	}
}

func TestKindsAreNamedByTheirServedPlurals(t *testing.T) {
	for kind, want := range map[string]string{"Gateway": "gateways", "AuthorizationPolicy": "authorizationpolicies", "Telemetry": "telemetries",
		"Ingress": "ingresses", "Endpoints": "endpoints", "ServiceEntry": "serviceentries", "Deployment": "deployments", "ProxyConfig": "proxyconfigs"} {
		if _, got := Resource("v1", kind); got != want {
			t.Errorf("%s: %s, want %s", kind, got, want)
		}
	}
}

func TestANamespaceThePlanCreatesIsWrittenAheadOfItsRole(t *testing.T) {
	ps := &Permissions{}
	ps.Add(perm("create", "apps", "daemonsets", "ztunnel-green", ""), "ztunnel/bluegreen/green/install")
	ps.Add(perm("list", "", "secrets", "istio-system", ""), "observe.Live")
	if got := ps.Namespaces(); !cmp.Equal(got, []string{"istio-system", "ztunnel-green"}) {
		t.Errorf("Namespaces() = %v", got)
	}
	// A namespace named but holding no rule gets no document: nothing is created that nothing uses.
	docs := strings.Split(string(Render(ps, RenderOptions{CreateNamespaces: []string{"ztunnel-green", "unused"}})), "---\n")
	if len(docs) != 3 {
		t.Fatalf("%d documents, want the Namespace and two Roles:\n%s", len(docs), strings.Join(docs, "---\n"))
	}
	var ns corev1.Namespace
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &ns); err != nil {
		t.Fatal(err)
	}
	if ns.Kind != "Namespace" || ns.Name != "ztunnel-green" {
		t.Errorf("first document %+v, want Namespace ztunnel-green", ns)
	}
	if !strings.Contains(docs[2], "kind: Role\n") || !strings.Contains(docs[2], `namespace: "ztunnel-green"`) {
		t.Errorf("the Role of ztunnel-green does not follow its Namespace:\n%s", docs[2])
	}
}

// TestEveryKindSaysWhatItNeeds fails when an action kind of the plan has no entry in kindNeeds, or
// an entry misses a part, or a part reads another kind's payload (it panics on a step of its kind
// with a zero payload).
func TestEveryKindSaysWhatItNeeds(t *testing.T) {
	for _, k := range plan.Kinds() {
		kn, ok := kindNeeds[k]
		if !ok {
			t.Errorf("kind %s has no entry in kindNeeds: say what its steps need of the cluster (needsNothing when nothing)", k)
			continue
		}
		if kn.needs == nil || kn.release == nil {
			t.Errorf("kind %s misses a part of its kindNeeds entry (needs and release are both set; noRelease when it touches no release)", k)
			continue
		}
		s := plantest.ZeroStep(t, k)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("kind %s: a part of its kindNeeds entry panics on a step of the kind: %v", k, r)
				}
			}()
			kn.needs(s, false, need{d: &derivation{ps: &Permissions{}, charts: map[string]string{}}, by: "step"})
			kn.release(s)
		}()
	}
	if len(kindNeeds) != len(plan.Kinds()) {
		t.Errorf("kindNeeds has %d entries for %d kinds", len(kindNeeds), len(plan.Kinds()))
	}
}
