package execute

import (
	"context"
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

// snapshot observes the live mesh, retrying transient errors.
func (e *Executor) snapshot(ctx context.Context) (*mesh.Snapshot, error) {
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
func (e *Executor) checkFresh(ctx context.Context, p *plan.Plan) error {
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

// staleHints compares what the plan expects with the live snapshot: Helm release revisions, tag
// targets, revisions to remove, nodes to drain, the version upgraded from.
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
	releases := map[string]mesh.HelmRelease{}
	for _, h := range s.HelmReleases {
		releases[h.Namespace+"/"+h.Name] = h
	}
	firstUpgrade := map[string]bool{}
	for _, st := range p.Steps {
		switch {
		case st.HelmUpgrade != nil && st.HelmUpgrade.PreviousRevision > 0:
			h := st.HelmUpgrade
			key := h.Namespace + "/" + h.Release
			if firstUpgrade[key] {
				continue
			}
			firstUpgrade[key] = true
			live, ok := releases[key]
			switch {
			case !ok:
				add("Helm release %s no longer exists", key)
			case live.Revision != h.PreviousRevision:
				add("Helm release %s is at revision %d (chart %s), the plan expected revision %d", key, live.Revision, live.ChartVersion, h.PreviousRevision)
			}
		case st.HelmInstall != nil:
			key := st.HelmInstall.Namespace + "/" + st.HelmInstall.Release
			if _, ok := releases[key]; ok {
				add("Helm release %s already exists; the plan installs it", key)
			}
		case st.MoveTag != nil && st.MoveTag.From != "":
			t, ok := s.Tag(st.MoveTag.Tag)
			switch {
			case !ok:
				add("tag %s no longer exists", st.MoveTag.Tag)
			case t.Revision != st.MoveTag.From && t.Revision != st.MoveTag.To:
				add("tag %s points at %s, the plan expected %s", t.Name, t.Revision, st.MoveTag.From)
			}
		case st.Drain != nil:
			if _, ok := s.Node(st.Drain.Node); !ok {
				add("node %s no longer exists", st.Drain.Node)
			}
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
