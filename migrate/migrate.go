package migrate

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// ErrBlocked is returned, with the plan, when findings stop the migration: the plan holds them (and
// no steps), so callers can still render why. It is plan.ErrBlocked, which every primitive wraps.
var ErrBlocked = plan.ErrBlocked

// Defaults of Options fields left zero.
const (
	DefaultProbe                  = "mesh-health"
	DefaultSettleSeconds          = 60
	DefaultWaypointTimeoutSeconds = 300
)

// Options configure MigrateNamespace. BackupFile is required; every other zero value is a
// safe default: no waypoint is created, no proposal is applied, nothing is deleted.
type Options struct {
	// Waypoint is the waypoint the namespace (or WaypointServices) will use when it names none:
	// proposals attach to it, and the plan labels istio.io/use-waypoint with it. Its Namespace must
	// be empty or the migrated namespace. Nil: only a waypoint the namespace already names counts.
	Waypoint *WaypointRef
	// CreateWaypoint creates Waypoint (a Gateway of class istio-waypoint) when the snapshot does not
	// hold it; without it the plan waits for a waypoint someone else creates.
	CreateWaypoint bool
	// WaypointServices labels only these Services of the namespace istio.io/use-waypoint, instead of
	// the namespace.
	WaypointServices []string
	// Apply names the proposals of the readiness report to apply, by the sidecar-era object each
	// replaces (Proposal.For). Nothing is applied that is not named here.
	Apply []mesh.ObjectRef
	// Keep names sidecar-era objects to keep although an applied proposal replaces them. By default
	// the plan deletes, after the backup, what an applied proposal replaces, except L4 policies whose
	// caller rules also stay needed for traffic that bypasses the waypoint.
	Keep []mesh.ObjectRef
	// Delete names more sidecar-era policies and routes of the namespace to delete after the backup
	// (a DestinationRule an HTTPRoute made redundant, ...). Policies ztunnel enforces as written and
	// objects the classifier cannot read are refused.
	Delete []mesh.ObjectRef
	// BackupFile is the absolute path, on the machine that runs the executor, of the file the backup
	// of every Istio and Gateway API object of the namespace is written to (mode 0600) before
	// anything is deleted. The executor checks that it can write it before the first step. Required.
	BackupFile string
	// BatchSize is how many workloads restart together; 0 means 1.
	BatchSize int
	// RootNamespace and Waive are as in ReadinessOptions.
	RootNamespace string
	Waive         []plan.Code
	// Releases is the release data of the compatibility gate; nil means releases.Default().
	Releases *releases.Data
	// Today is the date the gate judges end of life at (planners read no clock); zero skips those
	// rules, which an info finding says.
	Today time.Time
	// Probe names the caller's health probe asked at the end of the plan; "" means DefaultProbe.
	Probe string
	// SettleSeconds is how long the final health gate waits before asking; 0 means 60.
	SettleSeconds int
	// WaypointTimeoutSeconds bounds the wait for the waypoint to be Programmed; 0 means 300.
	WaypointTimeoutSeconds int
}

