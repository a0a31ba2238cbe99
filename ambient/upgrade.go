package ambient

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/ambient/releases"
)

// PlanUpgrade plans the whole upgrade of an ambient mesh to opts.Target as one reviewable plan:
// prechecks, base CRDs, istiod (a new revision beside the old one, or in place), istio-cni, ztunnel
// (node by node or in place), tags one at a time with health gates, gateway releases, the default
// revision, and the removal of the old control plane once nothing refers to it. A target more than one
// minor beyond the data plane is chained through each intermediate minor, each hop complete and
// verified, unless opts.NoChain.
//
// It is pure and deterministic. Bad options return an error and no plan. Blocking findings stop
// planning: the plan is returned with them (and no steps) together with an error wrapping ErrBlocked,
// so callers can still render why. Unwaived waivable findings do not stop planning: the whole plan is
// returned for review, and plan.Runnable reports false (an executor refuses it) until they are waived
// or fixed.
func PlanUpgrade(s *mesh.Snapshot, opts UpgradeOptions) (*plan.Plan, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: snapshot is nil; observe a cluster first (observe.Live, observe.Dir)", ErrInvalidOptions)
	}
	s.Normalize() // canonical order; lookups rely on it. Idempotent: only reorders lists.
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
	hops, err := planHops(s, data, opts)
	if err != nil {
		return nil, err
	}
	u := &upgrader{opts: opts, data: data, helm: map[string]mesh.HelmRelease{}}
	u.p = plan.New(plan.Metadata{
		Name:        fmt.Sprintf("upgrade Istio %s → %s", describeFrom(s), opts.Target),
		Operation:   "upgrade",
		Fingerprint: s.Fingerprint(),
		To:          opts.Target,
		Options:     u.optionEcho(hops),
	})
	if len(cps) > 0 {
		u.p.Metadata.From = cps[0]
	}
	u.p.Steps = make([]plan.Step, 0, len(hops)*(20+6*len(s.Nodes)+4*len(s.Tags)))
	cur := s
	for i, hop := range hops {
		prefix := ""
		if len(hops) > 1 {
			prefix = hop.String() + "/"
		}
		comp, err := ComputeCompatibility(cur, CompatibilityOptions{Target: hop, Strategy: opts.Strategy, Releases: data, Today: opts.Today, Waive: opts.Waive})
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
		u.hop = hop
		u.addFindings(comp.Findings, i > 0)
		if i == 0 && hasBlocking(comp.Findings) {
			break
		}
		next, err := u.planHop(cur, hop, prefix, i == 0)
		if err != nil {
			return nil, err
		}
		cur = next
	}
	if len(hops) > 1 {
		u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodeUpgradeChained, Severity: plan.Info,
			Object:  mesh.ObjectRef{Kind: "Cluster", Name: "kubernetes"},
			Message: fmt.Sprintf("the upgrade is chained through %s: CNI and ztunnel may not run beside a control plane two minors newer", hopList(hops[:len(hops)-1])),
			Remedy:  "each hop is complete and verified before the next starts"})
	}
	for i := range u.p.Findings {
		if u.p.Findings[i].Severity == plan.Waivable && contains(opts.Waive, u.p.Findings[i].Code) {
			u.p.Findings[i].Waived = true
		}
	}
	plan.SortFindings(u.p.Findings)
	if hasBlocking(u.p.Findings) {
		stop := plan.Stopping(u.p.Findings)
		u.p.Steps = nil
		if err := u.p.Validate(); err != nil {
			return nil, err
		}
		var codes []string
		for _, f := range stop {
			codes = append(codes, string(f.Code))
		}
		return u.p, fmt.Errorf("%w: %s", ErrBlocked, strings.Join(uniqueStrings(codes), ", "))
	}
	if err := u.p.Validate(); err != nil {
		return nil, fmt.Errorf("internal error, the planner built an invalid plan: %w", err)
	}
	return u.p, nil
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

