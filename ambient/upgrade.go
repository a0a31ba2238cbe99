package ambient

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/cni"
	"github.com/ambientkit/ambientkit/revision"
	"github.com/ambientkit/ambientkit/tags"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// PlanUpgrade plans the whole upgrade of an ambient mesh to opts.Target as one reviewable plan:
// prechecks, base CRDs, istiod (a new revision beside the old one, or in place), istio-cni, ztunnel
// (node by node or in place), tags one at a time with health gates, gateway releases, the default
// revision, and the removal of the old control plane once nothing refers to it. A target more than one
// minor beyond the data plane is chained through each intermediate minor, each hop complete and
// verified, unless opts.NoChain.
//
// It composes the component planners (revision, cni, ztunnel, tags), is pure and deterministic, and
// does not change s. Bad options return an error and no plan. Blocking findings stop planning: the
// plan is returned with them (and no steps) together with an error wrapping ErrBlocked, so callers
// can still render why. Unwaived waivable findings do not stop planning: the whole plan is returned
// for review, and plan.Runnable reports false (an executor refuses it) until they are waived or fixed.
func PlanUpgrade(s *mesh.Snapshot, opts UpgradeOptions) (*plan.Plan, error) {
	return planUpgrade(s, opts, nil)
}

// planUpgrade is PlanUpgrade; when after is not nil, it also returns there the mesh each hop's
// steps leave, as the planner simulates it (simulate.go), for the test that holds the simulation to
// what the fake cluster's controllers make of the same steps.
func planUpgrade(s *mesh.Snapshot, opts UpgradeOptions, after *[]*mesh.Snapshot) (*plan.Plan, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: snapshot is nil; observe a cluster first (observe.Live, observe.Dir)", ErrInvalidOptions)
	}
	s, err := mesh.Normalized(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	data := opts.Releases
	if data == nil {
		data = releases.Default()
	}
	if err := opts.validate(data); err != nil {
		return nil, err
	}
	cps := s.ControlPlaneVersions()
	if len(cps) > 0 && opts.Target.Less(cps[len(cps)-1]) {
		return nil, fmt.Errorf("%w: target %s is older than the running control plane %s; downgrades are not planned", ErrInvalidOptions, opts.Target, cps[len(cps)-1])
	}
	var chosen *plan.Finding
	if opts.Strategy == "" {
		opts.Strategy = DefaultStrategy(s)
		chosen = strategyChosen(s, opts.Target)
	}
	hops, err := planHops(s, data, opts)
	if err != nil {
		return nil, err
	}
	if _, ok := opts.ztunnel().(ztunnel.BlueGreen); ok && len(hops) > 1 {
		return nil, fmt.Errorf("%w: the upgrade to %s chains through %s, and blue-green replaces ztunnel once: upgrade to %s first (blue-green or node by node), then to %s",
			ErrInvalidOptions, opts.Target, hopList(hops[:len(hops)-1]), hops[0], opts.Target)
	}
	p := plan.Begin(s, plan.Metadata{
		Name:      fmt.Sprintf("upgrade Istio %s → %s", describeFrom(s), opts.Target),
		Operation: "upgrade",
		To:        opts.Target,
		Options:   optionEcho(opts, hops),
	})
	if len(cps) > 0 {
		p.Metadata.From = cps[0]
	}
	p.Steps = make([]plan.Step, 0, len(hops)*(20+6*len(s.Nodes)+4*len(s.Tags)))
	u := &upgrader{opts: opts, b: steps.New(p, steps.Options{Charts: opts.Charts, Values: opts.Values, Probe: opts.Probe})}
	if chosen != nil {
		u.b.Finding(*chosen)
	}
	cur := s
	for i, hop := range hops {
		prefix := ""
		if len(hops) > 1 {
			prefix = hop.String() + "/"
		}
		added, err := u.addedZtunnels(cur, hop, prefix)
		if err != nil {
			return nil, err
		}
		comp, err := compat.Compute(cur, compat.Options{Target: hop, Strategy: opts.Strategy, Releases: data, Today: opts.Today, Waive: opts.Waive,
			AddsZtunnels: added})
		if err != nil {
			return nil, err
		}
		if hop != opts.Target {
			for j := range comp.Findings {
				if comp.Findings[j].Code == plan.CodeTargetEndOfLife {
					comp.Findings[j].Severity = plan.Info
					comp.Findings[j].Message += "; it is only an intermediate hop"
				}
			}
		}
		u.addCompatFindings(comp.Findings, i > 0, hop)
		if i == 0 && hasBlocking(comp.Findings) {
			break
		}
		next, err := u.planHop(cur, hop, prefix, i == 0)
		if err != nil {
			return nil, err
		}
		if after != nil {
			*after = append(*after, next)
		}
		cur = next
	}
	if err := u.b.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if len(hops) > 1 {
		// Each intermediate hop goes to the newest patch of its minor the release data knows; when
		// that list is an estimate (a lower bound), say so.
		for _, hop := range hops[:len(hops)-1] {
			m, _ := data.Minor(hop)
			p.Findings = append(p.Findings, compat.Estimates(m, "hop "+hop.String(), releases.FieldPatches)...)
		}
		p.Findings = append(p.Findings, plan.Finding{Code: plan.CodeUpgradeChained, Severity: plan.Info,
			Object:  mesh.ObjectRef{Kind: "Cluster", Name: "kubernetes"},
			Message: fmt.Sprintf("the upgrade is chained through %s: CNI and ztunnel may not run beside a control plane two minors newer", hopList(hops[:len(hops)-1])),
			Remedy:  "each hop is complete and verified before the next starts"})
	}
	return plan.Finalize(p, plan.FinalizeOptions{Waive: opts.Waive,
		Accounting: compat.Accounting(s, cur, "the upgrade to "+opts.Target.String(), opts.Target.String())})
}

