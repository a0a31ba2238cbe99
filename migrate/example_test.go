package migrate_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"
)

// Moving the demo's sidecar namespaces to ambient. payments has an L7 ALLOW policy that ztunnel
// alone turns into deny-all, and no Service a waypoint could serve: no waiver makes that safe, so
// planning is blocked. orders plans in the migration guide's order, every changing step with its
// rollback, nothing deleted before the backup is read back; what readiness cannot see (hosts that
// match no Service) needs a person.
func ExampleMigrateNamespace() {
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		panic(err)
	}
	waypoint := &migrate.WaypointRef{Name: "waypoint"}
	for _, ns := range []string{"payments", "orders"} {
		r, err := migrate.Readiness(s, ns, migrate.ReadinessOptions{Waypoint: waypoint})
		if err != nil {
			panic(err)
		}
		var apply []mesh.ObjectRef
		for _, pr := range r.Proposals {
			apply = append(apply, pr.For)
		}
		p, err := migrate.MigrateNamespace(s, ns, migrate.Options{
			Waypoint: waypoint, CreateWaypoint: true, Apply: apply,
			BackupFile: "/var/backups/ambientkit/" + ns + ".json",
		})
		if errors.Is(err, plan.ErrBlocked) {
			fmt.Println(ns, "blocked:", plan.Codes(plan.Stopping(p.Findings)))
			continue
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(ns, "runnable:", p.Runnable())
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
	}
	// Output:
	// payments blocked: [AUTHZ_POLICY_BECOMES_DENY_ALL]
	// orders runnable: false
	// needs a person: ROUTE_HOST_NOT_RESOLVED DestinationRule orders/orders
	// needs a person: ROUTE_HOST_NOT_RESOLVED VirtualService orders/orders
	// migrate/orders/prechecks                                   Verify       undo -
	// migrate/orders/waypoint                                    ApplyObject  undo DeleteObject
	// migrate/orders/waypoint/programmed                         WaitFor      undo -
	// migrate/orders/use-waypoint                                PatchLabels  undo PatchLabels
	// migrate/orders/dataplane-mode                              PatchLabels  undo PatchLabels
	// migrate/orders/injection                                   PatchLabels  undo PatchLabels
	// migrate/orders/restart                                     Restart      undo Reinject
	// migrate/orders/backup                                      Backup       undo -
	// migrate/orders/validate                                    Verify       undo -
	// migrate/orders/health                                      HealthGate   undo -
}