// MigrateNamespace plans moving one namespace from sidecars to ambient, in the order the Istio
// migration guide requires, each step with its gate and its rollback:
//
//  1. the waypoint (created when asked) and the proposals the caller chose (targetRefs policies,
//     HTTPRoutes), then istio.io/use-waypoint on the namespace or the chosen Services; gate: the
//     waypoint Gateway is Programmed and every applied policy is WaypointAccepted;
//  2. istio.io/dataplane-mode=ambient on the namespace; gate: its pods without sidecars are captured;
//  3. the injection labels removed (istio-injection, istio.io/rev: whichever is set, remembered);
//  4. the sidecar workloads restarted in batches; gate: no pod runs a sidecar, every pod is captured;
//  5. a backup of every Istio and Gateway API object of the namespace to BackupFile, read back and
//     compared, then the deletion of the sidecar-era policies and routes the applied proposals
//     replace (and those in Delete), each only once its replacement is accepted;
//  6. validation (no sidecar left, every pod captured, L7 policies accepted by the waypoint) and a
//     health gate before the next namespace.
//
// Rolling back every step that ran, last first (execute.Executor.RollbackTo), returns the namespace
// to where it started: objects restored from the backup, the labels as they were, the workloads
// restarted with sidecars, the waypoint and applied proposals removed.
//
// The plan carries the readiness report's findings. Findings the plan itself resolves (a policy
// copied to the waypoint and deleted, a VirtualService replaced by an HTTPRoute) become info.
// Blocking findings stop planning: the plan is returned with them and no steps, together with an
// error wrapping ErrBlocked. Unwaived waivable findings do not stop planning; plan.Runnable reports
// false until they are waived or fixed. Bad options give an error wrapping plan.ErrInvalidOptions.
//
// Plan one namespace at a time, each from a snapshot taken after the previous one was applied (the
// fingerprint covers every namespace's labels); Order says in which order.
func MigrateNamespace(s *mesh.Snapshot, namespace string, opts Options) (*plan.Plan, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: the snapshot is nil; observe the cluster first (observe.Live or observe.Dir)", ErrInvalidInput)
	}
	s, err := mesh.Normalized(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	if err := opts.validate(namespace); err != nil {
		return nil, err
	}
	// The compatibility gate of the mesh as it runs, as every primitive runs it; the plan's first
	// step re-runs it at apply time.
	gate, err := compat.Compute(s, compat.Options{Releases: opts.Releases, Today: opts.Today, Waive: opts.Waive})
	if err != nil {
		return nil, err
	}
	m := &migration{s: s, ns: namespace, opts: opts}
	nsObj := findNamespace(s, namespace)
	ropts := ReadinessOptions{RootNamespace: opts.RootNamespace, Waive: opts.Waive}
	if nsObj != nil {
		if err := m.pickWaypoint(nsObj); err != nil {
			return nil, err
		}
		if m.waypoint != nil && nsObj.Labels[mesh.LabelUseWaypoint] == "" {
			w := *m.waypoint
			ropts.Waypoint = &w
		}
	}
	r, err := Readiness(s, namespace, ropts)
	if err != nil {
		return nil, err
	}
	m.report = r
	p := plan.Begin(s, plan.Metadata{
		Name:      fmt.Sprintf("migrate namespace %s from sidecars to ambient", namespace),
		Operation: "migrate-namespace",
		Options:   opts.echo(namespace),
	})
	for _, f := range gate.Findings {
		if f.Code == plan.CodeNamespaceSidecarAndAmbient && f.Object == (mesh.ObjectRef{Kind: "Namespace", Name: namespace}) {
			f.Resolve("the migration removes the namespace's injection labels once it is captured")
		}
		p.Findings = append(p.Findings, f)
	}
	p.Findings = append(p.Findings, r.Findings...)
	m.p = p
	if nsObj != nil {
		m.injection = planInjection(s, nsObj)
	}
	if !blocking(p.Findings) {
		if err := m.choose(); err != nil {
			return nil, err
		}
		m.outageFindings()
	}
	if !blocking(p.Findings) {
		m.workloadFindings()
		p.Steps = append(p.Steps, compat.PrecheckStep(m.id(""), mesh.Version{}, ""))
		m.build(nsObj)
		m.resolveFindings()
	}
	return plan.Finalize(p, plan.FinalizeOptions{Waive: opts.Waive, Subject: "namespace " + namespace,
		Accounting: accounting(s, namespace, opts.RootNamespace, r)})
}

