package migrate_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

func ref(kind, ns, name string) mesh.ObjectRef {
	return mesh.ObjectRef{Kind: kind, Namespace: ns, Name: name}
}

// checkoutOptions migrate checkout through a new waypoint, moving every L7 rule onto it and
// deleting the DestinationRule too.
func checkoutOptions() migrate.Options {
	return migrate.Options{
		Waypoint: &migrate.WaypointRef{Name: "waypoint"}, CreateWaypoint: true,
		Apply: []mesh.ObjectRef{ref("AuthorizationPolicy", "checkout", "web-get"), ref("AuthorizationPolicy", "checkout", "no-delete"),
			ref("VirtualService", "checkout", "web")},
		Delete:     []mesh.ObjectRef{ref("DestinationRule", "checkout", "web")},
		BackupFile: "/var/backups/ambientkit/checkout.json",
		Today:      time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC),
	}
}

func migrationSnapshot(t *testing.T) *mesh.Snapshot {
	return observeFiles(t, "testdata/migrate/checkout.yaml", "testdata/migrate/billing.yaml")
}

func TestMigrateNamespaceGolden(t *testing.T) {
	tests := []struct {
		name, namespace string
		opts            migrate.Options
		wantSteps       []string
	}{
		{
			name: "checkout-with-waypoint", namespace: "checkout", opts: checkoutOptions(),
			wantSteps: []string{"prechecks", "waypoint", "waypoint/programmed", "apply/authorizationpolicy/no-delete-waypoint",
				"apply/authorizationpolicy/web-get-waypoint", "apply/httproute/web", "use-waypoint", "dataplane-mode", "injection", "deny-window",
				"backup", "restart", "delete/authorizationpolicy/web-get", "delete/authorizationpolicy/no-delete", "delete/destinationrule/web",
				"delete/virtualservice/web", "validate", "health"},
		},
		{
			name: "billing-without-waypoint", namespace: "billing",
			opts:      migrate.Options{BackupFile: "/var/backups/ambientkit/billing.json", BatchSize: 2},
			wantSteps: []string{"prechecks", "dataplane-mode", "injection", "restart", "backup", "validate", "health"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := migrationSnapshot(t)
			p, err := migrate.MigrateNamespace(s, tc.namespace, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, st := range p.Steps {
				ids = append(ids, strings.TrimPrefix(st.ID, "migrate/"+tc.namespace+"/"))
			}
			if d := cmp.Diff(tc.wantSteps, ids); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			if !p.Runnable() {
				t.Errorf("plan is not runnable: %v", plan.Stopping(p.Findings))
			}
			if p.Metadata.Operation != "migrate-namespace" || p.Metadata.Fingerprint != s.Fingerprint() {
				t.Errorf("metadata %+v", p.Metadata)
			}
			y, err := plan.EncodeYAML(p)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "migrate", tc.name+".plan.yaml"), y)
			var md bytes.Buffer
			if err := runbook.Render(&md, p); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "migrate", tc.name+".plan.md"), md.Bytes())
			back, err := plan.Decode(y)
			if err != nil {
				t.Fatalf("the plan does not decode: %v", err)
			}
			if d := cmp.Diff(p, back); d != "" {
				t.Errorf("decode(encode(plan)) differs (-plan +decoded):\n%s", d)
			}
			again, _ := migrate.MigrateNamespace(s, tc.namespace, tc.opts)
			if y2, _ := plan.EncodeYAML(again); !bytes.Equal(y, y2) {
				t.Error("two plans of the same snapshot differ")
			}
		})
	}
}