func contains[T comparable](list []T, x T) bool {
	for _, y := range list {
		if y == x {
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

type upgrader struct {
	opts UpgradeOptions
	data *releases.Data
	p    *plan.Plan
	// last is the ID of the step the next one depends on.
	last string
	// hop is the version the current hop moves to.
	hop mesh.Version
	// helm is each Helm release as it will be after the steps planned so far.
	helm map[string]mesh.HelmRelease
	// byNode indexes workloads by node, budgets by namespace (built once per hop).
	byNode  map[string][]*mesh.Workload
	budgets map[string][]mesh.PodDisruptionBudget
}

func (u *upgrader) index(s *mesh.Snapshot) {
	u.byNode = map[string][]*mesh.Workload{}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		for _, n := range w.Nodes {
			u.byNode[n] = append(u.byNode[n], w)
		}
	}
	u.budgets = map[string][]mesh.PodDisruptionBudget{}
	for _, b := range s.PodDisruptionBudgets {
		u.budgets[b.Namespace] = append(u.budgets[b.Namespace], b)
	}
}

func (u *upgrader) optionEcho(hops []mesh.Version) map[string]string {
	o := map[string]string{
		"target":   u.opts.Target.String(),
		"strategy": string(orDefault(string(u.opts.Strategy), string(StrategyRevision))),
		"ztunnel":  string(orDefault(string(u.opts.Ztunnel), string(ZtunnelNodeByNode))),
	}
	if u.ztunnel() == ZtunnelNodeByNode {
		o["batchSize"] = fmt.Sprint(max(1, u.opts.BatchSize))
	}
	if len(hops) > 1 {
		o["hops"] = hopList(hops)
	}
	if len(u.opts.Waive) > 0 {
		var w []string
		for _, c := range u.opts.Waive {
			w = append(w, string(c))
		}
		sort.Strings(w)
		o["waive"] = strings.Join(w, ",")
	}
	return o
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (u *upgrader) ztunnel() ZtunnelStrategy {
	if u.opts.Ztunnel == "" {
		return ZtunnelNodeByNode
	}
	return u.opts.Ztunnel
}

func (u *upgrader) inPlace() bool { return u.opts.Strategy == StrategyInPlace }

func (u *upgrader) probe() string { return orDefault(u.opts.Probe, "mesh-health") }

// addFindings adds findings; for later hops only those not already present.
func (u *upgrader) addFindings(fs []plan.Finding, later bool) {
	seen := map[string]bool{}
	for _, f := range u.p.Findings {
		seen[string(f.Code)+"|"+f.Object.String()] = true
	}
	for _, f := range fs {
		k := string(f.Code) + "|" + f.Object.String()
		if later && seen[k] {
			continue
		}
		if later && (f.Code == plan.CodeEndOfLifeNotChecked || f.Code == plan.CodeTargetEndOfLife) {
			continue
		}
		if later && f.Stops() {
			f.Severity = plan.Info
			f.Message += fmt.Sprintf(" (predicted for the hop to %s; its precheck step re-checks the live cluster before the hop starts)", u.hop)
		}
		seen[k] = true
		u.p.Findings = append(u.p.Findings, f)
	}
}

// add appends a step that depends on the previous one (unless deps are given) and makes it the last.
func (u *upgrader) add(st plan.Step, deps ...string) {
	if len(deps) == 0 && u.last != "" {
		deps = []string{u.last}
	}
	st.DependsOn = append(st.DependsOn, deps...)
	u.p.Steps = append(u.p.Steps, st)
	u.last = st.ID
}

// release finds a Helm release as it will be after the steps planned so far: by name, or else the
// first release of the chart.
func (u *upgrader) release(s *mesh.Snapshot, chart, name string) (mesh.HelmRelease, bool) {
	if name != "" {
		if h, ok := u.helm[name]; ok {
			return h, h.Status != "uninstalled"
		}
		return release(s, chart, name)
	}
	h, ok := release(s, chart, "")
	if ok {
		if t, tracked := u.helm[h.Name]; tracked {
			return t, t.Status != "uninstalled"
		}
		return h, true
	}
	names := make([]string, 0, len(u.helm))
	for n := range u.helm {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if t := u.helm[n]; t.Chart == chart && t.Status != "uninstalled" {
			return t, true
		}
	}
	return mesh.HelmRelease{}, false
}

// track records the release as a step leaves it.
func (u *upgrader) track(h mesh.HelmRelease) { u.helm[h.Name] = h }

// release finds the Helm release of a chart in the snapshot, preferring the given name.
func release(s *mesh.Snapshot, chart, name string) (mesh.HelmRelease, bool) {
	for _, h := range s.HelmReleases {
		if name != "" && h.Name == name {
			return h, true
		}
	}
	if name != "" {
		return mesh.HelmRelease{}, false
	}
	for _, h := range s.HelmReleases {
		if h.Chart == chart {
			return h, true
		}
	}
	return mesh.HelmRelease{}, false
}

// values merges the release's current values, the given overrides and the caller's values for the
// release (by chart name, then release name).
func (u *upgrader) values(current map[string]any, chart, releaseName string, set map[string]any) map[string]any {
	out := map[string]any{}
	merge(out, current)
	merge(out, set)
	merge(out, u.opts.Values[chart])
	merge(out, u.opts.Values[releaseName])
	if len(out) == 0 {
		return nil
	}
	return plan.NormalizeValues(out)
}

// merge copies src into dst, recursing into maps.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			dm, ok := dst[k].(map[string]any)
			if !ok {
				dm = map[string]any{}
			}
			merge(dm, sm)
			dst[k] = dm
			continue
		}
		dst[k] = v // nil stays: Helm reads null as "drop the chart default"

	}
}

