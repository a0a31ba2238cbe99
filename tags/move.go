package tags

import (
	"errors"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

// Errors MoveTag returns; callers branch on them with errors.Is.
var (
	// ErrUnknownTag: the tag does not exist in the snapshot.
	ErrUnknownTag = errors.New("unknown tag")
	// ErrRevisionNotReady: the target revision does not exist or is not ready.
	ErrRevisionNotReady = errors.New("revision not ready")
	// ErrTagIsRevision: the tag has the name of a revision, so injection could not tell them apart.
	ErrTagIsRevision = errors.New("tag name equals a revision name")
	// ErrInjectorOverlap: after the move, the tag's webhooks would select pods another injector selects.
	ErrInjectorOverlap = errors.New("injector overlap")
	// ErrNothingToMove: the tag already points at the revision.
	ErrNothingToMove = errors.New("tag already points at revision")
)

// MoveOptions configure a tag move. The zero value restarts affected workloads one at a time and asks
// the "mesh-health" probe after the move.
type MoveOptions struct {
	// SkipRestart leaves workloads on their current sidecars; they pick up the new revision when they
	// next restart.
	SkipRestart bool
	// BatchSize is how many workloads restart together; 0 means 1.
	BatchSize int
	// Probe names the caller's health probe for the gate after the move; "" means "mesh-health".
	Probe string
	// IDPrefix is put before every step ID (PlanUpgrade uses it for chained hops).
	IDPrefix string
	// DependsOn is added to the first step's dependencies.
	DependsOn []string
}

// MoveTag plans pointing tag at revision rev: the re-rendered webhook configuration (and tag Service
// from Istio 1.28), verification that it points there, restarts of the workloads it injects (listed,
// batched, optional), their verification, a health gate, and a rollback that points the tag back.
// It refuses an unknown tag, a revision that does not exist or is not ready, a tag named like a
// revision, and a move that would make two injectors select the same pods.
func MoveTag(s *mesh.Snapshot, tag, rev string, opts MoveOptions) (*plan.Plan, error) {
	steps, radius, err := MoveSteps(s, tag, rev, opts)
	if err != nil {
		return nil, err
	}
	p := plan.New(plan.Metadata{
		Name:        fmt.Sprintf("move tag %s: %s → %s", tag, radius.Revision, rev),
		Operation:   "move-tag",
		Fingerprint: s.Fingerprint(),
		Options:     map[string]string{"tag": tag, "revision": rev, "restart": fmt.Sprint(!opts.SkipRestart)},
	})
	p.Findings = []plan.Finding{}
	p.Steps = steps
	return p, p.Validate()
}

// MoveSteps returns the steps of a tag move and the tag's blast radius, for planners that compose
// moves into a larger plan.
func MoveSteps(s *mesh.Snapshot, tag, rev string, opts MoveOptions) ([]plan.Step, Radius, error) {
	t, ok := s.Tag(tag)
	if !ok {
		return nil, Radius{}, fmt.Errorf("%w: tag %q does not exist; known tags: %v (create one with istioctl tag set)", ErrUnknownTag, tag, s.TagNames())
	}
	if _, isRev := s.Revision(tag); isRev {
		return nil, Radius{}, fmt.Errorf("%w: tag %q has the name of a revision; rename the tag", ErrTagIsRevision, tag)
	}
	r, ok := s.Revision(rev)
	if !ok {
		return nil, Radius{}, fmt.Errorf("%w: revision %q has no istiod (running: %v); install it first", ErrRevisionNotReady, rev, s.RevisionNames())
	}
	if !r.Ready() {
		return nil, Radius{}, fmt.Errorf("%w: revision %q has %d of %d replicas ready; wait for it or fix it first", ErrRevisionNotReady, rev, r.ReadyReplicas, r.Replicas)
	}
	if t.Revision == rev && !t.Split() { // a split tag moves to re-render the object that points elsewhere
		return nil, Radius{}, fmt.Errorf("%w: tag %q already points at %q", ErrNothingToMove, tag, rev)
	}
	if err := checkOverlap(s, tag); err != nil {
		return nil, Radius{}, err
	}
	radius, _ := BlastRadius(s, tag)
	ns := r.Namespace
	id := func(suffix string) string { return opts.IDPrefix + "tags/" + tag + "/" + suffix }
	webhook := t.Webhook
	if webhook == "" {
		webhook = WebhookName(tag, ns)
	}
	tagCheck := plan.NewCheck(mesh.ObjectRef{Kind: "MutatingWebhookConfiguration", Name: webhook}, plan.TagPointsToArgs{Tag: tag, Revision: rev},
		fmt.Sprintf("tag %s points at revision %s", tag, rev))
	prev := "a previous revision"
	if old, ok := s.Revision(t.Revision); ok {
		prev = fmt.Sprintf("%s (%s)", old.Name, old.Version)
	}
	move := plan.Step{
		ID:          id("move"),
		Description: fmt.Sprintf("point tag %s at revision %s (%s)", tag, rev, r.Version),
		Reason:      fmt.Sprintf("moves %s from %s to the new control plane", radius.Summary(), prev),
		DependsOn:   append([]string(nil), opts.DependsOn...),
		Risk:        risk(radius),
		Preconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{Kind: "Deployment", Namespace: ns, Name: r.Deployment}, plan.RevisionReadyArgs{Revision: rev},
			fmt.Sprintf("revision %s is ready", rev))},
		MoveTag:        &plan.TagMove{Tag: tag, From: t.Revision, To: rev, Namespace: ns, Objects: Render(tag, rev, ns, r.Version), ChartVersion: chartVersion(r.Version)},
		Postconditions: []plan.Check{tagCheck},
		Notes:          moveNotes(radius),
	}
	if old, ok := s.Revision(t.Revision); ok {
		move.Rollback = &plan.Step{ID: id("move/undo"), Description: fmt.Sprintf("point tag %s back at revision %s", tag, old.Name), Risk: plan.RiskLow,
			MoveTag: &plan.TagMove{Tag: tag, From: rev, To: old.Name, Namespace: ns, Objects: Render(tag, old.Name, ns, old.Version), ChartVersion: chartVersion(old.Version)}}
	}
	steps := []plan.Step{move}
	last := move.ID
	if len(radius.Workloads) > 0 && !opts.SkipRestart {
		batch := opts.BatchSize
		if batch <= 0 {
			batch = 1
		}
		restart := plan.Step{
			ID:          id("restart"),
			Description: fmt.Sprintf("restart %d workload(s) injected through tag %s, %d at a time", len(radius.Workloads), tag, batch),
			Reason:      "running sidecars keep the proxy and control plane they were injected with until their pods are recreated",
			DependsOn:   []string{last},
			Risk:        plan.RiskMedium,
			Restart:     &plan.Restart{Workloads: radius.Workloads, BatchSize: batch},
			Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.WorkloadsOnRevisionArgs{Tag: tag, Revision: rev},
				fmt.Sprintf("every pod of the restarted workloads runs a sidecar injected by %s", rev))},
		}
		steps = append(steps, restart)
		last = restart.ID
	}
	probe := opts.Probe
	if probe == "" {
		probe = "mesh-health"
	}
	steps = append(steps, plan.Step{
		ID: id("health"), Description: fmt.Sprintf("health gate after moving tag %s", tag),
		Reason:    "the caller's probe (error rate, TCP resets, latency) decides whether to go on or roll the tag back",
		DependsOn: []string{last}, Risk: plan.RiskNone,
		HealthGate: &plan.HealthGate{Probe: probe, Scope: "tag " + tag, SettleSeconds: 60},
	})
	return steps, radius, nil
}