func TestEveryChangingStepHasARollbackAndEveryDeletionABackup(t *testing.T) {
	p, err := migrate.MigrateNamespace(migrationSnapshot(t), "checkout", checkoutOptions())
	if err != nil {
		t.Fatal(err)
	}
	backup := -1
	for i, st := range p.Steps {
		if st.Kind().ChangesMesh() && st.Rollback == nil {
			t.Errorf("step %s changes the mesh and has no rollback", st.ID)
		}
		if st.Backup != nil {
			backup = i
		}
		if st.DeleteObject != nil {
			if backup < 0 || st.DeleteObject.BackupStep != p.Steps[backup].ID {
				t.Errorf("step %s deletes without naming the backup before it", st.ID)
			}
			if st.Rollback == nil || st.Rollback.Restore == nil || st.Rollback.Restore.BackupStep != st.DeleteObject.BackupStep {
				t.Errorf("step %s: rollback %+v does not restore from its backup", st.ID, st.Rollback)
			}
		}
	}
	if len(p.Steps[0].Preconditions) == 0 || p.Steps[0].Preconditions[0].Type != plan.CheckBackupWritable {
		t.Errorf("the first step does not check the backup file first: %+v", p.Steps[0].Preconditions)
	}
	// The L4 policy stays: ztunnel enforces it.
	for _, st := range p.Steps {
		if st.DeleteObject != nil && st.DeleteObject.Object.Name == "api-port" {
			t.Errorf("the L4 policy api-port is deleted by %s", st.ID)
		}
	}
}

func TestFindingsThePlanResolvesBecomeInfo(t *testing.T) {
	s := migrationSnapshot(t)
	p, err := migrate.MigrateNamespace(s, "checkout", checkoutOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Findings {
		if f.Severity != plan.Info || !strings.Contains(f.Message, "the plan resolves it") {
			t.Errorf("finding %s not resolved by the plan: %s", f.Code, f)
		}
	}
	// Without the proposals the same findings stop the plan; the deny-all one cannot be waived.
	opts := checkoutOptions()
	opts.Apply, opts.Delete = nil, nil
	opts.Waive = []plan.Code{migrate.CodeAuthzPolicyBecomesDenyAll}
	p, err = migrate.MigrateNamespace(s, "checkout", opts)
	if !errors.Is(err, migrate.ErrBlocked) {
		t.Fatalf("err = %v; a plan that leaves an L7 ALLOW policy to ztunnel must be blocked", err)
	}
	got := plan.Codes(plan.Stopping(p.Findings))
	want := []plan.Code{migrate.CodeAuthzPolicyBecomesDenyAll, migrate.CodeAuthzPolicyHasNoEffect, migrate.CodeVirtualServiceNeedsHTTPRoute}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stopping codes (-want +got):\n%s", d)
	}
	for _, st := range p.Steps {
		if st.DeleteObject != nil || st.ApplyObject != nil && st.ApplyObject.Ref().Kind != "Gateway" {
			t.Errorf("step %s applies or deletes although the caller chose nothing", st.ID)
		}
	}
}

