package migrate_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

func stepIDs(p *plan.Plan, ns string) []string {
	var out []string
	for _, st := range p.Steps {
		out = append(out, strings.TrimPrefix(st.ID, "migrate/"+ns+"/"))
	}
	return out
}

func mustStep(t *testing.T, p *plan.Plan, id string) *plan.Step {
	t.Helper()
	st, ok := p.Step(id)
	if !ok {
		t.Fatalf("the plan has no step %s (steps: %v)", id, stepIDs(p, ""))
	}
	return st
}

func findingOn(fs []plan.Finding, c plan.Code, obj mesh.ObjectRef) (plan.Finding, bool) {
	for _, f := range fs {
		if f.Code == c && f.Object == obj {
			return f, true
		}
	}
	return plan.Finding{}, false
}

// TestAGatewayThatReliesOnTheNamespaceRevisionKeepsItsOwner: the waypoint of pay has no istio.io/rev
// of its own; revision 1-30-3 owns it through the namespace's label. Removing that label would hand
// it to the default revision, so the plan copies the label onto it first (and only onto it: the
// ingress Gateway carries its own).
func TestAGatewayThatReliesOnTheNamespaceRevisionKeepsItsOwner(t *testing.T) {
	s := observeFiles(t, "testdata/migrate/revisioned.yaml")
	wp := mesh.ObjectRef{Kind: "Gateway", Namespace: "pay", Name: "pay-waypoint"}
	r, err := migrate.Readiness(s, "pay", migrate.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := findingOn(r.Findings, migrate.CodeMigrationGatewayRevisionChanges, wp)
	if !ok || f.Severity != plan.Waivable || !strings.Contains(f.Message, "revision 1-30-3 owns it now, revision default would") {
		t.Fatalf("readiness finding on the waypoint: %+v (found %v)", f, ok)
	}
	if _, ok := findingOn(r.Findings, migrate.CodeMigrationGatewayRevisionChanges, mesh.ObjectRef{Kind: "Gateway", Namespace: "pay", Name: "pay-ingress"}); ok {
		t.Error("a Gateway with its own istio.io/rev keeps its owner, but it has a finding")
	}
	p, err := migrate.MigrateNamespace(s, "pay", migrate.Options{BackupFile: "/var/backups/pay.json"})
	if err != nil {
		t.Fatal(err)
	}
	ids := stepIDs(p, "pay")
	pin, inj := slices.Index(ids, "pin-gateways"), slices.Index(ids, "injection")
	if pin < 0 || inj < 0 || pin > inj {
		t.Fatalf("steps %v: want pin-gateways before injection", ids)
	}
	st := mustStep(t, p, "migrate/pay/pin-gateways")
	want := &plan.PatchLabels{APIVersion: "gateway.networking.k8s.io/v1", Objects: []mesh.ObjectRef{wp}, Set: map[string]string{mesh.LabelRev: "1-30-3"}}
	if d := cmp.Diff(want, st.PatchLabels); d != "" {
		t.Errorf("pin step (-want +got):\n%s", d)
	}
	if st.Rollback == nil || st.Rollback.PatchLabels == nil || !slices.Equal(st.Rollback.PatchLabels.Remove, []string{mesh.LabelRev}) {
		t.Errorf("pin step's rollback %+v: want the label removed again", st.Rollback)
	}
	if len(st.Postconditions) != 1 || st.Postconditions[0].Type != plan.CheckGatewayOwner || st.Postconditions[0].Params["revision"] != "1-30-3" {
		t.Errorf("pin step's gate %+v: want the waypoint still owned by 1-30-3", st.Postconditions)
	}
	if f, _ := findingOn(p.Findings, migrate.CodeMigrationGatewayRevisionChanges, wp); f.Severity != plan.Info || !p.Runnable() {
		t.Errorf("the plan resolves the finding by its pin step, but it is %s (runnable %v)", f.Severity, p.Runnable())
	}
}

// TestAGatewayChartDeploymentInjectedThroughTheNamespaceLabelBlocks: the gateway-chart Deployment of
// edge2 gets its proxy from the injector the namespace's istio.io/rev selects. Once the label goes,
// its next pods would be injected by the default revision: no label can be copied onto a Helm
// release's pod template, so the migration is blocked.
func TestAGatewayChartDeploymentInjectedThroughTheNamespaceLabelBlocks(t *testing.T) {
	s := observeFiles(t, "testdata/migrate/revisioned.yaml")
	p, err := migrate.MigrateNamespace(s, "edge2", migrate.Options{BackupFile: "/var/backups/edge2.json",
		Waive: []plan.Code{migrate.CodeMigrationGatewayRevisionChanges}})
	if !errors.Is(err, migrate.ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	f, ok := findingOn(p.Findings, migrate.CodeMigrationGatewayRevisionChanges, mesh.ObjectRef{Kind: "Deployment", Namespace: "edge2", Name: "ingress"})
	if !ok || f.Severity != plan.Blocking || !strings.Contains(f.Message, "revision default would inject them instead of revision 1-30-3") {
		t.Errorf("finding: %+v (found %v)", f, ok)
	}
}

// TestInjectorsThatInjectUnlabelledNamespacesGetInjectionDisabled: with the auto webhook
// (enableNamespacesByDefault) removing istio.io/rev leaves the namespace unlabelled, which that
// webhook injects: the restarted pods would come back with sidecars. The plan sets
// istio-injection=disabled instead, and its rollbacks take it off again.
func TestInjectorsThatInjectUnlabelledNamespacesGetInjectionDisabled(t *testing.T) {
	tests := []struct {
		name       string
		files      []string
		wantSet    map[string]string
		wantRemove []string
		undoRemove []string
	}{
		{name: "without the auto webhook the label is removed", files: []string{"testdata/migrate/billing.yaml"},
			wantRemove: []string{mesh.LabelRev}},
		{name: "with the auto webhook istio-injection=disabled is set instead", files: []string{"testdata/migrate/billing.yaml", "testdata/migrate/auto-injector.yaml"},
			wantSet: map[string]string{mesh.LabelInjection: "disabled"}, wantRemove: []string{mesh.LabelRev}, undoRemove: []string{mesh.LabelInjection}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := observeFiles(t, tc.files...)
			p, err := migrate.MigrateNamespace(s, "billing", migrate.Options{BackupFile: "/var/backups/billing.json"})
			if err != nil {
				t.Fatal(err)
			}
			st := mustStep(t, p, "migrate/billing/injection")
			if d := cmp.Diff(tc.wantSet, st.PatchLabels.Set); d != "" {
				t.Errorf("set (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantRemove, st.PatchLabels.Remove); d != "" {
				t.Errorf("remove (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.undoRemove, st.Rollback.PatchLabels.Remove); d != "" {
				t.Errorf("the injection step's rollback removes (-want +got):\n%s", d)
			}
			rb := mustStep(t, p, "migrate/billing/restart").Rollback.Reinject
			if rb == nil || rb.Labels[mesh.LabelRev] != "default" || !slices.Equal(rb.Remove, tc.undoRemove) {
				t.Errorf("the restart's rollback %+v: want istio.io/rev=default back and %v removed", rb, tc.undoRemove)
			}
			_, told := findingOn(p.Findings, migrate.CodeMigrationNamespacesInjectedByDefault, mesh.ObjectRef{Kind: "Namespace", Name: "billing"})
			if told != (tc.wantSet != nil) {
				t.Errorf("finding %s present = %v", migrate.CodeMigrationNamespacesInjectedByDefault, told)
			}
		})
	}
}

// TestAWaiverDoesNotBuyACertainOutage: a policy ztunnel enforces as deny-all stays in force for good
// unless a waypoint enforces its translated copy and the plan deletes it. Waiving the code must not
// make such a plan runnable.
func TestAWaiverDoesNotBuyACertainOutage(t *testing.T) {
	waive := []plan.Code{migrate.CodeAuthzPolicyBecomesDenyAll, migrate.CodeWaypointNeededButMissing, migrate.CodeAuthzPolicyHasNoEffect, migrate.CodeVirtualServiceNeedsHTTPRoute, migrate.CodeAuthzPolicyLosesL7Rules}
	webGet := ref("AuthorizationPolicy", "checkout", "web-get")
	tests := []struct {
		name   string
		ns     string
		policy mesh.ObjectRef
		opts   func(*migrate.Options)
		says   string
	}{
		{name: "no waypoint can serve workloads that no Service selects", ns: "open", policy: ref("AuthorizationPolicy", "open", "files-get"),
			says: "no Service of the snapshot selects its workloads"},
		{name: "a waypoint without the translated copy", ns: "checkout", policy: webGet,
			opts: func(o *migrate.Options) {
				o.Waypoint, o.CreateWaypoint = &migrate.WaypointRef{Name: "waypoint"}, true
			},
			says: "the plan does not copy it onto the waypoint"},
		{name: "the copy applied but the original kept", ns: "checkout", policy: webGet,
			opts: func(o *migrate.Options) {
				*o = checkoutOptions()
				o.Keep = []mesh.ObjectRef{webGet}
			},
			says: "keeps it (Options.Keep)"},
	}
	s := observeFiles(t, "testdata/migrate/checkout.yaml", "testdata/migrate/revisioned.yaml")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := migrate.Options{BackupFile: "/var/backups/x.json"}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			opts.Waive = waive
			p, err := migrate.MigrateNamespace(s, tc.ns, opts)
			if !errors.Is(err, migrate.ErrBlocked) || p.Runnable() {
				t.Fatalf("err = %v, runnable %v: want a blocked plan", err, p != nil && p.Runnable())
			}
			f, _ := findingOn(p.Findings, migrate.CodeAuthzPolicyBecomesDenyAll, tc.policy)
			if f.Severity != plan.Blocking || f.Waived || !strings.Contains(f.Message, tc.says) || !strings.Contains(f.Message, "a waiver cannot make that safe") {
				t.Errorf("finding %+v: want it blocking, not waived, saying %q", f, tc.says)
			}
		})
	}
}