func risk(r Radius) plan.Risk {
	switch {
	case r.Tag == "default" || r.StatefulWorkloads > 0 || len(r.Gateways) > 0:
		return plan.RiskHigh
	case r.SidecarPods > 0 || len(r.Waypoints) > 0:
		return plan.RiskMedium
	}
	return plan.RiskLow
}

func moveNotes(r Radius) []string {
	var notes []string
	for _, g := range r.Gateways {
		notes = append(notes, fmt.Sprintf("gateway %s changes owner to the new revision", g))
	}
	for _, w := range r.Waypoints {
		notes = append(notes, fmt.Sprintf("waypoint %s is redeployed by the new revision", w))
	}
	if len(r.AmbientNamespaces) > 0 {
		notes = append(notes, fmt.Sprintf("ambient namespaces using those waypoints: %v", r.AmbientNamespaces))
	}
	return notes
}

// checkOverlap refuses a tag whose selection another injector already makes.
func checkOverlap(s *mesh.Snapshot, tag string) error {
	mine := map[string]bool{mesh.LabelRev + "=" + tag: true}
	if tag == "default" {
		mine[mesh.LabelInjection+"=enabled"] = true
		mine[mesh.LabelSidecarInject+"=true"] = true
	}
	for _, inj := range s.Injectors {
		if inj.Tag == tag {
			continue
		}
		for _, sel := range inj.Selects {
			if mine[sel] {
				return fmt.Errorf("%w: MutatingWebhookConfiguration %s (revision %q) also selects %s; moving tag %q would inject pods twice. Remove that injector or its selection first",
					ErrInjectorOverlap, inj.Name, inj.Revision, sel, tag)
			}
		}
	}
	return nil
}

// chartVersion is the istiod chart version that renders a revision's tag objects: the revision's
// Istio version ("" when unknown).
func chartVersion(v mesh.Version) string {
	if v.IsZero() {
		return ""
	}
	return v.String()
}
