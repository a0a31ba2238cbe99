package migrate_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/demo"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/migrate"
)

// Moving the demo's sidecar namespace payments to ambient with a waypoint the plan creates, in the
// migration guide's order: every changing step with its rollback, nothing deleted before the backup
// is read back. What the plan cannot settle on its own (an L7 policy ztunnel alone would turn into
// deny-all) needs a person.
func ExampleMigrateNamespace() {
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		panic(err)
	}
	waypoint := &migrate.WaypointRef{Name: "waypoint"}
	r, err := migrate.Readiness(s, "payments", migrate.ReadinessOptions{Waypoint: waypoint})
	if err != nil {
		panic(err)
	}
	var apply []mesh.ObjectRef
	for _, pr := range r.Proposals {
		fmt.Println("proposal:", pr.Ref(), "for", pr.For)
		apply = append(apply, pr.For)
	}
	p, err := migrate.MigrateNamespace(s, "payments", migrate.MigrateOptions{
		Waypoint: waypoint, CreateWaypoint: true, Apply: apply,
		BackupFile: "/var/backups/ambientkit/payments.json",
	})
	if errors.Is(err, plan.ErrBlocked) {
		fmt.Println("blocked:", plan.Codes(plan.Stopping(p.Findings)))
		return
	}
	if err != nil {
		panic(err)
	}
	fmt.Println("runnable:", p.Runnable())
	for _, f := range plan.Stopping(p.Findings) {
		fmt.Println("needs a person:", f.Code, f.Object)
	}
	for _, st := range p.Steps {
		undo := "-"
		if st.Rollback != nil {
			undo = string(st.Rollback.Kind())
		}
		fmt.Printf("%-58s %-12s undo %s\n", st.ID, st.Kind(), undo)
	}
	// Output:
	// runnable: false
	// needs a person: AUTHZ_POLICY_BECOMES_DENY_ALL AuthorizationPolicy payments/payments-read-only
	// migrate/payments/prechecks                                 Verify       undo -
	// migrate/payments/waypoint                                  ApplyObject  undo DeleteObject
	// migrate/payments/waypoint/programmed                       WaitFor      undo -
	// migrate/payments/use-waypoint                              PatchLabels  undo PatchLabels
	// migrate/payments/dataplane-mode                            PatchLabels  undo PatchLabels
	// migrate/payments/injection                                 PatchLabels  undo PatchLabels
	// migrate/payments/restart                                   Restart      undo Reinject
	// migrate/payments/backup                                    Backup       undo -
	// migrate/payments/validate                                  Verify       undo -
	// migrate/payments/health                                    HealthGate   undo -
}
