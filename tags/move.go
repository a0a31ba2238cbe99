package tags

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// MoveOptions configure a tag move (MoveTag) and the moves of a larger plan (AddMoves). The zero
// value restarts affected workloads one at a time and asks the "mesh-health" probe after each move.
type MoveOptions struct {
	// SkipRestart leaves workloads on their current sidecars; they pick up the new revision when they
	// next restart.
	SkipRestart bool
	// BatchSize is how many workloads restart together; 0 means 1.
	BatchSize int
	// Probe names the caller's health probe for the gate after each move; "" means "mesh-health".
	Probe string
	// Releases, Today and Waive are the compatibility gate's (compat.Options): MoveTag runs the
	// gate of the mesh as it runs before it plans. Waive also accepts waivable findings of the move.
	Releases *releases.Data
	Today    time.Time
	Waive    []plan.Code
	// Order moves these tags first, in this order (AddMoves); the others follow lowest risk first
	// (Order), default last. A tag that does not exist is an error wrapping plan.ErrInvalidOptions.
	Order []string
	// IDPrefix is put before every step ID (AddMoves in chained hops).
	IDPrefix string
	// Charts, when set, is where the istiod chart comes from, so that the runbook renders the tag
	// with helm template from the caller's own chart source (AddMoves passes the composing plan's).
	// Nil: the runbook applies the rendered objects with kubectl instead.
	Charts *steps.ChartSource
}

// MoveTag plans pointing tag at revision rev: the re-rendered webhook configuration (and tag Service
// from Istio 1.28), verification that it points there, restarts of the workloads it injects (listed,
// batched, optional), their verification, a health gate, and a rollback that points the tag back.
// The plan opens with the compatibility gate's prechecks step, as every primitive's does.
//
// The contract is every primitive's (plan.Finalize): bad options are an error wrapping
// plan.ErrInvalidOptions and no plan; what the mesh forbids is a finding with a code, and blocking
// findings return the plan (no steps) with an error wrapping plan.ErrBlocked: an unknown tag
// (TAG_UNKNOWN), a tag named like a revision (TAG_NAMED_LIKE_REVISION), a revision that does not
// exist or is not ready (TAG_TARGET_REVISION_NOT_READY), a move that would make two injectors select
// the same pods (TAG_INJECTOR_OVERLAP), and whatever the gate finds. A tag that already points at
// rev is an info finding (TAG_ALREADY_POINTS_THERE) and a plan with nothing to move.
func MoveTag(s *mesh.Snapshot, tag, rev string, opts MoveOptions) (*plan.Plan, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: snapshot is nil; observe a cluster first (observe.Live, observe.Dir)", plan.ErrInvalidOptions)
	}
	s, err := mesh.Normalized(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", plan.ErrInvalidOptions, err)
	}
	if tag == "" || rev == "" {
		return nil, fmt.Errorf("%w: name the tag to move and the revision it moves to", plan.ErrInvalidOptions)
	}
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("%w: MoveOptions.BatchSize is negative", plan.ErrInvalidOptions)
	}
	if err := plan.CheckWaivers(opts.Waive); err != nil {
		return nil, err
	}
	from := "?"
	if t, ok := s.Tag(tag); ok {
		from = t.Revision
	}
	p := plan.Begin(s, plan.Metadata{
		Name:      fmt.Sprintf("move tag %s: %s → %s", tag, from, rev),
		Operation: "move-tag",
		Options:   map[string]string{"tag": tag, "revision": rev, "restart": fmt.Sprint(!opts.SkipRestart)},
	})
	gate, err := compat.Compute(s, compat.Options{Releases: opts.Releases, Today: opts.Today, Waive: opts.Waive})
	if err != nil {
		return nil, err
	}
	b := steps.New(p, steps.Options{Probe: opts.Probe})
	for _, f := range gate.Findings {
		if (f.Code == plan.CodeTagWebhookAndServiceDisagree || f.Code == plan.CodeTagRevisionMissing) && f.Details["tag"] == tag {
			f.Resolve(fmt.Sprintf("the move re-renders tag %s's webhook configuration and Service for revision %s", tag, rev))
		}
		b.Finding(f)
	}
	findings := moveFindings(s, tag, rev)
	for _, f := range findings {
		b.Finding(f)
	}
	if len(plan.Stopping(findings)) == 0 && !already(findings) {
		for _, f := range gatewayDropFindings(s, tag) {
			b.Finding(f)
		}
		b.Add(compat.PrecheckStep(opts.IDPrefix, mesh.Version{}, ""))
		for _, st := range moveSteps(s, tag, rev, opts, b.Last()) {
			b.Append(st)
		}
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", plan.ErrInvalidOptions, err)
	}
	return plan.Finalize(p, plan.FinalizeOptions{Waive: opts.Waive, Subject: "tag " + tag,
		Accounting: compat.Accounting(s, movedTag(s, tag, rev), "the move of tag "+tag, "")})
}

