package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// RBAC holds --rbac and --rbac-account: instead of running the plan, write the ClusterRole and Roles
// (and with an account their bindings) that exactly grant what the run needs.
type RBAC struct {
	// File is --rbac: where the RBAC YAML is written; empty means run the plan.
	File string
	// Account is --rbac-account, NAMESPACE/NAME of the ServiceAccount the roles are bound to.
	Account string
}

// Register adds --rbac and --rbac-account.
func (r *RBAC) Register(c *Command) {
	c.add(Spec{Name: "rbac", Arg: "FILE", Usage: "change nothing: write the ClusterRole and Roles that grant exactly what this run needs (the plan's steps, the executor's lock, journal and backups, observation and events) to FILE, then stop; kubectl apply -f it and run as that account",
		Example: "--rbac upgrade.rbac.yaml --rbac-account platform/istio-upgrader"})
	c.fs.StringVar(&r.File, "rbac", "", "")
	c.add(Spec{Name: "rbac-account", Arg: "NAMESPACE/NAME", Usage: "with --rbac: also bind the roles to this ServiceAccount", Example: "--rbac-account platform/istio-upgrader"})
	c.fs.StringVar(&r.Account, "rbac-account", "", "")
}

// Check refuses an --rbac-account that is not NAMESPACE/NAME of valid names, or one given without --rbac.

func (r *RBAC) Check() error {
	if r.Account == "" {
		return nil
	}
	if r.File == "" {
		return fmt.Errorf("%w: --rbac-account applies with --rbac only", ErrUsage)
	}
	ns, name, ok := strings.Cut(r.Account, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return usage("--rbac-account %q: want NAMESPACE/NAME of a ServiceAccount", r.Account)
	}
	return errors.Join(CheckName("rbac-account", ns, false), CheckName("rbac-account", name, true))
}

// RunPermissions is what an example run needs besides the plan and the executor: observe.Live of
// the mesh snap was observed from (the executor's snapshots and MeshProbe), and, when eventsFor is
// a plan hash, the Kubernetes Events the run records for that plan (execute.KubernetesEvents).
func RunPermissions(snap *mesh.Snapshot, eventsFor string) *rbac.Permissions {
	ps := observe.RequiredPermissions(snap)
	if eventsFor != "" {
		ps.Merge(execute.KubernetesEventsPermissions(execute.KubernetesEventsOptions{PlanHash: eventsFor}))
	}
	return ps
}

// Write writes the RBAC of ex's run of p to File (0644: it holds no secret) and tells w what it
// holds and how to use it. A namespace that holds rules but is not in snap (one the plan creates)
// is written ahead of its Role.
func (r *RBAC) Write(w io.Writer, ex *execute.Executor, p *plan.Plan, snap *mesh.Snapshot) error {
	ps, err := ex.RequiredPermissions(p)
	if err != nil {
		return err
	}
	hash, err := execute.PlanHash(p)
	if err != nil {
		return err
	}
	// Named for the plan, as its journal is: the rules grant this plan's objects and nothing else.
	o := rbac.RenderOptions{Name: "ambientkit-plan-" + strings.TrimPrefix(hash, "sha256:")[:12]}
	o.ServiceAccountNamespace, o.ServiceAccountName, _ = strings.Cut(r.Account, "/")
	for _, ns := range ps.Namespaces() {
		if _, ok := snap.Namespace(ns); !ok {
			o.CreateNamespaces = append(o.CreateNamespaces, ns)
		}
	}
	if err := os.WriteFile(r.File, rbac.Render(ps, o), 0o644); err != nil {
		return fmt.Errorf("--rbac: %w", err)
	}
	bound := "bind them to the account that runs the plan"
	if r.Account != "" {
		bound = "bound to ServiceAccount " + r.Account
	}
	fmt.Fprintf(w, "\n%d permissions as %d rules written to %s (%s; nothing was changed): kubectl apply -f %s",
		ps.Len(), len(ps.Rules()), r.File, bound, r.File)
	if len(o.CreateNamespaces) > 0 {
		fmt.Fprintf(w, "\nit also creates namespace %s, which the plan installs into and its Role needs: after applying it, write the RBAC again with this command (the plan changes with the namespace, and so do the names it grants) and apply that",
			strings.Join(o.CreateNamespaces, ", "))
	}
	_, err = fmt.Fprintln(w)
	return err
}