func helmRef(h mesh.HelmRelease) mesh.ObjectRef {
	return mesh.ObjectRef{Kind: "HelmRelease", Namespace: h.Namespace, Name: h.Name}
}

func releaseCheck(h mesh.HelmRelease, v mesh.Version) plan.Check {
	return plan.Check{Type: plan.CheckHelmReleaseVersion, Object: helmRef(h), Params: map[string]string{"version": v.String()},
		Description: fmt.Sprintf("Helm release %s/%s is deployed at chart %s", h.Namespace, h.Name, v)}
}

// upgradeRelease is a HelmUpgrade step of an existing release with a rollback to its current revision.
func (u *upgrader) upgradeRelease(id, desc, reason string, h mesh.HelmRelease, v mesh.Version, set map[string]any, r plan.Risk, checks ...plan.Check) plan.Step {
	values := u.values(h.Values, h.Chart, h.Name, set)
	next := h
	next.Revision, next.ChartVersion, next.AppVersion, next.Values = h.Revision+1, v.String(), v.String(), values
	u.track(next)
	return plan.Step{
		ID: id, Description: desc, Reason: reason, Risk: r,
		HelmUpgrade: &plan.HelmRelease{Release: h.Name, Namespace: h.Namespace, Chart: u.opts.Charts.ref(h.Chart, v),
			Values: values, PreviousRevision: h.Revision},
		Verification: append([]plan.Check{releaseCheck(h, v)}, checks...),
		Rollback: &plan.Step{ID: id + "/undo", Description: fmt.Sprintf("roll %s back to Helm revision %d (%s)", h.Name, h.Revision, h.ChartVersion), Risk: r,
			HelmRollback: &plan.HelmRollback{Release: h.Name, Namespace: h.Namespace, Revision: h.Revision}},
	}
}

