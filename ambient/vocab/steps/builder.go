package steps

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Options configure a Builder.
type Options struct {
	// Charts says where charts come from; the zero value is DefaultChartRepository.
	Charts ChartSource
	// Values are the caller's Helm values by chart name or release name (the release wins), merged
	// over the values each release has today. They must be JSON data (see plan.NormalizeValues).
	Values map[string]map[string]any
	// Probe names the caller's health probe used by health gates; empty means DefaultProbe.
	Probe string
}

// DefaultProbe is the health probe health gates name when Options.Probe is empty.
const DefaultProbe = "mesh-health"

// Builder appends steps to one plan. Component planners take it, add their steps and findings, and
// leave the Helm releases they change tracked for the planners that come after them.
type Builder struct {
	p    *plan.Plan
	opts Options
	// last is the ID of the step the next one depends on.
	last string
	// helm is each Helm release as it will be after the steps planned so far, by namespace/name.
	helm map[string]mesh.HelmRelease
	// judged are the releases RequireDeployed has judged, by namespace/name.
	judged map[string]bool
	err    error
}

// New returns a builder adding to p.
func New(p *plan.Plan, opts Options) *Builder {
	return &Builder{p: p, opts: opts, helm: map[string]mesh.HelmRelease{}}
}

// Plan returns the plan being built.
func (b *Builder) Plan() *plan.Plan { return b.p }

// Probe returns the name of the health probe health gates ask.
func (b *Builder) Probe() string {
	if b.opts.Probe == "" {
		return DefaultProbe
	}
	return b.opts.Probe
}

// Charts returns the chart source.
func (b *Builder) Charts() ChartSource { return b.opts.Charts }

// Chart returns the reference of a chart at a version in the builder's chart source.
func (b *Builder) Chart(chart string, v mesh.Version) plan.ChartRef {
	return b.opts.Charts.Ref(chart, v)
}

// Add appends a step that depends on the previous one (unless deps are given) and makes it the last.
func (b *Builder) Add(st plan.Step, deps ...string) {
	if len(deps) == 0 && b.last != "" {
		deps = []string{b.last}
	}
	st.DependsOn = append(st.DependsOn, deps...)
	b.p.Steps = append(b.p.Steps, st)
	b.last = st.ID
}

// Append appends a step exactly as it is (its DependsOn already set) and makes it the last.
func (b *Builder) Append(st plan.Step) {
	b.p.Steps = append(b.p.Steps, st)
	b.last = st.ID
}

// Last returns the ID of the last step added ("" when none).
func (b *Builder) Last() string { return b.last }

// Finding adds a finding to the plan.
func (b *Builder) Finding(f plan.Finding) { b.p.Findings = append(b.p.Findings, f) }

// Fail records an error that makes the plan unusable (the first one is kept); Err returns it.
func (b *Builder) Fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Err returns the first error recorded with Fail.
func (b *Builder) Err() error { return b.err }

// ---- Helm releases ----

func key(h mesh.HelmRelease) string { return h.Namespace + "/" + h.Name }

// Release finds a Helm release as it will be after the steps planned so far: by name when one is
// given, else the first release of the chart in the snapshot, else the first tracked one of the
// chart (a release an earlier step installs). ok is false when there is none or it is uninstalled.
func (b *Builder) Release(s *mesh.Snapshot, chart, name string) (mesh.HelmRelease, bool) {
	if name != "" {
		for _, t := range b.tracked() {
			if t.Name == name {
				return t, t.Status != StatusUninstalled
			}
		}
		return FindRelease(s, chart, name)
	}
	if h, ok := FindRelease(s, chart, ""); ok {
		if t, tracked := b.helm[key(h)]; tracked {
			return t, t.Status != StatusUninstalled
		}
		return h, true
	}
	for _, t := range b.tracked() {
		if t.Chart == chart && t.Status != StatusUninstalled {
			return t, true
		}
	}
	return mesh.HelmRelease{}, false
}

// Releases returns every release of a chart as it will be after the steps planned so far: the
// snapshot's, each replaced by its tracked state, then the tracked ones the snapshot does not hold,
// leaving out the uninstalled, sorted by namespace and name.
func (b *Builder) Releases(s *mesh.Snapshot, chart string) []mesh.HelmRelease {
	byKey := map[string]mesh.HelmRelease{}
	for _, h := range s.HelmReleases {
		if h.Chart == chart {
			byKey[key(h)] = h
		}
	}
	for k, t := range b.helm {
		if t.Chart == chart {
			byKey[k] = t
		}
	}
	keys := make([]string, 0, len(byKey))
	for k, h := range byKey {
		if h.Status != StatusUninstalled {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]mesh.HelmRelease, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

func (b *Builder) tracked() []mesh.HelmRelease {
	keys := make([]string, 0, len(b.helm))
	for k := range b.helm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]mesh.HelmRelease, 0, len(keys))
	for _, k := range keys {
		out = append(out, b.helm[k])
	}
	return out
}