func TestBadMigrationInput(t *testing.T) {
	s := migrationSnapshot(t)
	shop := observeFiles(t, "testdata/readiness/shop.yaml", "testdata/migrate/checkout.yaml")
	tests := []struct {
		name  string
		snap  *mesh.Snapshot
		ns    string
		opts  func(*migrate.Options)
		is    error
		codes []plan.Code
		says  string
	}{
		{name: "a namespace already in ambient is blocked", ns: "ambient-done", is: migrate.ErrBlocked, codes: []plan.Code{migrate.CodeMigrationNamespaceAlreadyAmbient}},
		{name: "a namespace with no mesh is blocked", ns: "plain", is: migrate.ErrBlocked, codes: []plan.Code{migrate.CodeMigrationNamespaceNotInMesh}},
		{name: "a namespace that does not exist is blocked", ns: "nowhere", is: migrate.ErrBlocked, codes: []plan.Code{migrate.CodeMigrationNamespaceNotFound}},
		{name: "a policy the classifier cannot read blocks the migration and is never deleted", snap: shop, ns: "shop", is: migrate.ErrBlocked,
			codes: []plan.Code{migrate.CodeAuthzPolicyBecomesDenyAll, migrate.CodeAuthzPolicyLosesL7Rules, migrate.CodePolicySpecInvalid}},
		{name: "no backup file is refused", ns: "checkout", opts: func(o *migrate.Options) { o.BackupFile = "" }, is: plan.ErrInvalidOptions, says: "BackupFile is empty"},
		{name: "a relative backup file is refused", ns: "checkout", opts: func(o *migrate.Options) { o.BackupFile = "backup.json" }, is: plan.ErrInvalidOptions, says: "not an absolute path"},
		{name: "a proposal the report does not make is refused", ns: "checkout",
			opts: func(o *migrate.Options) {
				o.Apply = append(o.Apply, ref("AuthorizationPolicy", "checkout", "api-port"))
			},
			is: plan.ErrInvalidOptions, says: "has no proposal"},
		{name: "deleting a policy ztunnel enforces is refused", ns: "checkout",
			opts: func(o *migrate.Options) {
				o.Delete = append(o.Delete, ref("AuthorizationPolicy", "checkout", "api-port"))
			},
			is: plan.ErrInvalidOptions, says: "ztunnel enforces as written"},
		{name: "deleting what is not in the namespace is refused", ns: "checkout",
			opts: func(o *migrate.Options) {
				o.Delete = append(o.Delete, ref("DestinationRule", "checkout", "nope"))
			},
			is: plan.ErrInvalidOptions, says: "not an Istio policy or route"},
		{name: "a waypoint to create without a name is refused", ns: "checkout",
			opts: func(o *migrate.Options) { o.Waypoint = nil }, is: plan.ErrInvalidOptions, says: "Waypoint is nil"},
		{name: "waypoint services that do not exist are refused", ns: "checkout",
			opts: func(o *migrate.Options) { o.WaypointServices = []string{"web", "cart"} }, is: plan.ErrInvalidOptions, says: "Service checkout/cart"},
		{name: "keeping what would not be deleted is refused", ns: "checkout",
			opts: func(o *migrate.Options) {
				o.Keep = []mesh.ObjectRef{ref("AuthorizationPolicy", "checkout", "api-port")}
			},
			is: plan.ErrInvalidOptions, says: "would not delete anyway"},
	}
	extra := observeFiles(t, "testdata/migrate/checkout.yaml", "testdata/migrate/edge.yaml")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.snap
			if snap == nil {
				snap = s
				if tc.ns == "ambient-done" || tc.ns == "plain" {
					snap = extra
				}
			}
			opts := checkoutOptions()
			if tc.ns != "checkout" {
				opts = migrate.Options{BackupFile: "/var/backups/x.json"}
			}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			p, err := migrate.MigrateNamespace(snap, tc.ns, opts)
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			if tc.says != "" && !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want it to say %q", err, tc.says)
			}
			if tc.is == migrate.ErrBlocked {
				if p == nil || len(p.Steps) != 0 {
					t.Fatalf("blocked plan %+v: want the findings and no steps", p)
				}
				var blocking []plan.Code
				for _, f := range p.Findings {
					if f.Severity == plan.Blocking {
						blocking = append(blocking, f.Code)
					}
				}
				if d := cmp.Diff(tc.codes, blocking); d != "" {
					t.Errorf("blocking codes (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestAPartlyMigratedNamespaceResumesWithoutRelabelling(t *testing.T) {
	s := observeFiles(t, "testdata/migrate/checkout.yaml", "testdata/migrate/edge.yaml")
	p, err := migrate.MigrateNamespace(s, "halfway", migrate.Options{BackupFile: "/var/backups/halfway.json"})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range p.Steps {
		if strings.HasSuffix(st.ID, "/dataplane-mode") {
			t.Errorf("step %s labels a namespace that already is ambient", st.ID)
		}
	}
	if _, ok := p.Step("migrate/halfway/restart"); !ok {
		t.Error("no restart of the pods that still run sidecars")
	}
	codes := plan.Codes(p.Findings)
	if !slicesContains(codes, migrate.CodeMigrationNamespacePartlyAmbient) || !slicesContains(codes, migrate.CodeMigrationPodLabelSelectsInjection) ||
		!slicesContains(codes, migrate.CodeMigrationWorkloadNotRestartable) {
		t.Errorf("codes %v: want partly ambient, a pod label that injects, and a bare pod", codes)
	}
}

func slicesContains(list []plan.Code, c plan.Code) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

func TestOrderPutsSmallAndSimpleNamespacesFirst(t *testing.T) {
	s := migrationSnapshot(t)
	got := migrate.Order(s, "checkout", "nowhere", "billing", "checkout")
	var names []string
	for _, r := range got {
		names = append(names, r.Namespace)
	}
	// billing needs no waypoint (only an L4 policy) although it has a StatefulSet; checkout needs one.
	if d := cmp.Diff([]string{"billing", "checkout", "nowhere"}, names); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if !got[1].NeedsWaypoint || got[0].NeedsWaypoint || got[0].Stateful != 1 || !got[2].Missing || got[1].Sidecars != 3 {
		t.Errorf("ranks %+v", got)
	}
}