// planHop adds the steps of one hop to the plan and returns the snapshot as it will be afterwards.
func (u *upgrader) planHop(s *mesh.Snapshot, target mesh.Version, prefix string, first bool) (*mesh.Snapshot, error) {
	u.hop = target
	u.index(s)
	if first {
		u.add(plan.Step{ID: "prechecks", Description: "re-run the compatibility checks against the live cluster",
			Reason: "the cluster may have changed since the plan was made; every finding must still be clear or waived", Risk: plan.RiskNone,
			Verify: &plan.Verification{Checks: []plan.Check{{Type: plan.CheckFindingsClear,
				Params:      map[string]string{"target": u.opts.Target.String(), "strategy": orDefault(string(u.opts.Strategy), string(StrategyRevision))},
				Description: "ComputeCompatibility reports nothing that stops the upgrade"}}}})
	} else {
		u.add(plan.Step{ID: prefix + "prechecks", Description: fmt.Sprintf("re-run the compatibility checks before the hop to %s", target),
			Reason: "the previous hop must have left the mesh as planned; findings predicted for this hop are checked for real now", Risk: plan.RiskNone,
			Verify: &plan.Verification{Checks: []plan.Check{{Type: plan.CheckFindingsClear,
				Params:      map[string]string{"target": target.String(), "strategy": orDefault(string(u.opts.Strategy), string(StrategyRevision))},
				Description: fmt.Sprintf("ComputeCompatibility for %s reports nothing that stops the hop", target)}}}})
	}
	u.settingFindings(s, target)
	if base, ok := u.release(s, "base", ""); ok {
		u.add(u.upgradeRelease(prefix+"base/upgrade", fmt.Sprintf("upgrade the Istio CRDs (release %s) to %s", base.Name, target),
			"CRDs go first: a newer control plane may need new fields and versions", base, target, nil, plan.RiskLow,
			plan.Check{Type: plan.CheckCRDsEstablished, Params: map[string]string{"group": "istio.io"}, Description: "every Istio CRD is Established"}))
		u.p.Steps[len(u.p.Steps)-1].Notes = []string{"Istio CRDs carry helm.sh/resource-policy: keep; rolling base back leaves the newer CRDs in place, which older istiod accepts"}
	} else {
		u.noRelease(mesh.ObjectRef{Kind: "HelmRelease", Namespace: "istio-system", Name: "istio-base"}, "the Istio CRDs (chart base)")
	}
	var newRev string
	var err error
	if u.inPlace() {
		u.istiodInPlace(s, target, prefix)
	} else if newRev, err = u.istiodRevision(s, target, prefix); err != nil {
		return nil, err
	}
	u.cni(s, target, prefix)
	if err := u.ztunnels(s, target, prefix, newRev); err != nil {
		return nil, err
	}
	after := simulate(s, target, newRev, !u.opts.SkipRestart)
	if !u.inPlace() {
		if err := u.moveTags(s, newRev, prefix); err != nil {
			return nil, err
		}
		u.namespacesPinned(s, newRev)
	}
	u.gateways(s, target, prefix, newRev)
	if !u.inPlace() {
		u.waypointOwners(after, prefix)
		u.defaultRevision(s, prefix, newRev)
		u.removeOld(s, after, prefix, newRev)
	}
	return finishSimulation(after, newRev), nil
}

func (u *upgrader) noRelease(ref mesh.ObjectRef, what string) {
	u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodeHelmReleaseMissing, Severity: plan.Waivable, Object: ref,
		Message: fmt.Sprintf("no Helm release was found for %s; the plan leaves it untouched", what),
		Remedy:  "upgrade it the way it was installed (istioctl, GitOps), or adopt it into Helm first"})
}

func (u *upgrader) istiodInPlace(s *mesh.Snapshot, target mesh.Version, prefix string) {
	for _, r := range s.Revisions {
		h, ok := u.release(s, "istiod", r.HelmRelease)
		if !ok {
			u.noRelease(mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}, "istiod revision "+r.Name)
			continue
		}
		st := u.upgradeRelease(prefix+"istiod/"+r.Name+"/upgrade", fmt.Sprintf("upgrade istiod revision %s in place from %s to %s", r.Name, r.Version, target),
			"in place keeps the revision name, so tags, namespaces and gateways need no move; sidecars keep their proxy until restarted",
			h, target, nil, plan.RiskHigh, deploymentReady(r.Namespace, r.Deployment))
		st.Notes = append(st.Notes, "sidecar workloads keep their current proxy until they restart; one minor behind the control plane is supported")
		u.add(st)
	}
}

func deploymentReady(ns, name string) plan.Check {
	return plan.Check{Type: plan.CheckDeploymentReady, Object: mesh.ObjectRef{Kind: "Deployment", Namespace: ns, Name: name},
		Description: fmt.Sprintf("Deployment %s/%s has every replica updated and ready", ns, name)}
}

