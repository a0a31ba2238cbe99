package compat

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// Strategy is how the control plane moves to a new version.
type Strategy string

// Control-plane strategies.
const (
	// StrategyRevision installs the target as a new istiod revision beside the old one (canary); up to
	// two minors. It is the default.
	StrategyRevision Strategy = "revision"
	// StrategyInPlace upgrades the existing istiod release; one minor at a time.
	StrategyInPlace Strategy = "in-place"
)

// ErrInvalidOptions is wrapped by errors about options (unknown waiver codes, conflicting settings).
var ErrInvalidOptions = plan.ErrInvalidOptions

// Options configure Compute (ambient.CompatibilityOptions). The zero value checks the current state only.
type Options struct {
	// Target is the version to check an upgrade to; zero checks the mesh as it runs.
	Target mesh.Version
	// Strategy for the control plane; empty means StrategyRevision.
	Strategy Strategy
	// Releases is the release data; nil means releases.Default().
	Releases *releases.Data
	// Advisories is the upgrade advisory data; nil means advisories.Default().
	Advisories *advisories.Data
	// Operations are what the plan being made does, for the advisories that bite during them (those
	// that bite at any time always count). Nil means Operations(Target, Strategy).
	Operations []advisories.When
	// Today is the date end-of-life is judged at. Planners read no clock: the zero value skips the
	// end-of-life rules (an info finding says so).
	Today time.Time
	// Waive lists waivable finding codes the caller accepts. Unknown codes are an error; waiving a
	// blocking finding has no effect.
	Waive []plan.Code
	// AddsZtunnels are the ztunnels the plan being made installs beside the running ones (a
	// blue-green's green): istiod must come to trust them, in a way the plan can change.
	AddsZtunnels []AddedZtunnel
}

// Report is the verdict of the gate (ambient.Compatibility): findings, and verdicts per component
// and per node.
type Report struct {
	// From is the oldest running control-plane version; To the target (zero when none was given).
	From mesh.Version `json:"from,omitzero"`
	To   mesh.Version `json:"to,omitzero"`
	// Components has one verdict per component, sorted.
	Components []ComponentVerdict `json:"components"`
	// Nodes has one verdict per node, sorted by name.
	Nodes []NodeVerdict `json:"nodes"`
	// Findings are all findings, sorted by severity and code; waived ones are marked.
	Findings []plan.Finding `json:"findings"`
}

// OK reports whether no finding stops the upgrade.
func (c *Report) OK() bool { return len(plan.Stopping(c.Findings)) == 0 }

// Verdict statuses.
const (
	StatusOK      = "ok"
	StatusWarning = "warning"
	StatusBlocked = "blocked"
)

// ComponentVerdict is the verdict for one component.
type ComponentVerdict struct {
	// Component is "istiod/1-30-3", "cni", "ztunnel/istio-system/ztunnel", "gateway/ns/name",
	// "waypoint/ns/name", "sidecars/ns".
	Component string       `json:"component"`
	Current   mesh.Version `json:"current,omitzero"`
	Status    string       `json:"status"`
	Codes     []plan.Code  `json:"codes,omitempty"`
}

// NodeVerdict is the verdict for one node.
type NodeVerdict struct {
	Node string `json:"node"`
	Pool string `json:"pool,omitempty"`
	// AmbientWorkloads counts workloads with ambient pods on the node.
	AmbientWorkloads int          `json:"ambientWorkloads,omitempty"`
	CNI              mesh.Version `json:"cni,omitzero"`
	// Ztunnel is the version of the ready ztunnel pod on the node, zero when none is ready.
	Ztunnel mesh.Version `json:"ztunnel,omitzero"`
	Status  string       `json:"status"`
	Codes   []plan.Code  `json:"codes,omitempty"`
}