// TestTheDenyWindowIsShortAndNeedsAPerson: with the copy on the waypoint the plan backs up before the
// restart and deletes the deny-all policy right after it, and an approval shows the window under
// "what needs a person".
func TestTheDenyWindowIsShortAndNeedsAPerson(t *testing.T) {
	p, err := migrate.MigrateNamespace(migrationSnapshot(t), "checkout", checkoutOptions())
	if err != nil {
		t.Fatal(err)
	}
	ids := stepIDs(p, "checkout")
	restart := slices.Index(ids, "restart")
	if restart < 2 || ids[restart-2] != "deny-window" || ids[restart-1] != "backup" || ids[restart+1] != "delete/authorizationpolicy/web-get" {
		t.Fatalf("steps %v: want deny-window, backup, restart, then the deny-all policy's deletion", ids)
	}
	var md strings.Builder
	if err := runbook.Render(&md, p); err != nil {
		t.Fatal(err)
	}
	needs := md.String()[strings.Index(md.String(), "### What needs a person"):]
	needs = needs[:strings.Index(needs, "## Steps")]
	for _, want := range []string{"approve `migrate/checkout/deny-window`", "AuthorizationPolicy checkout/web-get (every request)", "migrate/checkout/delete/authorizationpolicy/web-get"} {
		if !strings.Contains(needs, want) {
			t.Errorf("what needs a person does not say %q:\n%s", want, needs)
		}
	}
	// A plan without a deny window keeps the guide's order: the backup after the restart.
	p, err = migrate.MigrateNamespace(migrationSnapshot(t), "billing", migrate.Options{BackupFile: "/var/backups/billing.json"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := stepIDs(p, "billing"); slices.Index(ids, "backup") < slices.Index(ids, "restart") || slices.Contains(ids, "deny-window") {
		t.Errorf("steps %v: want no deny window and the backup after the restart", ids)
	}
}

// TestReadinessThatCannotSeeSaysSo: in the demo mesh the VirtualService and DestinationRule of orders
// name a host no Service matches, and istio-ingress runs only a gateway; neither may be called ready.
func TestReadinessThatCannotSeeSaysSo(t *testing.T) {
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := migrate.Readiness(s, "orders", migrate.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []mesh.ObjectRef{ref("VirtualService", "orders", "orders"), ref("DestinationRule", "orders", "orders")} {
		f, ok := findingOn(r.Findings, migrate.CodeRouteHostNotResolved, obj)
		if !ok || f.Severity != plan.Waivable || !strings.Contains(f.Message, "orders.orders.svc.cluster.local") {
			t.Errorf("%s: finding %+v (found %v), want ROUTE_HOST_NOT_RESOLVED naming the host", obj, f, ok)
		}
	}
	if r.Ready {
		t.Error("orders is called ready although readiness cannot see what its routes route to")
	}
	r, err = migrate.Readiness(s, "istio-ingress", migrate.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := findingOn(r.Findings, migrate.CodeMigrationNamespaceRunsOnlyGateways, mesh.ObjectRef{Kind: "Namespace", Name: "istio-ingress"}); !ok || f.Severity != plan.Blocking || r.Ready {
		t.Errorf("istio-ingress: ready %v, finding %+v (found %v); want it blocked as a gateway's namespace", r.Ready, f, ok)
	}
}