// StatusUninstalled marks a tracked release a planned step removes.
const StatusUninstalled = "uninstalled"

// Track records the release as a planned step leaves it.
func (b *Builder) Track(h mesh.HelmRelease) { b.helm[key(h)] = h }

// FindRelease finds the Helm release of a chart in the snapshot: the one named name when given,
// else the first release of the chart.
func FindRelease(s *mesh.Snapshot, chart, name string) (mesh.HelmRelease, bool) {
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

// Values merges the release's current values, the planner's settings and the caller's values for
// the chart, then for the release name. It returns nil for no values at all.
func (b *Builder) Values(current map[string]any, chart, release string, set map[string]any) map[string]any {
	out := map[string]any{}
	Merge(out, current)
	Merge(out, set)
	Merge(out, b.opts.Values[chart])
	Merge(out, b.opts.Values[release])
	if len(out) == 0 {
		return nil
	}
	n, err := plan.NormalizeValues(out)
	if err != nil {
		b.Fail(fmt.Errorf("values of Helm release %s (chart %s): %w", release, chart, err))
		return out
	}
	return n
}

// ChartValues merges values as Values does, for a release installed or upgraded to chart version v,
// and moves every value that fixes an image of another version (a tag, an image, a proxy image) to
// v (see imageValues); a value it cannot move is a blocking finding naming the release and the
// value. It returns the values and what it moved, for the step's HelmRelease.Moved and a note
// (MovedNote). Nothing is moved when v is zero.
func (b *Builder) ChartValues(current map[string]any, chart, release, namespace string, v mesh.Version, set map[string]any) (map[string]any, []plan.MovedValue) {
	values := b.Values(current, chart, release, set)
	return values, b.pinnedValues(values, chart, release, namespace, v)
}

// UpgradeValues returns the values an upgrade of h with the planner's settings set passes, merged as
// Upgrade merges them: the release's values (unknown, so left out, for an inferred release whose
// upgrade reuses them), set, then the caller's values for the chart and for the release. Planners
// use it to see what a caller's value overrides; it records no error.
func (b *Builder) UpgradeValues(h mesh.HelmRelease, set map[string]any) map[string]any {
	out := map[string]any{}
	if !h.Inferred {
		Merge(out, h.Values)
	}
	Merge(out, set)
	Merge(out, b.opts.Values[h.Chart])
	Merge(out, b.opts.Values[h.Name])
	return out
}

// Merge copies src into dst, recursing into maps. A nil value stays: Helm reads null as "drop the
// chart default".
func Merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			dm, ok := dst[k].(map[string]any)
			if !ok {
				dm = map[string]any{}
			}
			Merge(dm, sm)
			dst[k] = dm
			continue
		}
		dst[k] = v
	}
}

// HelmRef names a release as a finding or check object.
func HelmRef(h mesh.HelmRelease) mesh.ObjectRef {
	return mesh.ObjectRef{Kind: "HelmRelease", Namespace: h.Namespace, Name: h.Name}
}

// ReleaseCheck is the check that the release is deployed at chart version v.
func ReleaseCheck(h mesh.HelmRelease, v mesh.Version) plan.Check {
	return plan.NewCheck(HelmRef(h), plan.HelmReleaseVersionArgs{Version: v.String()},
		fmt.Sprintf("Helm release %s/%s is deployed at chart %s", h.Namespace, h.Name, v))
}

// DeploymentReady is the check that a Deployment has every replica updated and ready.
func DeploymentReady(ns, name string) plan.Check {
	return plan.NewCheck(mesh.ObjectRef{Kind: "Deployment", Namespace: ns, Name: name}, plan.DeploymentReadyArgs{},
		fmt.Sprintf("Deployment %s/%s has every replica updated and ready", ns, name))
}