// hasBlocking reports whether a finding of blocking severity is present: those stop planning. Unwaived
// waivable findings do not; the plan is made and shown, and plan.Runnable reports false until they
// are waived or fixed.
func hasBlocking(fs []plan.Finding) bool {
	for _, f := range fs {
		if f.Severity == plan.Blocking {
			return true
		}
	}
	return false
}

func uniqueStrings(in []string) []string {
	sort.Strings(in)
	out := in[:0]
	for i, s := range in {
		if i == 0 || s != in[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func describeFrom(s *mesh.Snapshot) string {
	cps := s.ControlPlaneVersions()
	switch len(cps) {
	case 0:
		return "(no control plane)"
	case 1:
		return cps[0].String()
	}
	return cps[0].String() + "…" + cps[len(cps)-1].String()
}

func hopList(hops []mesh.Version) string {
	var parts []string
	for _, h := range hops {
		parts = append(parts, h.String())
	}
	return strings.Join(parts, ", ")
}

// planHops returns the versions to pass through, ending with the target. Each hop is at most one minor
// beyond the oldest of control plane, CNI and ztunnel.
func planHops(s *mesh.Snapshot, data *releases.Data, opts UpgradeOptions) ([]mesh.Version, error) {
	base, ok := oldestComponent(s)
	if !ok || opts.Target.MinorsAhead(base) <= 1 {
		return []mesh.Version{opts.Target}, nil
	}
	var hops []mesh.Version
	newest := s.ControlPlaneVersions()
	for m := base.Minor + 1; m < opts.Target.Minor || opts.Target.Major > base.Major && m < base.Minor+1000; m++ {
		v, ok := data.Latest(mesh.Version{Major: base.Major, Minor: m})
		if !ok {
			return nil, fmt.Errorf("%w: chaining %s → %s needs release data for %d.%d", ErrInvalidOptions, base, opts.Target, base.Major, m)
		}
		if len(newest) > 0 && !newest[len(newest)-1].Less(v) {
			continue // the control plane is already there; the hop is the data plane catching up
		}
		hops = append(hops, v)
	}
	if opts.NoChain && len(hops) > 0 {
		return nil, fmt.Errorf("%w: %s is %d minors beyond the data plane (%s); upgrade to %s first, or allow chaining",
			ErrInvalidOptions, opts.Target, opts.Target.MinorsAhead(base), base, hops[0])
	}
	return append(hops, opts.Target), nil
}

// DefaultStrategy is the control-plane strategy PlanUpgrade takes when UpgradeOptions.Strategy is
// empty: in place for an unrevisioned control plane (its one istiod is revision "default", the
// most common Helm install), since everything in the mesh refers to that istiod (ztunnel, sidecars
// injected through istio-injection=enabled, gateways) and a revision upgrade could not remove it
// until each was moved by hand; a revision upgrade (canary) otherwise.
func DefaultStrategy(s *mesh.Snapshot) Strategy {
	if s != nil && len(s.Revisions) > 0 && !slices.ContainsFunc(s.Revisions, func(r mesh.Revision) bool { return r.Name != "default" }) {
		return StrategyInPlace
	}
	return StrategyRevision
}

// strategyChosen is the finding that says the default strategy is in place because the control
// plane is unrevisioned, and how to ask for a canary instead; nil when the default is a revision.
func strategyChosen(s *mesh.Snapshot, target mesh.Version) *plan.Finding {
	if DefaultStrategy(s) != StrategyInPlace {
		return nil
	}
	r := s.Revisions[0]
	return &plan.Finding{Code: plan.CodeStrategyInPlaceForUnrevisioned, Severity: plan.Info,
		Object:    mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment},
		Component: "istiod/default",
		Message: fmt.Sprintf("the control plane is unrevisioned (revision default), so it is upgraded in place to %s: its Helm release is upgraded and "+
			"every reference to it (ztunnel, sidecars injected through istio-injection=enabled, gateways) keeps working; a revision upgrade would "+
			"install %s beside it and could not remove it until each of those was moved off it", target, target.RevisionName()),
		Remedy:        "to upgrade through a new revision beside it (a canary) instead, set UpgradeOptions.Strategy: revision",
		RemedyOptions: []plan.RemedyOption{{Option: "UpgradeOptions.Strategy", Value: string(StrategyRevision)}},
		Details:       map[string]string{"strategy": string(StrategyInPlace), "revision": "default"}}
}

// oldestComponent is the oldest version among istiod revisions, istio-cni and ztunnels.
func oldestComponent(s *mesh.Snapshot) (mesh.Version, bool) {
	var vs []mesh.Version
	vs = append(vs, s.ControlPlaneVersions()...)
	if s.CNI != nil && !s.CNI.Version.IsZero() {
		vs = append(vs, s.CNI.Version)
	}
	for _, z := range s.Ztunnels {
		if !z.Version.IsZero() {
			vs = append(vs, z.Version)
		}
	}
	if len(vs) == 0 {
		return mesh.Version{}, false
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Less(vs[j]) })
	return vs[0], true
}

func optionEcho(opts UpgradeOptions, hops []mesh.Version) map[string]string {
	zt := opts.ztunnel()
	o := map[string]string{
		"target":   opts.Target.String(),
		"strategy": steps.OrDefault(string(opts.Strategy), string(StrategyRevision)),
		"ztunnel":  zt.Name(),
	}
	for k, v := range zt.Settings() {
		o[k] = v
	}
	if len(hops) > 1 {
		o["hops"] = hopList(hops)
	}
	if len(opts.Waive) > 0 {
		var w []string
		for _, c := range opts.Waive {
			w = append(w, string(c))
		}
		sort.Strings(w)
		o["waive"] = strings.Join(w, ",")
	}
	return o
}

// upgrader composes the component planners, hop by hop.
type upgrader struct {
	opts UpgradeOptions
	b    *steps.Builder
}

func (u *upgrader) inPlace() bool { return u.opts.Strategy == StrategyInPlace }

// addCompatFindings adds the compatibility findings of a hop. Those of later hops are predictions made
// on a simulation: one already reported for an earlier hop (same code and object) is not repeated, the
// others become info findings, since each hop's precheck step checks the live cluster for real;
// end-of-life findings are reported once, for the target.
func (u *upgrader) addCompatFindings(fs []plan.Finding, later bool, hop mesh.Version) {
	seen := map[string]bool{}
	for _, f := range u.b.Plan().Findings {
		seen[string(f.Code)+"|"+f.Object.String()] = true
	}
	for _, f := range fs {
		k := string(f.Code) + "|" + f.Object.String()
		if later && (seen[k] || f.Code == plan.CodeEndOfLifeNotChecked || f.Code == plan.CodeTargetEndOfLife) {
			continue
		}
		seen[k] = true
		if later && f.Stops() {
			f.Severity = plan.Info
			f.Message += fmt.Sprintf(" (predicted for the hop to %s; its precheck step re-checks the live cluster before the hop starts)", hop)
		}
		u.b.Finding(f)
	}
}

// addedZtunnels are the ztunnels a hop installs beside the running one: a blue-green's green, which
// connects to the hop's new revision (one the plan installs, with the trust it needs) or, in place,
// to the revision blue connects to.
func (u *upgrader) addedZtunnels(s *mesh.Snapshot, hop mesh.Version, prefix string) ([]compat.AddedZtunnel, error) {
	g, ok := u.opts.ztunnel().(ztunnel.BlueGreen)
	if !ok {
		return nil, nil
	}
	rev := ""
	if !u.inPlace() {
		rev = steps.OrDefault(u.opts.RevisionName, hop.RevisionName())
		if prefix != "" {
			rev = hop.RevisionName()
		}
	} else if len(s.Ztunnels) == 1 {
		rev, _ = s.ZtunnelRevision(s.Ztunnels[0])
	}
	z, err := g.AddedZtunnel(s, hop, rev)
	if err != nil {
		return nil, err
	}
	return []compat.AddedZtunnel{z}, nil
}

// planHop adds the steps of one hop to the plan and returns the snapshot as it will be afterwards.
func (u *upgrader) planHop(s *mesh.Snapshot, target mesh.Version, prefix string, first bool) (*mesh.Snapshot, error) {
	b := u.b
	strategy := steps.OrDefault(string(u.opts.Strategy), string(StrategyRevision))
	pre := compat.PrecheckStep("", u.opts.Target, compat.Strategy(strategy))
	if !first {
		pre = compat.PrecheckStep(prefix, target, compat.Strategy(strategy))
		pre.Description = fmt.Sprintf("re-run the compatibility gate before the hop to %s", target)
		pre.Reason = "the previous hop must have left the mesh as planned; findings predicted for this hop are checked for real now"
	}
	b.Add(pre)
	for _, f := range settingFindings(b, s, target) {
		b.Finding(f)
	}
	u.baseCRDs(s, target, prefix)
	newRev := ""
	if u.inPlace() {
		revision.AddInPlace(b, s, revision.InPlaceOptions{Target: target, IDPrefix: prefix})
	} else {
		name := ""
		if prefix == "" {
			name = u.opts.RevisionName
		}
		var err error
		if newRev, err = revision.AddInstall(b, s, revision.InstallOptions{Target: target, Name: name, IDPrefix: prefix}); err != nil {
			return nil, err
		}
	}
	cni.AddUpgrade(b, s, cni.UpgradeOptions{Target: target, IDPrefix: prefix})
	if err := ztunnel.AddUpgrade(b, s, ztunnel.UpgradeOptions{Target: target, Revision: newRev, Strategy: u.opts.ztunnel(), IDPrefix: prefix}); err != nil {
		return nil, err
	}
	after := simulate(s, target, newRev, !u.opts.SkipRestart)
	if g, ok := u.opts.ztunnel().(ztunnel.BlueGreen); ok {
		green, err := g.Green(s, target, newRev)
		if err != nil {
			return nil, err
		}
		after = replaceZtunnel(after, green)
	}
	if !u.inPlace() {
		var old []string
		for _, r := range s.Revisions {
			old = append(old, r.Name)
		}
		err := tags.AddMoves(b, s, withRevision(s, newRev, target), old, newRev, tags.MoveOptions{Order: u.opts.TagOrder,
			SkipRestart: u.opts.SkipRestart, BatchSize: u.opts.RestartBatchSize, IDPrefix: prefix})
		if err != nil {
			return nil, err
		}
		for _, f := range revision.PinnedNamespaces(s, newRev) {
			b.Finding(f)
		}
	}
	u.gateways(s, target, prefix, newRev)
	if !u.inPlace() {
		u.waypointOwners(after, prefix)
		revision.AddDefault(b, s, revision.DefaultOptions{Target: target, NewRevision: newRev, IDPrefix: prefix})
		revision.AddRemoval(b, s, after, revision.RemovalOptions{NewRevision: newRev, IDPrefix: prefix})
	}
	return finishSimulation(after, newRev), nil
}