func (o Options) validate(ns string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", plan.ErrInvalidOptions, fmt.Sprintf(format, a...))
	}
	switch {
	case ns == "":
		return fmt.Errorf("%w: no namespace given; name the namespace to migrate", ErrInvalidInput)
	case o.BackupFile == "":
		return bad("Options.BackupFile is empty; name the file the backup of the namespace's Istio and Gateway API objects is written to before anything is deleted")
	case !filepath.IsAbs(o.BackupFile):
		return bad("Options.BackupFile %q is not an absolute path; the executor may run in another directory than the planner", o.BackupFile)
	case o.Waypoint != nil && o.Waypoint.Name == "":
		return bad("Options.Waypoint has no name; give the name of the waypoint Gateway")
	case o.Waypoint != nil && o.Waypoint.Namespace != "" && o.Waypoint.Namespace != ns:
		return bad("Options.Waypoint is in namespace %s; a waypoint of another namespace (istio.io/use-waypoint-namespace) is not planned yet: use one in %s", o.Waypoint.Namespace, ns)
	case o.CreateWaypoint && o.Waypoint == nil:
		return bad("Options.CreateWaypoint is set but Waypoint is nil; name the waypoint to create")
	case o.BatchSize < 0 || o.SettleSeconds < 0 || o.WaypointTimeoutSeconds < 0:
		return bad("Options.BatchSize, SettleSeconds and WaypointTimeoutSeconds must not be negative")
	}
	if o.Waypoint != nil {
		switch o.Waypoint.For {
		case "", trafficService, trafficWorkload, trafficAll:
		default:
			return bad("Options.Waypoint.For is %q; want service, workload or all", o.Waypoint.For)
		}
	}
	return nil
}

func (o Options) echo(ns string) map[string]string {
	out := map[string]string{"namespace": ns, "backupFile": o.BackupFile}
	if o.Waypoint != nil {
		out["waypoint"] = o.Waypoint.Name
		if o.Waypoint.For != "" {
			out["waypointFor"] = o.Waypoint.For
		}
		out["createWaypoint"] = strconv.FormatBool(o.CreateWaypoint)
	}
	join := func(refs []mesh.ObjectRef) string {
		var s []string
		for _, r := range refs {
			s = append(s, r.String())
		}
		return strings.Join(s, ", ")
	}
	for k, v := range map[string]string{"apply": join(o.Apply), "keep": join(o.Keep), "delete": join(o.Delete),
		"waypointServices": strings.Join(o.WaypointServices, ", ")} {
		if v != "" {
			out[k] = v
		}
	}
	if o.BatchSize > 0 {
		out["batchSize"] = strconv.Itoa(o.BatchSize)
	}
	if len(o.Waive) > 0 {
		var w []string
		for _, c := range o.Waive {
			w = append(w, string(c))
		}
		out["waive"] = strings.Join(w, ",")
	}
	return out
}

// migration is the state of one MigrateNamespace call.
type migration struct {
	s      *mesh.Snapshot
	ns     string
	opts   Options
	report *Report
	p      *plan.Plan
	// waypoint is the waypoint the namespace will use (nil: none); create says the plan creates it;
	// label says the plan labels the namespace (or services) with it.
	waypoint *WaypointRef
	create   bool
	// applied are the chosen proposals; deleted the objects to delete after the backup, with the
	// proposal that replaces each (nil for Delete).
	applied []Proposal
	deleted []deletion
	// ids of steps, for findings' messages.
	deleteStep map[mesh.ObjectRef]string
	applyStep  map[mesh.ObjectRef]string
	pinStep    string
	restarted  []mesh.ObjectRef
	// injection is what the plan does to the namespace's injection labels.
	injection injectionChange
}

type deletion struct {
	policy mesh.Policy
	by     *Proposal
}

func blocking(fs []plan.Finding) bool {
	for _, f := range fs {
		if f.Severity == plan.Blocking {
			return true
		}
	}
	return false
}

func (m *migration) id(parts ...string) string {
	return "migrate/" + m.ns + "/" + strings.Join(parts, "/")
}