// Compute checks every component of the mesh, and each node, against the rules of
// Istio's version skew and ambient support, for the current state or for an upgrade to opts.Target.
// It returns an error only for bad input: a nil snapshot, a target the release data does not know,
// an unknown strategy or waiver code. Problems of the mesh itself are findings.
func Compute(s *mesh.Snapshot, opts Options) (*Report, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: snapshot is nil; observe a cluster first (observe.Live, observe.Dir)", ErrInvalidOptions)
	}
	s, err := mesh.Normalized(s) // canonical order, which lookups rely on, without changing the caller's snapshot
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	data, waive, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	if !opts.Target.IsZero() {
		if err := data.Check(opts.Target); err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
	}
	inPlace := opts.Strategy == StrategyInPlace
	var fs []plan.Finding
	fs = append(fs, revisionRules(s, revisionOptions{Target: opts.Target, InPlace: inPlace})...)
	adv := opts.Advisories
	if adv == nil {
		adv = advisories.Default()
	}
	fs = append(fs, cniRules(s, cniOptions{Target: opts.Target, Advisories: adv})...)
	fs = append(fs, ztunnelRules(s, ztunnelOptions{Target: opts.Target})...)
	fs = append(fs, checkAddedTrust(s, opts.AddsZtunnels)...)
	fs = append(fs, referenceRules(s)...)
	ops := opts.Operations
	if ops == nil {
		ops = Operations(opts.Target, opts.Strategy)
	}
	fs = append(fs, advisoryRules(s, adv, data, opts.Target, ops)...)
	fs = append(fs, checkGRPCLimit(s, adv, opts.Target)...)
	fs = append(fs, checkKubernetes(s, data, opts.Target)...)
	fs = append(fs, checkEndOfLife(s, data, opts)...)
	fs = append(fs, checkGatewayAPI(s, data, opts.Target)...)
	fs = append(fs, checkCRDOwnership(s)...)
	fs = append(fs, checkKnownVersions(s, data)...)
	fs = append(fs, checkHelmRecords(s)...)
	fs = append(fs, environmentRules(s, opts.Target)...)
	fs = append(fs, skewRules(s, opts.Target, inPlace, adv)...)
	for i := range fs {
		if fs[i].Severity == plan.Waivable && waive[fs[i].Code] {
			fs[i].Waived = true
		}
	}
	plan.SortFindings(fs)
	c := &Report{To: opts.Target, Findings: fs}
	if vs := s.ControlPlaneVersions(); len(vs) > 0 {
		c.From = vs[0]
	}
	c.Components = componentVerdicts(s, fs)
	c.Nodes = nodeVerdicts(s, fs)
	return c, nil
}

func resolveOptions(opts Options) (*releases.Data, map[plan.Code]bool, error) {
	switch opts.Strategy {
	case "", StrategyRevision, StrategyInPlace:
	default:
		return nil, nil, fmt.Errorf("%w: strategy %q is not %q or %q", ErrInvalidOptions, opts.Strategy, StrategyRevision, StrategyInPlace)
	}
	waive := map[plan.Code]bool{}
	for _, c := range opts.Waive {
		if !plan.KnownCode(c) {
			return nil, nil, fmt.Errorf("%w: cannot waive unknown finding code %q; see plan.AllCodes()", ErrInvalidOptions, c)
		}
		waive[c] = true
	}
	data := opts.Releases
	if data == nil {
		data = releases.Default()
	}
	return data, waive, nil
}

// referenceVersion is the version the Kubernetes and end-of-life rules judge: the target, or else the
// oldest running control plane.
func referenceVersion(s *mesh.Snapshot, target mesh.Version) (mesh.Version, bool) {
	if !target.IsZero() {
		return target, true
	}
	if vs := s.ControlPlaneVersions(); len(vs) > 0 {
		return vs[0], true
	}
	return mesh.Version{}, false
}

