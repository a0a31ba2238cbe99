package revision_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/revision"
)

// TestRemovingARevisionDeletesTheLeasesItsUninstallLeavesBehind: advisory istio#61155 says an
// uninstall of a revision leaves its two leader election Leases; the removal backs them up with
// the revision and deletes each after the uninstall, restorable from that backup. With advisory
// data that does not list them, no such step is planned: the steps come from the data.
func TestRemovingARevisionDeletesTheLeasesItsUninstallLeavesBehind(t *testing.T) {
	before, after := ownedTagMesh(nil, nil, "1.30.3")
	plans := map[string]*advisories.Data{"embedded": advisories.Default()}
	// The same data without istio#61155.
	empty := *advisories.Default()
	empty.Advisories = nil
	for _, a := range advisories.Default().Advisories {
		if a.ID != "istio#61155" {
			empty.Advisories = append(empty.Advisories, a)
		}
	}
	plans["empty"] = &empty
	for name, data := range plans {
		p := plan.New(plan.Metadata{Name: "t", Operation: "upgrade", Fingerprint: before.Fingerprint()})
		b := steps.New(p, steps.Options{})
		revision.AddRemoval(b, before, after, revision.RemovalOptions{NewRevision: "1-31-4", Advisories: data})
		if err := b.Err(); err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: invalid plan: %v", name, err)
		}
		var deleted []string
		for _, st := range p.Steps {
			if d := st.DeleteObject; d != nil && d.Object.Kind == "Lease" {
				deleted = append(deleted, d.Object.String())
				if d.BackupStep != "istiod/1-30-3/backup" || d.APIVersion != "coordination.k8s.io/v1" {
					t.Errorf("%s deletes from backup %q (apiVersion %q)", st.ID, d.BackupStep, d.APIVersion)
				}
				if st.Rollback == nil || st.Rollback.Restore == nil || st.Rollback.Restore.BackupStep != d.BackupStep {
					t.Errorf("%s has no rollback restoring from its backup", st.ID)
				}
				if !dependsOnRemoval(p, st) {
					t.Errorf("%s does not run after the removal", st.ID)
				}
			}
		}
		backup, _ := p.Step("istiod/1-30-3/backup")
		var backedUp []string
		for _, o := range backup.Backup.Objects {
			if o.Object.Kind == "Lease" {
				backedUp = append(backedUp, o.Object.String())
			}
		}
		want := []string{"Lease istio-system/istio-gateway-deployment-1-30-3", "Lease istio-system/istio-gateway-status-leader-1-30-3"}
		if name == "empty" {
			want = nil
		}
		if strings.Join(deleted, ",") != strings.Join(want, ",") || strings.Join(backedUp, ",") != strings.Join(want, ",") {
			t.Errorf("%s: deleted %v, backed up %v, want both %v", name, deleted, backedUp, want)
		}
	}
}

func dependsOnRemoval(p *plan.Plan, st plan.Step) bool {
	seen := map[string]bool{}
	var walk func(id string) bool
	walk = func(id string) bool {
		if id == "istiod/1-30-3/remove" {
			return true
		}
		if seen[id] {
			return false
		}
		seen[id] = true
		s, ok := p.Step(id)
		if !ok {
			return false
		}
		for _, d := range s.DependsOn {
			if walk(d) {
				return true
			}
		}
		return false
	}
	for _, d := range st.DependsOn {
		if walk(d) {
			return true
		}
	}
	return false
}