func (m *migration) gateway(name string) *mesh.Gateway {
	for i := range m.s.Gateways {
		g := &m.s.Gateways[i]
		if g.Kind == mesh.GatewayKindAPI && g.Namespace == m.ns && g.Name == name {
			return g
		}
	}
	return nil
}

// pickWaypoint settles which waypoint the namespace will use and whether the plan creates it.
func (m *migration) pickWaypoint(ns *mesh.Namespace) error {
	cur, labelled := ns.Labels[mesh.LabelUseWaypoint]
	if labelled && cur == "none" {
		cur, labelled = "", false
	}
	if other := ns.Labels[mesh.LabelUseWaypointNamespace]; labelled && other != "" && other != m.ns {
		return fmt.Errorf("%w: namespace %s uses waypoint %s/%s of another namespace; plan that waypoint's acceptance by hand", plan.ErrInvalidOptions, m.ns, other, cur)
	}
	w := m.opts.Waypoint
	switch {
	case w == nil && labelled:
		m.waypoint = &WaypointRef{Namespace: m.ns, Name: cur}
	case w == nil:
		if len(m.opts.WaypointServices) > 0 {
			return fmt.Errorf("%w: WaypointServices are given but no waypoint: set Options.Waypoint", plan.ErrInvalidOptions)
		}
		return nil
	case labelled && cur != w.Name:
		return fmt.Errorf("%w: namespace %s is labelled %s=%s, not %s; migrate with that waypoint or relabel the namespace first", plan.ErrInvalidOptions, m.ns, mesh.LabelUseWaypoint, cur, w.Name)
	default:
		ref := *w
		ref.Namespace = m.ns
		m.waypoint = &ref
	}
	m.create = m.opts.CreateWaypoint && m.gateway(m.waypoint.Name) == nil
	for _, svc := range m.opts.WaypointServices {
		if !m.hasService(svc) {
			return fmt.Errorf("%w: WaypointServices names Service %s/%s, which is not in the snapshot (Services: %s)", plan.ErrInvalidOptions, m.ns, svc, strings.Join(m.serviceNames(), ", "))
		}
	}
	return nil
}

func (m *migration) hasService(name string) bool {
	for _, s := range m.s.Services {
		if s.Namespace == m.ns && s.Name == name {
			return true
		}
	}
	return false
}

func (m *migration) serviceNames() []string {
	var out []string
	for _, s := range m.s.Services {
		if s.Namespace == m.ns {
			out = append(out, s.Name)
		}
	}
	return out
}