func checkKubernetes(s *mesh.Snapshot, data *releases.Data, target mesh.Version) []plan.Finding {
	k := s.Cluster.KubernetesVersion
	cluster := mesh.ObjectRef{Kind: "Cluster", Name: "kubernetes"}
	if k.IsZero() {
		return []plan.Finding{{Code: plan.CodeKubernetesVersionUnknown, Severity: plan.Waivable, Object: cluster,
			Message: "the Kubernetes version is unknown (no server version and no node kubelet versions in the snapshot)",
			Remedy:  "observe a live cluster, or include the nodes in the YAML dump (kubectl get nodes -o yaml)"}}
	}
	var out []plan.Finding
	for _, v := range s.ControlPlaneVersions() {
		if v.MinorIndex() == target.MinorIndex() {
			continue
		}
		if sup := data.Kubernetes(v, k); sup == releases.TooOld || sup == releases.TooNew {
			m, _ := data.Minor(v)
			out = append(out, plan.Finding{Code: plan.CodeKubernetesUnsupportedByCurrent, Severity: plan.Info, Object: cluster,
				Message: fmt.Sprintf("Istio %s supports Kubernetes %s; the cluster runs %s", v.MinorString(), m.KubernetesRange(), k.MinorString())})
			out = append(out, Estimates(m, string(plan.CodeKubernetesUnsupportedByCurrent), kubernetesFields(sup)...)...)
		}
	}
	if target.IsZero() {
		return out
	}
	m, ok := data.Minor(target)
	if !ok {
		return out
	}
	if min := m.MinimumKubernetes(); !min.IsZero() && k.MinorIndex() < min.MinorIndex() {
		out = append(out, plan.Finding{Code: plan.CodeKubernetesBelowTargetMinimum, Severity: plan.Blocking, Object: cluster,
			Message: fmt.Sprintf("Istio %s needs Kubernetes %s or newer; the cluster runs %s", target.MinorString(), min.MinorString(), k.MinorString()),
			Remedy:  fmt.Sprintf("upgrade Kubernetes to at least %s first", m.Kubernetes[0])})
		return append(out, Estimates(m, string(plan.CodeKubernetesBelowTargetMinimum), releases.FieldMinKubernetes)...)
	}
	switch sup := data.Kubernetes(target, k); sup {
	case releases.TestedOnly:
		out = append(out, plan.Finding{Code: plan.CodeKubernetesOnlyTestedByTarget, Severity: plan.Waivable, Object: cluster,
			Message: fmt.Sprintf("Istio %s is tested but not supported on Kubernetes %s (supported: %s)", target.MinorString(), k.MinorString(), m.KubernetesRange()),
			Remedy:  fmt.Sprintf("upgrade Kubernetes into %s, or waive", m.KubernetesRange())})
		out = append(out, Estimates(m, string(plan.CodeKubernetesOnlyTestedByTarget), kubernetesFields(sup)...)...)
	case releases.TooOld, releases.TooNew:
		out = append(out, plan.Finding{Code: plan.CodeKubernetesUnsupportedByTarget, Severity: plan.Waivable, Object: cluster,
			Message: fmt.Sprintf("Istio %s supports Kubernetes %s; the cluster runs %s", target.MinorString(), m.KubernetesRange(), k.MinorString()),
			Remedy:  fmt.Sprintf("pick an Istio version that supports Kubernetes %s, or waive", k.MinorString())})
		out = append(out, Estimates(m, string(plan.CodeKubernetesUnsupportedByTarget), kubernetesFields(sup)...)...)
	}
	return out
}

// kubernetesFields are the fields of release data a Kubernetes support level was decided by: the
// supported range, and the tested range unless the cluster is newer than both.
func kubernetesFields(sup releases.Support) []releases.Field {
	if sup == releases.TooNew {
		return []releases.Field{releases.FieldKubernetes}
	}
	return []releases.Field{releases.FieldKubernetes, releases.FieldKubernetesTested}
}