func already(fs []plan.Finding) bool {
	for _, f := range fs {
		if f.Code == plan.CodeTagAlreadyPointsThere {
			return true
		}
	}
	return false
}

// moveFindings says what stops moving tag to rev, or that there is nothing to move.
func moveFindings(s *mesh.Snapshot, tag, rev string) []plan.Finding {
	t, ok := s.Tag(tag)
	tagObj := mesh.ObjectRef{Kind: "MutatingWebhookConfiguration", Name: WebhookName(tag, "")}
	if !ok {
		return []plan.Finding{{Code: plan.CodeTagUnknown, Severity: plan.Blocking, Object: tagObj,
			Message: fmt.Sprintf("tag %q does not exist; the tags are: %s", tag, orNone(s.TagNames())),
			Remedy:  "name one of the tags, or create it first (istioctl tag set " + tag + " --revision " + rev + ")",
			Details: map[string]string{"tag": tag, "known": strings.Join(s.TagNames(), ",")}}}
	}
	tagObj = t.Ref()
	if r, isRev := s.Revision(tag); isRev {
		return []plan.Finding{{Code: plan.CodeTagNamedLikeRevision, Severity: plan.Blocking,
			Object:  mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment},
			Related: []mesh.ObjectRef{tagObj},
			Message: fmt.Sprintf("tag %q has the name of a revision; injection cannot tell which one a namespace labelled istio.io/rev=%s means", tag, tag),
			Remedy:  "create a tag with another name, move the workloads to it, then remove this one",
			Details: map[string]string{"tag": tag}}}
	}
	r, ok := s.Revision(rev)
	if !ok {
		return []plan.Finding{{Code: plan.CodeTagTargetRevisionNotReady, Severity: plan.Blocking,
			Object:  mesh.ObjectRef{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-" + rev},
			Related: []mesh.ObjectRef{tagObj},
			Message: fmt.Sprintf("revision %q has no istiod (running revisions: %s); tag %s cannot move to it", rev, orNone(s.RevisionNames()), tag),
			Remedy:  "install the revision first (revision.AddInstall, or ambient.PlanUpgrade), or name a running one",
			Details: map[string]string{"tag": tag, "revision": rev}}}
	}
	if !r.Ready() {
		return []plan.Finding{{Code: plan.CodeTagTargetRevisionNotReady, Severity: plan.Blocking,
			Object:  mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment},
			Related: []mesh.ObjectRef{tagObj},
			Message: fmt.Sprintf("revision %q has %d of %d replicas ready; tag %s moves only to a ready revision", rev, r.ReadyReplicas, r.Replicas, tag),
			Remedy:  fmt.Sprintf("wait for it or fix it first: kubectl rollout status deployment/%s -n %s", r.Deployment, r.Namespace),
			Details: map[string]string{"tag": tag, "revision": rev, "ready": fmt.Sprint(r.ReadyReplicas), "replicas": fmt.Sprint(r.Replicas)}}}
	}
	if t.Revision == rev && !t.Split() { // a split tag moves to re-render the object that points elsewhere
		return []plan.Finding{{Code: plan.CodeTagAlreadyPointsThere, Severity: plan.Info, Object: tagObj,
			Message: fmt.Sprintf("tag %s already points at revision %s: there is nothing to move", tag, rev),
			Remedy:  "nothing to do",
			Details: map[string]string{"tag": tag, "revision": rev}}}
	}
	return overlapFindings(s, tag)
}

// gatewayDropFindings: the gateways and waypoints that follow tag leave its revision when it moves;
// an affected old istiod drops their config at once (compat.GatewayRevisionChangeFindings).
func gatewayDropFindings(s *mesh.Snapshot, tag string) []plan.Finding {
	t, ok := s.Tag(tag)
	r, rok := s.TagRadius(tag)
	if !ok || !rok {
		return nil
	}
	return compat.GatewayRevisionChangeFindings(s, t.Revision, append(append([]mesh.ObjectRef(nil), r.Gateways...), r.Waypoints...))
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	return strings.Join(sorted, ", ")
}

