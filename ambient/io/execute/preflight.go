package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// ErrForbidden means the executor's client lacks permissions a run of the plan needs; the error is a
// *PermissionError naming each one. Nothing was changed.
var ErrForbidden = errors.New("missing permissions")

// PermissionError names the permissions a run lacks, with what needs each (the steps, or the
// executor's lock, journal and backups).
type PermissionError struct {
	// Plan is the plan's name.
	Plan string
	// Missing are the needs the API server refused, sorted.
	Missing []rbac.Need
}

// Error lists every missing permission: verb, resource with its group, name, namespace, and the steps
// that need it.
func (e *PermissionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: plan %q cannot run with these credentials (nothing was changed): %s refused: ", ErrForbidden, e.Plan, plural(len(e.Missing), "permission is", "permissions are"))
	for i, n := range e.Missing {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s, for %s", n.Permission, plan.ListSome(n.By, 3))
	}
	b.WriteString("; grant them (rbac.Render of Executor.RequiredPermissions writes the roles) and run again")
	return b.String()
}

// Unwrap returns ErrForbidden.
func (e *PermissionError) Unwrap() error { return ErrForbidden }

// preflightWorkers bounds the SelfSubjectAccessReviews in flight.
const preflightWorkers = 8

// preflight is Executor.Preflight.
func (e *engine) preflight(ctx context.Context, p *plan.Plan) error {
	ps, err := e.requiredPermissions(p)
	if err != nil {
		return err
	}
	needs := ps.Needs()
	allowed := make([]bool, len(needs))
	errs := make([]error, len(needs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(preflightWorkers, len(needs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				allowed[i], errs[i] = e.review(ctx, needs[i].Permission)
			}
		}()
	}
	for i := range needs {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("preflight of plan %q: could not ask the API server what this client may do (nothing was changed): %w", p.Metadata.Name, err)
	}
	var missing []rbac.Need
	for i, ok := range allowed {
		if !ok {
			missing = append(missing, needs[i])
		}
	}
	if len(missing) > 0 {
		pe := &PermissionError{Plan: p.Metadata.Name, Missing: missing}
		e.log.Error("preflight: permissions missing", "plan", p.Metadata.Name, "missing", len(missing))
		return pe
	}
	e.log.Debug("preflight: every permission the plan needs is granted", "plan", p.Metadata.Name, "permissions", len(needs))
	return nil
}

// review asks whether the client may do one thing.
func (e *engine) review(ctx context.Context, p rbac.Permission) (bool, error) {
	var ok bool
	err := e.retry(ctx, "review "+p.String(), func(ctx context.Context) error {
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: p.Verb, Group: p.Group, Resource: p.Resource,
				Subresource: p.Subresource, Namespace: p.Namespace, Name: p.Name},
		}}
		if err := e.c.Create(ctx, r); err != nil {
			return err
		}
		ok = r.Status.Allowed && !r.Status.Denied
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("SelfSubjectAccessReview of %s: %w", p, err)
	}
	return ok, nil
}