// Estimates returns, for each of the fields of minor m that is an estimate, the info finding that
// the estimate decided something: a finding (decided is its code) or the patch of an upgrade hop
// ("hop <version>"). It names the minor, the field and where the value came from
// (releases.Minor.IsEstimated, Source).
func Estimates(m *releases.Minor, decided string, fields ...releases.Field) []plan.Finding {
	var out []plan.Finding
	for _, f := range fields {
		if m == nil || !m.IsEstimated(f) {
			continue
		}
		what := decided
		if strings.HasPrefix(what, "hop ") {
			what = "the patch of the upgrade " + what
		}
		source := m.Source(f)
		if source == "" {
			source = "not stated"
		}
		out = append(out, plan.Finding{Code: plan.CodeReleaseDataEstimated, Severity: plan.Info,
			Object:        mesh.ObjectRef{Kind: "ReleaseData", Name: m.Minor + "/" + string(f)},
			Message:       fmt.Sprintf("the release data's %q for Istio %s is an estimate, and it decided %s (source: %s)", f, m.Minor, what, source),
			Remedy:        "check the value upstream, and pass release data that states it (releases.LoadFile)",
			RemedyOptions: []plan.RemedyOption{{Option: "releases.LoadFile"}},
			Details:       map[string]string{"minor": m.Minor, "field": string(f), "source": source, "decided": decided}})
	}
	return out
}

func checkEndOfLife(s *mesh.Snapshot, data *releases.Data, opts Options) []plan.Finding {
	cluster := mesh.ObjectRef{Kind: "Cluster", Name: "kubernetes"}
	if opts.Today.IsZero() {
		return []plan.Finding{{Code: plan.CodeEndOfLifeNotChecked, Severity: plan.Info, Object: cluster,
			Message: "end of life was not checked: no date was given",
			Remedy:  "pass the date to judge it at as Today (planners read no clock)", RemedyOptions: []plan.RemedyOption{{Option: "Today"}}}}
	}
	var out []plan.Finding
	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	unknown := func(v mesh.Version, what string) {
		if _, known := data.Minor(v); !known {
			return // VERSION_NEWER_THAN_RELEASE_DATA says so (a target not in the data is refused before this)
		}
		out = append(out, plan.Finding{Code: plan.CodeEndOfLifeUnknown, Severity: plan.Info, Object: cluster,
			Message: fmt.Sprintf("the end of life of %s Istio %s is unknown: the release data states no date, and none follows from the support policy yet (%s.0 is not released); it is not known to be supported until then",
				what, v.MinorString(), mesh.Version{Major: v.Major, Minor: v.Minor + 2}.MinorString()),
			Remedy:  "check the Istio release's support status upstream (istio.io, supported releases)",
			Details: map[string]string{"minor": v.MinorString(), "of": what}})
	}
	for _, v := range s.ControlPlaneVersions() {
		if _, _, ok := data.EndOfLife(v); !ok {
			unknown(v, "running")
			continue
		}
		if eol, est, ok := data.EndOfLife(v); ok && !opts.Today.Before(eol) {
			out = append(out, plan.Finding{Code: plan.CodeSourceEndOfLife, Severity: plan.Info, Object: cluster,
				Message: fmt.Sprintf("Istio %s reached end of life on %s%s; it gets no more security fixes", v.MinorString(), day(eol), estimated(est)),
				Remedy:  "upgrade"})
			out = append(out, endOfLifeEstimates(data, v, string(plan.CodeSourceEndOfLife))...)
		}
	}
	if !opts.Target.IsZero() {
		if _, _, ok := data.EndOfLife(opts.Target); !ok {
			unknown(opts.Target, "target")
		}
		if eol, est, ok := data.EndOfLife(opts.Target); ok && !opts.Today.Before(eol.AddDate(0, 0, -30)) {
			sev := plan.Waivable
			msg := fmt.Sprintf("target Istio %s reaches end of life on %s%s", opts.Target.MinorString(), day(eol), estimated(est))
			if !opts.Today.Before(eol) {
				msg = fmt.Sprintf("target Istio %s reached end of life on %s%s", opts.Target.MinorString(), day(eol), estimated(est))
			}
			next, _ := data.Next(opts.Target)
			out = append(out, plan.Finding{Code: plan.CodeTargetEndOfLife, Severity: sev, Object: cluster, Message: msg,
				Remedy: fmt.Sprintf("target a newer minor (%s) unless this is a hop of a chained upgrade", next)})
			out = append(out, endOfLifeEstimates(data, opts.Target, string(plan.CodeTargetEndOfLife))...)
		}
	}
	return out
}