// AddMoves adds the move of every tag of the from revisions to revision to, one tag at a time in
// risk order (Order, opts.Order first), each with its restarts and health gate, to a plan being
// built: ambient.PlanUpgrade composes it. staged is the mesh with the new revision in it (ready), as
// it will be once the earlier steps have run; the order is decided on before, where the tags still
// point at their old revisions. A tag that cannot move gets its blocking finding (the codes MoveTag
// gives) instead of steps, so the composed plan is blocked with it.
func AddMoves(b *steps.Builder, before, staged *mesh.Snapshot, from []string, to string, opts MoveOptions) error {
	ranked := Order(before, from...)
	order := make([]string, 0, len(ranked))
	for _, t := range opts.Order {
		if _, ok := before.Tag(t); !ok {
			return fmt.Errorf("%w: tagOrder names tag %q, which does not exist (tags: %v)", plan.ErrInvalidOptions, t, before.TagNames())
		}
		if !steps.Contains(order, t) {
			order = append(order, t)
		}
	}
	reasons := map[string]string{}
	for _, r := range ranked {
		reasons[r.Radius.Tag] = r.Reason
		if !steps.Contains(order, r.Radius.Tag) {
			order = append(order, r.Radius.Tag)
		}
	}
	for _, t := range order {
		if stop := plan.Stopping(moveFindings(staged, t, to)); len(stop) > 0 {
			for _, f := range stop {
				b.Finding(f) // the composing planner's Finalize blocks the plan on it
			}
			continue
		}
		charts := b.Charts()
		moves := moveSteps(staged, t, to, MoveOptions{SkipRestart: opts.SkipRestart, BatchSize: opts.BatchSize,
			Probe: b.Probe(), IDPrefix: opts.IDPrefix, Charts: &charts}, b.Last())
		if steps.Contains(opts.Order, t) {
			moves[0].Notes = append(moves[0].Notes, "order: given by the caller")
		} else if reasons[t] != "" {
			moves[0].Notes = append(moves[0].Notes, "order: "+reasons[t])
		}
		for _, st := range moves {
			b.Append(st)
		}
	}
	return nil
}

// moveSteps returns the steps of one tag move that moveFindings allows, the first depending on
// after (none when empty).
func moveSteps(s *mesh.Snapshot, tag, rev string, opts MoveOptions, after string) []plan.Step {
	t, _ := s.Tag(tag)
	r, _ := s.Revision(rev)
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
		DependsOn:   dependsOn(after),
		Risk:        risk(radius),
		Preconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{Kind: "Deployment", Namespace: ns, Name: r.Deployment}, plan.RevisionReadyArgs{Revision: rev},
			fmt.Sprintf("revision %s is ready", rev))},
		MoveTag: &plan.TagMove{Tag: tag, From: t.Revision, To: rev, Namespace: ns, Objects: Render(tag, rev, ns, r.Version), ChartVersion: chartVersion(r.Version),
			Chart: istiodChart(opts.Charts, r.Version)},
		Postconditions: []plan.Check{tagCheck},
		Notes:          moveNotes(radius),
	}
	if old, ok := s.Revision(t.Revision); ok {
		move.Rollback = &plan.Step{ID: id("move/undo"), Description: fmt.Sprintf("point tag %s back at revision %s", tag, old.Name), Risk: plan.RiskLow,
			MoveTag: &plan.TagMove{Tag: tag, From: rev, To: old.Name, Namespace: ns, Objects: Render(tag, old.Name, ns, old.Version), ChartVersion: chartVersion(old.Version),
				Chart: istiodChart(opts.Charts, old.Version)}}
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
	return steps
}

// istiodChart is the istiod chart of version v from the caller's chart source, whose revision-tags
// templates render the tag; zero when the caller gave none.
func istiodChart(charts *steps.ChartSource, v mesh.Version) plan.ChartRef {
	if charts == nil || v.IsZero() {
		return plan.ChartRef{}
	}
	return charts.Ref("istiod", v)
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

func dependsOn(after string) []string {
	if after == "" {
		return nil
	}
	return []string{after}
}

// overlapFindings finds the injectors that already make the tag's selection.
func overlapFindings(s *mesh.Snapshot, tag string) []plan.Finding {
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
				return []plan.Finding{{Code: plan.CodeTagInjectorOverlap, Severity: plan.Blocking,
					Object:  mesh.ObjectRef{Kind: "MutatingWebhookConfiguration", Name: inj.Name},
					Message: fmt.Sprintf("MutatingWebhookConfiguration %s (revision %q) also selects %s; moving tag %q would inject pods twice", inj.Name, inj.Revision, sel, tag),
					Remedy:  "remove that injector or its selection first",
					Details: map[string]string{"tag": tag, "injector": inj.Name, "revision": inj.Revision, "selects": sel}}}
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

// movedTag is s with tag pointing to rev, as the plan leaves it (the objects labelled with the tag
// and the gateways it owns are judged from it).
func movedTag(s *mesh.Snapshot, tag, rev string) *mesh.Snapshot {
	after := *s
	after.Tags = append([]mesh.Tag(nil), s.Tags...)
	for i := range after.Tags {
		if after.Tags[i].Name == tag {
			after.Tags[i].Revision = rev
		}
	}
	return &after
}