// Upgrade returns a HelmUpgrade step of an existing release to chart version v with the given value
// settings merged in, verified by checks, and with a rollback to the release's current revision. It
// tracks the release as the step leaves it. When the release's values are not known (a release read
// from its objects' annotations, not its record), the step reuses the values the release has when it
// runs (helm --reuse-values) and has no rollback, since the revision to return to is unknown.
func (b *Builder) Upgrade(id, desc, reason string, h mesh.HelmRelease, v mesh.Version, set map[string]any, r plan.Risk, checks ...plan.Check) plan.Step {
	b.RequireDeployed(h)
	var values map[string]any
	var moved []plan.MovedValue
	reuse := h.Inferred
	if reuse {
		values, moved = b.ChartValues(nil, h.Chart, h.Name, h.Namespace, v, set)
	} else {
		values, moved = b.ChartValues(h.Values, h.Chart, h.Name, h.Namespace, v, set)
	}
	next := h
	next.ChartVersion, next.AppVersion = v.String(), v.String()
	if !reuse {
		next.Revision, next.Values = h.Revision+1, values
	}
	b.Track(next)
	st := plan.Step{
		ID: id, Description: desc, Reason: reason, Risk: r,
		HelmUpgrade: &plan.HelmRelease{Release: h.Name, Namespace: h.Namespace, Chart: b.Chart(h.Chart, v),
			Values: values, ReuseValues: reuse, PreviousRevision: h.Revision, FromVersion: h.ChartVersion, Moved: moved},
		Postconditions: append([]plan.Check{ReleaseCheck(h, v)}, checks...),
	}
	if note := MovedNote(moved, v); note != "" {
		st.Notes = append(st.Notes, note)
	}
	if reuse && len(imageValues[h.Chart]) > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("--reuse-values keeps whatever image values the release has (tag, global.tag, image, ...); if they name another version than %s, the new chart runs those images: check with helm get values %s -n %s", v, h.Name, h.Namespace))
	}
	if h.Revision > 0 {
		st.Rollback = &plan.Step{ID: id + "/undo", Description: fmt.Sprintf("roll %s back to Helm revision %d (%s)", h.Name, h.Revision, h.ChartVersion), Risk: r,
			HelmRollback: &plan.HelmRollback{Release: h.Name, Namespace: h.Namespace, Revision: h.Revision}}
	} else {
		st.Notes = append(st.Notes, fmt.Sprintf("the Helm revision of %s/%s was not observed, so the step has no automatic rollback: roll back with helm history and helm rollback", h.Namespace, h.Name))
	}
	return st
}

// notDeployed are the statuses of a release's latest record that Helm refuses to act on or that
// leave the release half-applied (helm.sh/helm/v3@v3.22.0 pkg/release/status.go; pkg/action/upgrade.go
// refuses a release whose latest record is pending: "another operation (install/upgrade/rollback) is
// in progress").
var notDeployed = map[string]string{
	"pending-install":  "an install that never finished (its process ended before Helm recorded the outcome)",
	"pending-upgrade":  "an upgrade that never finished (its process ended before Helm recorded the outcome)",
	"pending-rollback": "a rollback that never finished (its process ended before Helm recorded the outcome)",
	"failed":           "its last change failed: some of its objects may be changed and others not",
	"uninstalling":     "an uninstall that never finished",
}

// RequireDeployed adds, once per release, the blocking finding that a release the plan changes is
// not in a state Helm can change safely (pending, failed, uninstalling), with the commands that
// show and repair it. Releases read from their objects (Status unknown) are not judged.
func (b *Builder) RequireDeployed(h mesh.HelmRelease) {
	why, bad := notDeployed[h.Status]
	if !bad || b.judged[key(h)] {
		return
	}
	if b.judged == nil {
		b.judged = map[string]bool{}
	}
	b.judged[key(h)] = true
	b.Finding(plan.Finding{Code: plan.CodeHelmReleaseNotDeployed, Severity: plan.Blocking, Object: HelmRef(h),
		Details: map[string]string{"status": h.Status, "revision": strconv.Itoa(h.Revision)},
		Message: fmt.Sprintf("Helm release %s/%s is %s at revision %d: %s", h.Namespace, h.Name, h.Status, h.Revision, why),
		Remedy: fmt.Sprintf("see what happened with helm history %s -n %s; return it to its last deployed revision with helm rollback %s <revision> -n %s (or finish the change by hand), check that helm status %s -n %s says deployed, then plan again",
			h.Name, h.Namespace, h.Name, h.Namespace, h.Name, h.Namespace)})
}

// NoRelease adds the finding that a component was not installed with Helm and is left untouched.
func (b *Builder) NoRelease(ref mesh.ObjectRef, what string) {
	b.Finding(plan.Finding{Code: plan.CodeHelmReleaseMissing, Severity: plan.Waivable, Object: ref,
		Message: fmt.Sprintf("no Helm release was found for %s; the plan leaves it untouched", what),
		Remedy:  "upgrade it the way it was installed (istioctl, GitOps), or adopt it into Helm first"})
}

// ErrInvalidOptions is plan.ErrInvalidOptions, for errors about options the caller can fix.
var ErrInvalidOptions = plan.ErrInvalidOptions