// endOfLifeEstimates: an end of life is the minor's own date, or six weeks after minor+2's release
// (Data.EndOfLife); the estimate behind it is whichever of the two it came from.
func endOfLifeEstimates(data *releases.Data, v mesh.Version, decided string) []plan.Finding {
	m, ok := data.Minor(v)
	if !ok {
		return nil
	}
	if m.Known(releases.FieldEndOfLife) {
		return Estimates(m, decided, releases.FieldEndOfLife)
	}
	n2, ok := data.Minor(mesh.Version{Major: v.Major, Minor: v.Minor + 2})
	if !ok {
		return nil
	}
	return Estimates(n2, decided, releases.FieldReleased)
}

func estimated(e bool) string {
	if e {
		return " (estimated)"
	}
	return ""
}

func checkGatewayAPI(s *mesh.Snapshot, data *releases.Data, target mesh.Version) []plan.Finding {
	v, ok := referenceVersion(s, target)
	if !ok {
		return nil
	}
	waypoints := 0
	for _, g := range s.Gateways {
		if g.Waypoint {
			waypoints++
		}
	}
	ref := mesh.ObjectRef{Kind: "CustomResourceDefinition", Name: "gateways.gateway.networking.k8s.io"}
	if !s.GatewayAPI.Installed {
		if waypoints == 0 && !s.AmbientInUse() {
			return nil
		}
		return []plan.Finding{{Code: plan.CodeGatewayAPICRDsMissing, Severity: plan.Waivable, Object: ref,
			Message: "the Gateway API CRDs are not installed; ambient waypoints need them",
			Remedy:  "kubectl apply --server-side -f <gateway-api standard-install.yaml of the version the target needs>"}}
	}
	m, found := data.Minor(v)
	if !found || m.GatewayAPI == "" || s.GatewayAPI.BundleVersion == "" {
		return nil
	}
	have, err1 := mesh.ParseKubernetesVersion(s.GatewayAPI.BundleVersion)
	need, err2 := mesh.ParseKubernetesVersion(m.GatewayAPI)
	if err1 != nil || err2 != nil || !have.Less(need) {
		return nil
	}
	sev := plan.Waivable
	if waypoints > 0 && have.MinorIndex() < need.MinorIndex() {
		sev = plan.Blocking
	}
	return append([]plan.Finding{{Code: plan.CodeGatewayAPICRDsTooOld, Severity: sev, Object: ref,
		Message: fmt.Sprintf("Gateway API CRDs are at %s; Istio %s is built against %s (%d waypoint(s) depend on them)", s.GatewayAPI.BundleVersion, v.MinorString(), m.GatewayAPI, waypoints),
		Remedy:  fmt.Sprintf("upgrade the Gateway API CRDs to %s (%s channel) before the control plane", m.GatewayAPI, channel(s.GatewayAPI.Channel))}},
		Estimates(m, string(plan.CodeGatewayAPICRDsTooOld), releases.FieldGatewayAPI)...)
}

func channel(c string) string {
	if c == "" {
		return "standard"
	}
	return c
}