// choose picks the proposals to apply and the objects to delete, refusing what must not be done.
func (m *migration) choose() error {
	byFor := map[mesh.ObjectRef]Proposal{}
	var available []string
	for _, pr := range m.report.Proposals {
		byFor[pr.For] = pr
		available = append(available, pr.For.String())
	}
	verdicts := map[mesh.ObjectRef]PolicyVerdict{}
	for _, v := range m.report.Policies {
		verdicts[v.Policy] = v
	}
	routes := map[mesh.ObjectRef]RouteVerdict{}
	for _, v := range m.report.Routes {
		routes[v.Route] = v
	}
	seen := map[mesh.ObjectRef]bool{}
	for _, ref := range m.opts.Apply {
		pr, ok := byFor[ref]
		if !ok {
			return fmt.Errorf("%w: Options.Apply names %s, for which the readiness report has no proposal (proposals for: %s)",
				plan.ErrInvalidOptions, ref, orNone(available))
		}
		if seen[ref] {
			continue
		}
		seen[ref] = true
		m.applied = append(m.applied, pr)
	}
	sort.Slice(m.applied, func(i, j int) bool { return m.applied[i].Ref().Less(m.applied[j].Ref()) })
	keep := map[mesh.ObjectRef]bool{}
	for _, k := range m.opts.Keep {
		keep[k] = true
	}
	del := map[mesh.ObjectRef]deletion{}
	for i := range m.applied {
		pr := &m.applied[i]
		if pr.For.Namespace != m.ns || verdicts[pr.For].Class == PrincipalsMoveToWaypoint {
			continue
		}
		if keep[pr.For] {
			delete(keep, pr.For)
			continue
		}
		del[pr.For] = deletion{policy: policyByRef(m.s, pr.For), by: pr}
	}
	for k := range keep {
		return fmt.Errorf("%w: Options.Keep names %s, which the plan would not delete anyway", plan.ErrInvalidOptions, k)
	}
	for _, ref := range m.opts.Delete {
		if _, dup := del[ref]; dup {
			continue
		}
		p := policyByRef(m.s, ref)
		if ref.Namespace != m.ns || !m.inSnapshot(ref) {
			return fmt.Errorf("%w: Options.Delete names %s, which is not an Istio policy or route of namespace %s in the snapshot", plan.ErrInvalidOptions, ref, m.ns)
		}
		if v, ok := verdicts[ref]; ok {
			switch v.Class {
			case Unknown:
				return fmt.Errorf("%w: Options.Delete names %s, whose spec does not decode (%s); a plan never deletes what it cannot read", plan.ErrInvalidOptions, ref, v.Error)
			case KeepsWorking, Unaffected, BlocksMigration:
				return fmt.Errorf("%w: Options.Delete names %s, which ztunnel enforces as written (%s); deleting it would change what the namespace allows, keep it", plan.ErrInvalidOptions, ref, v.Class)
			}
		}
		if v, ok := routes[ref]; ok && v.Error != "" {
			return fmt.Errorf("%w: Options.Delete names %s, whose spec does not decode (%s); a plan never deletes what it cannot read", plan.ErrInvalidOptions, ref, v.Error)
		}
		del[ref] = deletion{policy: p}
	}
	for _, d := range del {
		m.deleted = append(m.deleted, d)
	}
	// What ztunnel enforces as deny-all, or with rules dropped, goes first: it hurts until it is gone.
	// The policies that deny what they allowed first (the deny window), then those that lose rules.
	rank := func(d deletion) int {
		switch v := verdicts[d.policy.Ref()]; {
		case certainOutage(v):
			return 0
		case v.Class == DenyAllUnderZtunnel || v.Class == LosesL7Rules:
			return 1
		}
		return 2
	}
	sort.Slice(m.deleted, func(i, j int) bool {
		a, b := m.deleted[i], m.deleted[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		return a.policy.Ref().Less(b.policy.Ref())
	})
	return nil
}

func (m *migration) inSnapshot(ref mesh.ObjectRef) bool {
	for _, p := range m.s.Policies {
		if p.Ref() == ref {
			return true
		}
	}
	return false
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}

// outageFindings make blocking what a waiver would turn into a certain outage: a policy ztunnel
// enforces as deny-all (or without the ALLOW rules some requests need) that the plan neither copies
// onto a waypoint nor deletes stays in force once the namespace is ambient.
func (m *migration) outageFindings() {
	copied := map[mesh.ObjectRef]bool{}
	for _, pr := range m.applied {
		copied[pr.For] = true
	}
	deleted := map[mesh.ObjectRef]bool{}
	for _, d := range m.deleted {
		deleted[d.policy.Ref()] = true
	}
	outage := map[mesh.ObjectRef]bool{}
	for _, v := range m.report.Policies {
		if v.Policy.Namespace == m.ns && certainOutage(v) && !(copied[v.Policy] && deleted[v.Policy]) {
			outage[v.Policy] = true
		}
	}
	for i := range m.p.Findings {
		f := &m.p.Findings[i]
		if f.Severity == plan.Blocking || !outage[f.Object] || (f.Code != CodeAuthzPolicyBecomesDenyAll && f.Code != CodeAuthzPolicyLosesL7Rules) {
			continue
		}
		why := "the plan does not copy it onto the waypoint (Options.Apply)"
		if copied[f.Object] {
			why = "the plan copies it onto the waypoint but keeps it (Options.Keep)"
		}
		blockOutage(f, why)
	}
}

// workloadFindings reports the sidecar workloads the plan cannot move: pods that select injection
// themselves, and pods no Deployment, StatefulSet or DaemonSet owns.
func (m *migration) workloadFindings() {
	for _, w := range m.s.Workloads {
		if w.Namespace != m.ns || len(w.SidecarRevisions) == 0 || isGatewayWorkload(m.s, w) {
			continue
		}
		switch w.Kind {
		case "Deployment", "StatefulSet", "DaemonSet":
			m.restarted = append(m.restarted, w.Ref())
		default:
			m.p.Findings = append(m.p.Findings, plan.Finding{Code: CodeMigrationWorkloadNotRestartable, Severity: plan.Waivable, Object: w.Ref(),
				Message: fmt.Sprintf("%s runs %d pods with sidecars and cannot be rolled out, so they keep their sidecars and the plan's gate (no sidecar left) waits for them", w.Ref(), w.Pods),
				Remedy:  "let them finish or recreate them by hand after the injection label is removed"})
		}
		// With istio-injection=disabled (injectors that inject unlabelled namespaces) no webhook
		// selects the pods, whatever their labels.
		if len(m.injection.auto) == 0 && (w.PodRevisionLabel != "" || w.Labels[mesh.LabelSidecarInject] == "true") {
			why := mesh.LabelRev + "=" + w.PodRevisionLabel
			if w.PodRevisionLabel == "" {
				why = mesh.LabelSidecarInject + "=true"
			}
			m.p.Findings = append(m.p.Findings, plan.Finding{Code: CodeMigrationPodLabelSelectsInjection, Severity: plan.Waivable, Object: w.Ref(),
				Message: fmt.Sprintf("the pods of %s are labelled %s, so they are injected again after the namespace's injection labels are removed", w.Ref(), why),
				Remedy:  "remove the label from the pod template (or set sidecar.istio.io/inject=false) before migrating"})
		}
	}
}

// resolveFindings turns the waivable findings the plan itself resolves into info, saying how.
func (m *migration) resolveFindings() {
	classes := map[mesh.ObjectRef]PolicyClass{}
	for _, v := range m.report.Policies {
		classes[v.Policy] = v.Class
	}
	for i := range m.p.Findings {
		f := &m.p.Findings[i]
		if f.Severity != plan.Waivable || f.Waived {
			continue
		}
		apply, applied := m.applyStep[f.Object]
		del, deleted := m.deleteStep[f.Object]
		how := ""
		switch f.Code {
		case CodeAuthzPolicyBecomesDenyAll, CodeAuthzPolicyLosesL7Rules, CodeAuthzPolicyDeniesMore, CodeAuthzPolicyAllowsMore:
			if applied && deleted {
				how = fmt.Sprintf("step %s copies it onto the waypoint and step %s deletes it after the backup", apply, del)
			}
		case CodeAuthzPolicyHasNoEffect, CodePolicyNotEnforcedWithoutWaypoint, CodeAuthzDryRunIgnored:
			if applied {
				how = fmt.Sprintf("step %s copies it onto the waypoint", apply)
			}
		case CodeVirtualServiceNeedsHTTPRoute:
			if applied {
				how = fmt.Sprintf("step %s applies the HTTPRoute that replaces it", apply)
			}
		case CodeMigrationGatewayRevisionChanges:
			if m.pinStep != "" && f.Object.Kind == "Gateway" {
				how = fmt.Sprintf("step %s labels it with the namespace's %s before the label goes", m.pinStep, mesh.LabelRev)
			}
		}
		if how != "" && classes[f.Object] != PrincipalsMoveToWaypoint {
			f.Resolve(how)
		}
	}
}
