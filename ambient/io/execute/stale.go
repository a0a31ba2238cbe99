package execute

import (
	"context"
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// snapshot observes the live mesh, retrying transient errors.
func (e *engine) snapshot(ctx context.Context) (*mesh.Snapshot, error) {
	var s *mesh.Snapshot
	err := e.retry(ctx, "observe the mesh", func(ctx context.Context) error {
		var err error
		s, err = e.opts.Snapshot(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("observe the live mesh: %w", err)
	}
	if s == nil {
		return nil, fmt.Errorf("observe the live mesh: Options.Snapshot returned no snapshot")
	}
	return s, nil
}

// checkFresh refuses a plan made from another state of the cluster.
func (e *engine) checkFresh(ctx context.Context, p *plan.Plan) error {
	s, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	live := s.Fingerprint()
	if live == p.Metadata.Fingerprint {
		return nil
	}
	hints := staleHints(p, s)
	what := "the plan cannot tell what changed (another cluster, or changes the plan does not touch)"
	if len(hints) > 0 {
		what = "changed since planning: " + strings.Join(hints, "; ")
	}
	return fmt.Errorf("%w: plan %q was made from a snapshot with fingerprint %s, the live cluster has %s; %s; nothing was changed: re-plan from a fresh snapshot",
		ErrPlanStale, p.Metadata.Name, p.Metadata.Fingerprint, live, what)
}

// staleHints compares what the plan's steps expect with the live snapshot (each action kind says
// what it depends on: Helm release revisions, tag targets, ...) and the version upgraded from. Nodes
// that came or went are not staleness: the executor skips a removed node and verifies a new one.
func staleHints(p *plan.Plan, s *mesh.Snapshot) []string {
	var out []string
	seen := map[string]bool{}
	add := func(format string, a ...any) {
		h := fmt.Sprintf(format, a...)
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	first := map[string]bool{}
	for i := range p.Steps {
		st := &p.Steps[i]
		if a, ok := actions[st.Kind()]; ok && a.stale != nil {
			a.stale(st, s, first, add)
		}
	}
	if !p.Metadata.From.IsZero() {
		vs := s.ControlPlaneVersions()
		found := false
		for _, v := range vs {
			if v == p.Metadata.From {
				found = true
			}
		}
		if !found {
			var have []string
			for _, v := range vs {
				have = append(have, v.String())
			}
			add("no control plane runs %s any more (running: %s)", p.Metadata.From, strings.Join(have, ", "))
		}
	}
	return out
}