func checkCRDOwnership(s *mesh.Snapshot) []plan.Finding {
	var base *mesh.HelmRelease
	for i, h := range s.HelmReleases {
		if h.Chart == "base" {
			base = &s.HelmReleases[i]
		}
	}
	if base == nil {
		return nil
	}
	var unowned []string
	for _, c := range s.CRDs {
		if !strings.HasSuffix(c.Group, "istio.io") || c.Inferred { // an inferred CRD's metadata is unknown
			continue
		}
		if c.Labels["app.kubernetes.io/managed-by"] != "Helm" || c.Annotations["meta.helm.sh/release-name"] == "" {
			unowned = append(unowned, c.Name)
		}
	}
	if len(unowned) == 0 {
		return nil
	}
	sort.Strings(unowned)
	return []plan.Finding{{Code: plan.CodeCRDOwnershipNeedsAdoption, Severity: plan.Waivable,
		Object:  mesh.ObjectRef{Kind: "CustomResourceDefinition", Name: unowned[0]},
		Message: fmt.Sprintf("%d Istio CRD(s) lack Helm ownership metadata (e.g. %s); upgrading %s fails with \"invalid ownership metadata\"", len(unowned), unowned[0], base.Name),
		Remedy: fmt.Sprintf("kubectl label crd -l app.kubernetes.io/part-of=istio app.kubernetes.io/managed-by=Helm --overwrite; kubectl annotate crd -l app.kubernetes.io/part-of=istio meta.helm.sh/release-name=%s meta.helm.sh/release-namespace=%s --overwrite",
			base.Name, base.Namespace)}}
}

// checkHelmRecords reports, once per release namespace, the Helm releases observed only from their
// objects' annotations (mesh.HelmRelease.Inferred: a kubectl dump without Helm's release Secrets).
// It is waivable, not info: their values are unknown, so the plan upgrades them with
// --reuse-values and no automatic rollback, a new revision installed beside such an istiod cannot
// copy its values (it would start from the chart defaults, without the user's trust list or mesh
// config), and chart-default findings cannot tell what the user set. One command adds the records;
// waive only when the values are known to be defaults. The command is the one observe.DumpCommands
// writes for release namespaces (Secrets labelled owner=helm, the label Helm's storage driver sets:
// helm.sh/helm/v3@v3.22.0 pkg/storage/driver/secrets.go).
func checkHelmRecords(s *mesh.Snapshot) []plan.Finding {
	byNamespace := map[string][]mesh.HelmRelease{}
	var namespaces []string
	for _, h := range s.HelmReleases {
		if !h.Inferred {
			continue
		}
		if _, seen := byNamespace[h.Namespace]; !seen {
			namespaces = append(namespaces, h.Namespace)
		}
		byNamespace[h.Namespace] = append(byNamespace[h.Namespace], h)
	}
	sort.Strings(namespaces)
	var out []plan.Finding
	for _, ns := range namespaces {
		var names []string
		var related []mesh.ObjectRef
		for _, h := range byNamespace[ns] {
			names = append(names, h.Name)
			related = append(related, steps.HelmRef(h))
		}
		sort.Strings(names)
		sort.Slice(related, func(i, j int) bool { return related[i].Name < related[j].Name })
		command := fmt.Sprintf("kubectl get secrets -n %s -l owner=helm -o yaml", ns)
		out = append(out, plan.Finding{Code: plan.CodeHelmReleaseValuesUnknown, Severity: plan.Waivable,
			Object:  mesh.ObjectRef{Kind: "Namespace", Name: ns},
			Related: related,
			Message: fmt.Sprintf("Helm release(s) %s in namespace %s were read from their objects' annotations, without Helm's release records: their values and revision are unknown offline, so their upgrades reuse whatever values they have (an image tag they pin, --set tag=..., stays on the old version under the new chart) and cannot roll back automatically, and a revision installed beside them cannot copy their values",
				strings.Join(names, ", "), ns),
			Remedy:  fmt.Sprintf("add the release records to the dump and observe again: %s > helm-releases.%s.yaml; or waive if the releases use the chart defaults", command, ns),
			Details: map[string]string{"namespace": ns, "releases": strings.Join(names, ","), "command": command}})
	}
	return out
}

// unknownWhy is the reason of a releases.ErrUnknownVersion without its advice to the library's
// caller (which releases function to pass newer data with): the finding's remedy says that.
func unknownWhy(err error) string {
	why, _, _ := strings.Cut(err.Error(), "; pass ")
	return strings.TrimPrefix(why, releases.ErrUnknownVersion.Error()+": ")
}