// istiodRevision installs the target as a new revision beside the old ones.
func (u *upgrader) istiodRevision(s *mesh.Snapshot, target mesh.Version, prefix string) (string, error) {
	rev := target.RevisionName()
	if u.opts.RevisionName != "" && prefix == "" {
		rev = u.opts.RevisionName
	}
	if _, used := s.Revision(rev); used {
		return "", fmt.Errorf("%w: revision name %q is already used by a running istiod; revision names are never reused. Pass another RevisionName, or finish that canary with tags.MoveTag", ErrInvalidOptions, rev)
	}
	if _, used := s.Tag(rev); used {
		return "", fmt.Errorf("%w: revision name %q is already a tag name; pass another RevisionName", ErrInvalidOptions, rev)
	}
	primary := primaryRevision(s)
	ns := "istio-system"
	var current map[string]any
	if primary != nil {
		ns = primary.Namespace
		if h, ok := u.release(s, "istiod", primary.HelmRelease); ok {
			current = h.Values
		}
	}
	base := map[string]any{}
	merge(base, current)
	delete(base, "revisionTags")
	if base["profile"] == nil {
		base["profile"] = "ambient"
	}
	releaseName := "istiod-" + rev
	values := u.values(base, "istiod", releaseName, map[string]any{"revision": rev})
	u.track(mesh.HelmRelease{Name: releaseName, Namespace: ns, Chart: "istiod", ChartVersion: target.String(), AppVersion: target.String(),
		Revision: 1, Status: "deployed", Values: values})
	var checks []plan.Check
	checks = append(checks, deploymentReady(ns, "istiod-"+rev),
		plan.Check{Type: plan.CheckRevisionExistsAndReady, Params: map[string]string{"revision": rev}, Description: fmt.Sprintf("revision %s serves injection and xDS", rev)})
	for _, g := range s.Gateways {
		checks = append(checks, plan.Check{Type: plan.CheckGatewayOwner, Object: g.Ref(), Params: map[string]string{"revision": g.Revision},
			Description: fmt.Sprintf("%s is still owned by revision %s (installing a revision must not take gateways over)", g.Ref(), g.Revision)})
	}
	st := plan.Step{
		ID:           prefix + "istiod/" + rev + "/install",
		Description:  fmt.Sprintf("install istiod revision %s (%s) beside %s", rev, target, revisionList(s)),
		Reason:       "a revision upgrade runs both control planes side by side; nothing moves to the new one until a tag does",
		Risk:         plan.RiskLow,
		HelmInstall:  &plan.HelmRelease{Release: releaseName, Namespace: ns, Chart: u.opts.Charts.ref("istiod", target), Values: values},
		Verification: checks,
		Rollback: &plan.Step{ID: prefix + "istiod/" + rev + "/install/undo", Description: fmt.Sprintf("uninstall the new revision %s (nothing refers to it yet)", rev), Risk: plan.RiskLow,
			HelmUninstall: &plan.HelmUninstall{Release: releaseName, Namespace: ns}},
	}
	if trust := trustValues(s); trust != "" {
		st.Notes = append(st.Notes, "the new revision trusts the same ztunnel accounts as the old one: "+trust)
	}
	u.add(st)
	return rev, nil
}

func revisionList(s *mesh.Snapshot) string {
	var out []string
	for _, r := range s.Revisions {
		out = append(out, fmt.Sprintf("%s (%s)", r.Name, r.Version))
	}
	if len(out) == 0 {
		return "no other revision"
	}
	return strings.Join(out, ", ")
}

func trustValues(s *mesh.Snapshot) string {
	if p := primaryRevision(s); p != nil {
		return strings.Join(p.TrustedZtunnelAccounts, ",")
	}
	return ""
}

// primaryRevision is the revision the default tag, or else the default revision, points at, or else
// the newest.
func primaryRevision(s *mesh.Snapshot) *mesh.Revision {
	for _, name := range []string{s.ResolveRevision("default"), s.DefaultRevision} {
		for i := range s.Revisions {
			if name != "" && s.Revisions[i].Name == name {
				return &s.Revisions[i]
			}
		}
	}
	if len(s.Revisions) == 0 {
		return nil
	}
	best := &s.Revisions[0]
	for i := range s.Revisions {
		if best.Version.Less(s.Revisions[i].Version) {
			best = &s.Revisions[i]
		}
	}
	return best
}