func checkKnownVersions(s *mesh.Snapshot, data *releases.Data) []plan.Finding {
	var out []plan.Finding
	seen := map[mesh.Version]bool{}
	note := func(v mesh.Version, ref mesh.ObjectRef) {
		if v.IsZero() || seen[v] {
			return
		}
		seen[v] = true
		// CheckRunning, not Check: a running version need not be one a plan may target (a chart
		// repository index may no longer serve the patch a cluster runs).
		if err := data.CheckRunning(v); err != nil && v.Pre == "" {
			out = append(out, plan.Finding{Code: plan.CodeVersionNewerThanReleaseData, Severity: plan.Info, Object: ref,
				Message: fmt.Sprintf("%s runs %s, which the release data does not know: %s", ref, v, unknownWhy(err)),
				Remedy:  "pass newer release data (releases.LoadFile) so support dates and ranges are right", RemedyOptions: []plan.RemedyOption{{Option: "releases.LoadFile"}}})
		}
	}
	for _, r := range s.Revisions {
		note(r.Version, mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment})
	}
	if s.CNI != nil {
		note(s.CNI.Version, mesh.ObjectRef{Kind: "DaemonSet", Namespace: s.CNI.Namespace, Name: s.CNI.Name})
	}
	for _, z := range s.Ztunnels {
		note(z.Version, z.Ref())
	}
	return out
}

func componentVerdicts(s *mesh.Snapshot, fs []plan.Finding) []ComponentVerdict {
	byComp := map[string]*ComponentVerdict{}
	order := []string{}
	ensure := func(name string, v mesh.Version) *ComponentVerdict {
		if c, ok := byComp[name]; ok {
			return c
		}
		c := &ComponentVerdict{Component: name, Current: v, Status: StatusOK}
		byComp[name] = c
		order = append(order, name)
		return c
	}
	for _, r := range s.Revisions {
		ensure("istiod/"+r.Name, r.Version)
	}
	if s.CNI != nil {
		ensure("cni", s.CNI.Version)
	}
	for _, z := range s.Ztunnels {
		ensure("ztunnel/"+z.Namespace+"/"+z.Name, z.Version)
	}
	for _, g := range s.Gateways {
		what := "gateway/"
		if g.Waypoint {
			what = "waypoint/"
		}
		var v mesh.Version
		if len(g.Versions) > 0 {
			v = g.Versions[0]
		}
		ensure(what+g.Namespace+"/"+g.Name, v)
	}
	for _, f := range fs {
		if f.Component == "" || strings.HasPrefix(f.Component, "node/") {
			continue
		}
		c := ensure(f.Component, mesh.Version{})
		c.Codes = append(c.Codes, f.Code)
		switch {
		case f.Stops():
			c.Status = StatusBlocked
		case c.Status == StatusOK && f.Severity != plan.Info:
			c.Status = StatusWarning
		}
	}
	out := make([]ComponentVerdict, 0, len(order))
	for _, name := range order {
		out = append(out, *byComp[name])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out
}

func nodeVerdicts(s *mesh.Snapshot, fs []plan.Finding) []NodeVerdict {
	ambient := s.AmbientNodes()
	codes := map[string][]plan.Finding{}
	for _, f := range fs {
		if f.Object.Kind == "Node" {
			codes[f.Object.Name] = append(codes[f.Object.Name], f)
		}
	}
	out := make([]NodeVerdict, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		v := NodeVerdict{Node: n.Name, Pool: n.Pool, AmbientWorkloads: ambient[n.Name], Status: StatusOK}
		if s.CNI != nil {
			if p, ok := mesh.ReadyAgentOn(s.CNI.Pods, n.Name); ok {
				v.CNI = p.Version
			}
		}
		for _, z := range s.Ztunnels {
			if p, ok := mesh.ReadyAgentOn(z.Pods, n.Name); ok {
				v.Ztunnel = p.Version
				break
			}
		}
		for _, f := range codes[n.Name] {
			v.Codes = append(v.Codes, f.Code)
			if f.Stops() {
				v.Status = StatusBlocked
			} else if v.Status == StatusOK && f.Severity != plan.Info {
				v.Status = StatusWarning
			}
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}
