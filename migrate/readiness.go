package migrate

import (
	"fmt"
	"sort"
	"strings"

	securityv1 "istio.io/api/security/v1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// ReportKind is the kind of an encoded Report.
const ReportKind = "MigrationReadiness"

// ErrInvalidInput is wrapped by errors about Readiness and LintTelemetry arguments: no snapshot, no
// namespace, a waypoint without a name.
var ErrInvalidInput = plan.ErrInvalidOptions

// ReadinessOptions tune Readiness. The zero value is ready to use.
type ReadinessOptions struct {
	// Waypoint is the waypoint the caller will create for the namespace (and label the namespace
	// with) when the namespace has no istio.io/use-waypoint label. Proposals attach to it and
	// caller-identity checks assume it. Nil: only waypoints the snapshot already has count.
	Waypoint *WaypointRef
	// RootNamespace is meshConfig.rootNamespace; empty means every namespace istiod runs in.
	RootNamespace string
	// Waive marks findings with these codes waived (blocking findings cannot be waived).
	Waive []plan.Code
}

// Report is everything that decides whether a namespace can move from sidecars to ambient, and
// what has to be created on the way. It is data: encode it as YAML or JSON for review.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	// Ready is true when no finding stops the migration (blocking, or waivable and not waived).
	Ready bool `json:"ready"`
	// Findings are sorted by severity, code and object.
	Findings []plan.Finding `json:"findings,omitempty"`
	// Policies classifies the namespace's and the root namespace's security policies.
	Policies []PolicyVerdict `json:"policies,omitempty"`
	// Routes judges the VirtualServices and DestinationRules that concern the namespace.
	Routes []RouteVerdict `json:"routes,omitempty"`
	// Waypoint says whether a waypoint is needed, and for which Services.
	Waypoint WaypointNeed `json:"waypoint"`
	// Proposals are the objects to create where the translation is mechanical.
	Proposals []Proposal `json:"proposals,omitempty"`
	// Notes say what could not be proposed, or checked, and why.
	Notes []string `json:"notes,omitempty"`
}

// WaypointNeed says whether the namespace needs a waypoint and which Services will have one.
type WaypointNeed struct {
	// Needed is true when a policy or route of the namespace keeps its meaning only on a waypoint.
	Needed bool `json:"needed"`
	// NeededBy lists those policies and routes.
	NeededBy []mesh.ObjectRef `json:"neededBy,omitempty"`
	// Namespace is the waypoint the namespace label (or ReadinessOptions.Waypoint) names.
	Namespace *WaypointRef `json:"namespace,omitempty"`
	// Services of the namespace with the waypoint each will use.
	Services []ServiceWaypoint `json:"services,omitempty"`
}

// ServiceWaypoint is the waypoint one Service will use after the migration.
type ServiceWaypoint struct {
	Service mesh.ObjectRef `json:"service"`
	// Waypoint is "namespace/name", empty when the Service will have none.
	Waypoint string `json:"waypoint,omitempty"`
	// From is FromService, FromNamespace, FromOptions or FromOptOut.
	From string `json:"from,omitempty"`
	// Exists: the waypoint Gateway is in the snapshot; Ready: it has a ready pod.
	Exists bool `json:"exists,omitempty"`
	Ready  bool `json:"ready,omitempty"`
	// NeededBy lists the policies and routes that need a waypoint in front of this Service.
	NeededBy []mesh.ObjectRef `json:"neededBy,omitempty"`
}

// Readiness reports whether namespace can move from sidecar mode to ambient mode: the installation
// (Gateway API CRDs, an ambient istiod, istio-cni with ambient, ztunnel), the namespace itself, every
// policy by what ztunnel will do with it, the routes that need an HTTPRoute, whether a waypoint is
// needed and for which Services, the observability the move breaks (LintTelemetry), and proposed
// objects where the translation is mechanical. It reads only the snapshot.
func Readiness(s *mesh.Snapshot, namespace string, opts ReadinessOptions) (*Report, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: the snapshot is nil; observe the cluster first (observe.Live or observe.Dir)", ErrInvalidInput)
	}
	if namespace == "" {
		return nil, fmt.Errorf("%w: no namespace given; name the namespace to migrate", ErrInvalidInput)
	}
	if w := opts.Waypoint; w != nil && w.Name == "" {
		return nil, fmt.Errorf("%w: ReadinessOptions.Waypoint has no name; give the name of the waypoint Gateway that will be created", ErrInvalidInput)
	}
	r := &Report{APIVersion: mesh.APIVersion, Kind: ReportKind, Namespace: namespace}
	add := func(f plan.Finding) { r.Findings = append(r.Findings, f) }
	installFindings(s, add)
	ns := findNamespace(s, namespace)
	if ns == nil {
		add(plan.Finding{Code: CodeMigrationNamespaceNotFound, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "Namespace", Name: namespace},
			Message: fmt.Sprintf("namespace %q is not in the snapshot", namespace), Remedy: "check the name, or observe the cluster again"})
		return finish(r, opts), nil
	}
	namespaceFindings(ns, add)
	injectionFindings(s, ns, add)
	gatewayNamespaceFinding(s, ns, add)

	wv := newWaypointView(s, namespace)
	if opts.Waypoint != nil {
		w := *opts.Waypoint
		if w.Namespace == "" {
			w.Namespace = namespace
		}
		wv.planned = &w
	}
	needs := map[string][]mesh.ObjectRef{} // Service name → what needs a waypoint in front of it
	var neededBy []mesh.ObjectRef
	need := func(obj mesh.ObjectRef, services []string) {
		neededBy = append(neededBy, obj)
		for _, svc := range services {
			needs[svc] = append(needs[svc], obj)
		}
	}

	policyReadiness(s, wv, r, opts.RootNamespace, need, add)

	routes, props := routeVerdicts(s, namespace)
	r.Routes = routes
	r.Proposals = append(r.Proposals, props...)
	for _, v := range routes {
		local := servicesIn(v.Services, namespace)
		for _, f := range routeFindings(v, namespace) {
			add(f)
		}
		if v.Route.Kind == "VirtualService" && v.MeshTraffic && len(local) > 0 {
			need(v.Route, local)
		}
		if v.Route.Kind == "DestinationRule" && v.TrafficPolicy && len(local) > 0 {
			need(v.Route, local)
		}
	}

	r.Waypoint = waypointNeed(s, wv, namespace, needs, neededBy, add)
	destinationRulesWithoutWaypoint(r, add)
	routesToServiceEntries(r, namespace, add)
	tl := lintTelemetry(s, namespace, wv)
	for _, f := range tl.Findings {
		add(f)
	}
	r.Notes = append(r.Notes, tl.Unchecked...)
	ambientChangeFindings(s, ns, r, add)
	if !ns.Ambient() || len(ns.Pods.Sidecar) > 0 {
		sidecarOnlyConfig(s, wv, r, namespace, opts.RootNamespace, add)
	}
	return finish(r, opts), nil
}

// policyReadiness classifies the namespace's (and the root namespace's) security policies into r,
// with their findings, what needs a waypoint and the proposals.
func policyReadiness(s *mesh.Snapshot, wv *waypointView, r *Report, root string, need func(mesh.ObjectRef, []string), add func(plan.Finding)) {
	namespace := r.Namespace
	r.Policies = classifyPolicies(s, wv, root, []string{namespace})
	for _, v := range r.Policies {
		p := policyByRef(s, v.Policy)
		if f, ok := policyFinding(v); ok {
			if v.Policy.Namespace == namespace && certainOutage(v) && len(wv.forPolicy(namespace, selectorOf(p), selectorOf(p) == nil)) == 0 {
				why := "no waypoint will serve its workloads (none is labelled, and Options.Waypoint names none), so no translated copy can take over"
				if len(servicesOfPolicy(s, p)) == 0 {
					why = "no Service of the snapshot selects its workloads, and a waypoint takes only the traffic of the Services it serves (unless istio.io/waypoint-for is workload or all), so no translated copy can take over"
				}
				blockOutage(&f, why)
			}
			add(f)
		}
		if v.Policy.Namespace != namespace {
			continue
		}
		if needsCopyOnWaypoint[v.Class] && v.Class != DryRunIgnored {
			need(v.Policy, servicesOfPolicy(s, p))
		}
		if v.Class == NeedsWaypoint {
			need(v.Policy, targetServices(s, wv, p))
		}
		if len(v.Waypoints) > 0 && v.Class != PrincipalsMoveToWaypoint {
			add(plan.Finding{Code: CodeAuthzCallerRulesSeeWaypoint, Severity: plan.Waivable, Object: v.Policy,
				Message: fmt.Sprintf("%s keeps L4 rules %s that match callers, but behind waypoint %s ztunnel will see the waypoint's identity instead",
					v.Policy, ruleListCallers(keptRules(v.Rules)), strings.Join(v.Waypoints, ", ")),
				Remedy: "move the caller rules to the targetRefs copy on the waypoint, and allow the waypoint's service account here"})
		}
		prop, notes := securityProposal(s, wv, p, v)
		if prop != nil {
			r.Proposals = append(r.Proposals, *prop)
		}
		r.Notes = append(r.Notes, notes...)
	}

}

// destinationRulesWithoutWaypoint: a DestinationRule's traffic policy stops for the Services that
// will have no waypoint.
func destinationRulesWithoutWaypoint(r *Report, add func(plan.Finding)) {
	for _, v := range r.Routes {
		if v.Route.Kind != "DestinationRule" || !v.TrafficPolicy {
			continue
		}
		var bare []string
		for _, sw := range r.Waypoint.Services {
			if sw.Waypoint == "" && containsRef(v.Services, sw.Service) {
				bare = append(bare, sw.Service.Name)
			}
		}
		if len(bare) > 0 {
			add(plan.Finding{Code: CodeDestinationRuleNeedsWaypoint, Severity: plan.Waivable, Object: v.Route,
				Message: fmt.Sprintf("%s sets a traffic policy for Service %s, which will have no waypoint; ztunnel does not apply DestinationRules, so its load balancing, connection pool and outlier detection stop for ambient clients",
					v.Route, strings.Join(bare, ", ")),
				Remedy: "give the Service a waypoint (istio.io/use-waypoint) so the DestinationRule keeps applying, or accept plain L4 load balancing"})
		}
	}
}

// routesToServiceEntries: a VirtualService or DestinationRule of the namespace that acts on a host
// of a ServiceEntry with no waypoint. The namespace's sidecars applied it as clients; ztunnel
// applies neither kind, so after the move only an egress waypoint bound to the entry
// (istio.io/use-waypoint) would.
func routesToServiceEntries(r *Report, ns string, add func(plan.Finding)) {
	for _, v := range r.Routes {
		if v.Route.Namespace != ns || !(v.Route.Kind == "DestinationRule" && v.TrafficPolicy || v.Route.Kind == "VirtualService" && v.MeshTraffic) {
			continue
		}
		for _, se := range v.ServiceEntries {
			if se.Waypoint != "" {
				continue
			}
			what := "its routing rules (retries, timeouts, faults, splits)"
			if v.Route.Kind == "DestinationRule" {
				what = "its traffic policy (load balancing, connection pool, outlier detection)"
			}
			if v.TLSOrigination {
				what = "its TLS origination (the sidecar opened TLS to the host; ztunnel sends what the application sends, plain text where it relied on the sidecar)"
			}
			add(plan.Finding{Code: CodeRouteNeedsEgressWaypoint, Severity: plan.Waivable, Object: v.Route, Related: []mesh.ObjectRef{se.ServiceEntry},
				Message: fmt.Sprintf("%s acts on host %s of %s, which has no waypoint; the pods of namespace %s applied it in their sidecars, and once they are in ambient nothing does: %s stops",
					v.Route, se.Host, se.ServiceEntry, ns, what),
				Remedy:  fmt.Sprintf("bind %s to an egress waypoint (label istio.io/use-waypoint) and attach the rules there before the move, or keep the workloads that call %s on sidecars", se.ServiceEntry, se.Host),
				Details: map[string]string{"host": se.Host, "tlsOrigination": fmt.Sprint(v.TLSOrigination)}})
		}
	}
}

func finish(r *Report, opts ReadinessOptions) *Report {
	waive := map[plan.Code]bool{}
	for _, c := range opts.Waive {
		waive[c] = true
	}
	for i := range r.Findings {
		if r.Findings[i].Severity == plan.Waivable && waive[r.Findings[i].Code] {
			r.Findings[i].Waived = true
		}
	}
	plan.SortFindings(r.Findings)
	r.Ready = len(plan.Stopping(r.Findings)) == 0
	sort.Slice(r.Proposals, func(i, j int) bool { return r.Proposals[i].Ref().Less(r.Proposals[j].Ref()) })
	r.Notes = uniqueSorted(r.Notes)
	return r
}

func uniqueSorted(in []string) []string {
	set := map[string]bool{}
	for _, s := range in {
		set[s] = true
	}
	return sortedKeys(set)
}

func findNamespace(s *mesh.Snapshot, name string) *mesh.Namespace {
	for i := range s.Namespaces {
		if s.Namespaces[i].Name == name {
			return &s.Namespaces[i]
		}
	}
	return nil
}

func policyByRef(s *mesh.Snapshot, ref mesh.ObjectRef) mesh.Policy {
	for _, p := range s.Policies {
		if p.Ref() == ref {
			return p
		}
	}
	return mesh.Policy{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// installFindings checks what ambient needs installed (istio.io docs/ambient/migrate prerequisites).
func installFindings(s *mesh.Snapshot, add func(plan.Finding)) {
	if !s.GatewayAPI.Installed {
		add(plan.Finding{Code: plan.CodeGatewayAPICRDsMissing, Severity: plan.Blocking,
			Object:  mesh.ObjectRef{Kind: "CustomResourceDefinition", Name: "gateways.gateway.networking.k8s.io"},
			Message: "the Gateway API CRDs are not installed; waypoints are Gateway API Gateways and routes become HTTPRoutes",
			Remedy:  "install the Gateway API standard CRDs of the version istiod is built against"})
	}
	switch {
	case len(s.Revisions) == 0:
		add(plan.Finding{Code: plan.CodeIstiodMissing, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "Deployment", Name: "istiod"},
			Message: "no istiod Deployment is in the snapshot", Remedy: "install istiod with profile=ambient"})
	case !anyAmbientRevision(s):
		r := s.Revisions[0]
		add(plan.Finding{Code: CodeIstiodAmbientDisabled, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment},
			Message: fmt.Sprintf("no istiod revision runs with PILOT_ENABLE_AMBIENT=true (%s does not)", revisionNames(s)),
			Remedy:  "upgrade istiod with --set profile=ambient, then restart sidecar workloads so they pick up ISTIO_META_ENABLE_HBONE"})
	}
	switch {
	case s.CNI == nil:
		add(plan.Finding{Code: plan.CodeCNIMissing, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "DaemonSet", Name: "istio-cni-node"},
			Message: "istio-cni is not installed; it redirects ambient pods to ztunnel", Remedy: "install the cni chart with profile=ambient"})
	case s.CNI.Config["AMBIENT_ENABLED"] != "true":
		add(plan.Finding{Code: plan.CodeCNIAmbientDisabled, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "DaemonSet", Namespace: s.CNI.Namespace, Name: s.CNI.Name},
			Message: fmt.Sprintf("istio-cni-config has AMBIENT_ENABLED=%q, so pods are never redirected to ztunnel", s.CNI.Config["AMBIENT_ENABLED"]),
			Remedy:  "upgrade the cni chart with --set profile=ambient"})
	}
	if len(s.Ztunnels) == 0 {
		add(plan.Finding{Code: plan.CodeZtunnelMissing, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "DaemonSet", Name: "ztunnel"},
			Message: "no ztunnel DaemonSet is installed", Remedy: "install the ztunnel chart"})
	}
}

func anyAmbientRevision(s *mesh.Snapshot) bool {
	for _, r := range s.Revisions {
		if r.Ambient {
			return true
		}
	}
	return false
}

func revisionNames(s *mesh.Snapshot) string {
	var out []string
	for _, r := range s.Revisions {
		out = append(out, r.Name)
	}
	return strings.Join(out, ", ")
}

func namespaceFindings(ns *mesh.Namespace, add func(plan.Finding)) {
	ref := mesh.ObjectRef{Kind: "Namespace", Name: ns.Name}
	sidecars := 0
	for _, n := range ns.Pods.Sidecar {
		sidecars += n
	}
	injection := ns.Labels[mesh.LabelInjection] == "enabled" || ns.Labels[mesh.LabelRev] != ""
	switch {
	case ns.Ambient() && sidecars == 0:
		add(plan.Finding{Code: CodeMigrationNamespaceAlreadyAmbient, Severity: plan.Blocking, Object: ref,
			Message: fmt.Sprintf("namespace %s is already labelled istio.io/dataplane-mode=ambient and runs no sidecars", ns.Name),
			Remedy:  "nothing to migrate; validate it with istioctl ztunnel-config workloads"})
	case ns.Ambient():
		add(plan.Finding{Code: CodeMigrationNamespacePartlyAmbient, Severity: plan.Info, Object: ref,
			Message: fmt.Sprintf("namespace %s is labelled for ambient but %d pods still run sidecars (sidecars win over ztunnel)", ns.Name, sidecars),
			Remedy:  "resume the migration: remove the injection labels and restart the workloads"})
	case sidecars == 0 && !injection:
		add(plan.Finding{Code: CodeMigrationNamespaceNotInMesh, Severity: plan.Blocking, Object: ref,
			Message: fmt.Sprintf("namespace %s has no sidecar pods and no injection label, so it is not in the mesh", ns.Name),
			Remedy:  "to add it to ambient directly, label it istio.io/dataplane-mode=ambient; there is no sidecar state to migrate"})
	}
}

// certainOutage: ztunnel denies, for good, requests the policy allowed: an ALLOW policy every rule of
// which is dropped (deny-all), or some (the requests only they allowed). A waiver cannot make that
// safe; only a translated copy on a waypoint and the deletion of the original can.
func certainOutage(v PolicyVerdict) bool {
	return v.Class == DenyAllUnderZtunnel || v.Class == LosesL7Rules && v.Action != securityv1.AuthorizationPolicy_DENY.String()
}

// blockOutage makes a certain-outage finding blocking, saying why it cannot be waived.
func blockOutage(f *plan.Finding, why string) {
	f.Severity, f.Waived = plan.Blocking, false
	f.Message += fmt.Sprintf("; %s: once the namespace is ambient, ztunnel denies these requests for good, and a waiver cannot make that safe", why)
	f.Remedy = "give the workloads a waypoint (Options.Waypoint), apply the proposed targetRefs copy (Options.Apply) and let the plan delete this policy right after the restart"
}

// policyFinding turns a verdict into a finding; classes that keep working give none.
func policyFinding(v PolicyVerdict) (plan.Finding, bool) {
	f := plan.Finding{Severity: plan.Waivable, Object: v.Policy, Remedy: v.Remedy}
	switch v.Class {
	case BlocksMigration:
		f.Code, f.Severity = CodePeerAuthenticationDisable, plan.Blocking
	case Unknown:
		f.Code, f.Severity = CodePolicySpecInvalid, plan.Blocking
		f.Message = fmt.Sprintf("%s: %s", v.Policy, v.Error)
		return f, true
	case DenyAllUnderZtunnel:
		f.Code = CodeAuthzPolicyBecomesDenyAll
	case LosesL7Rules:
		f.Code = CodeAuthzPolicyLosesL7Rules
	case BroaderDeny:
		f.Code = CodeAuthzPolicyDeniesMore
	case BroaderAllow:
		f.Code = CodeAuthzPolicyAllowsMore
	case NoEffect:
		f.Code = CodeAuthzPolicyHasNoEffect
	case NotEnforced:
		f.Code = CodePolicyNotEnforcedWithoutWaypoint
	case DryRunIgnored:
		f.Code, f.Severity = CodeAuthzDryRunIgnored, plan.Info
	case PrincipalsMoveToWaypoint:
		f.Code = CodeAuthzCallerRulesSeeWaypoint
	case NeedsWaypoint:
		if v.Status == nil || v.Status.Accepted {
			return f, false
		}
		f.Code = CodePolicyNotAcceptedByWaypoint
		f.Message = fmt.Sprintf("%s is not accepted on a waypoint (WaypointAccepted: %s)", v.Policy, orUnknown(v.Status.Reason))
		if v.Status.Message != "" {
			f.Message += ": " + v.Status.Message
		}
		f.Remedy = "fix its targetRefs or create the waypoint it names, and wait for WaypointAccepted=True before deleting what it replaces"
		return f, true
	default:
		return f, false
	}
	f.Message = fmt.Sprintf("%s: %s", v.Policy, v.Reason)
	return f, true
}

func routeFindings(v RouteVerdict, ns string) []plan.Finding {
	var out []plan.Finding
	if v.Error != "" {
		return []plan.Finding{{Code: CodePolicySpecInvalid, Severity: plan.Blocking, Object: v.Route,
			Message: fmt.Sprintf("%s: %s", v.Route, v.Error), Remedy: "fix the object so it decodes; it is kept as it is and never deleted by a plan"}}
	}
	if len(v.UnresolvedHosts) > 0 && v.Route.Namespace == ns {
		out = append(out, plan.Finding{Code: CodeRouteHostNotResolved, Severity: plan.Waivable, Object: v.Route,
			Message: fmt.Sprintf("%s names host %s, which matches no Service or ServiceEntry of the snapshot (a wildcard host, a host of a namespace that was not observed, a typo): readiness cannot tell whether ambient clients keep its rules",
				v.Route, strings.Join(v.UnresolvedHosts, ", ")),
			Remedy: "check what the host is: fix it if it is a typo, observe the namespace of its Service, or waive the code once you know that the move does not change what it does"})
	}
	if v.Route.Kind == "VirtualService" && v.MeshTraffic && len(v.Services) > 0 {
		out = append(out, plan.Finding{Code: CodeVirtualServiceNeedsHTTPRoute, Severity: plan.Waivable, Object: v.Route,
			Message: fmt.Sprintf("%s routes mesh traffic to %s; ambient clients ignore VirtualServices, so the rules apply only through an HTTPRoute on a waypoint", v.Route, refNames(v.Services)),
			Remedy:  "apply the proposed HTTPRoute once the waypoint is ready, then back up and delete the VirtualService"})
	}
	if len(v.Untranslatable) > 0 {
		out = append(out, plan.Finding{Code: CodeRouteHasNoGatewayAPIEquivalent, Severity: plan.Waivable, Object: v.Route,
			Message: fmt.Sprintf("%s uses what HTTPRoute cannot express: %s", v.Route, strings.Join(v.Untranslatable, "; ")),
			Remedy:  "decide by hand how to replace these fields (or keep them for sidecar clients) before migrating"})
	}
	return out
}

func containsRef(refs []mesh.ObjectRef, r mesh.ObjectRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

func refNames(refs []mesh.ObjectRef) string {
	var out []string
	for _, r := range refs {
		out = append(out, r.String())
	}
	return strings.Join(out, ", ")
}

func servicesIn(refs []mesh.ObjectRef, ns string) []string {
	var out []string
	for _, r := range refs {
		if r.Namespace == ns {
			out = append(out, r.Name)
		}
	}
	return out
}

// servicesOfPolicy lists the Services of the policy's namespace that select its workloads (every
// Service for a namespace-wide policy).
func servicesOfPolicy(s *mesh.Snapshot, p mesh.Policy) []string {
	var selector map[string]string
	wide := true
	if sel := selectorOf(p); sel != nil {
		selector, wide = sel, false
	}
	var out []string
	for _, svc := range s.Services {
		if svc.Namespace != p.Namespace || len(svc.Selector) == 0 {
			continue
		}
		if wide || selectsSameWorkloads(s, svc, selector) {
			out = append(out, svc.Name)
		}
	}
	return out
}

// attached is what AuthorizationPolicy and RequestAuthentication share.
type attached interface {
	GetSelector() *typev1beta1.WorkloadSelector
	GetTargetRef() *typev1beta1.PolicyTargetReference
	GetTargetRefs() []*typev1beta1.PolicyTargetReference
}

// selectorOf is the policy's matchLabels, nil for a namespace-wide policy (or one that does not
// decode).
func selectorOf(p mesh.Policy) map[string]string {
	msg, err := DecodePolicy(p)
	if err != nil {
		return nil
	}
	if a, ok := msg.(attached); ok && a.GetSelector() != nil {
		if m := a.GetSelector().GetMatchLabels(); len(m) > 0 {
			return m
		}
	}
	return nil
}

func targetRefsOf(p mesh.Policy) []*typev1beta1.PolicyTargetReference {
	msg, err := DecodePolicy(p)
	if err != nil {
		return nil
	}
	a, ok := msg.(attached)
	if !ok {
		return nil
	}
	refs := a.GetTargetRefs()
	if t := a.GetTargetRef(); t != nil {
		refs = append([]*typev1beta1.PolicyTargetReference{t}, refs...)
	}
	return refs
}

// targetServices lists the Services a targetRefs policy names, or every Service bound to the
// Gateway it names.
func targetServices(s *mesh.Snapshot, wv *waypointView, p mesh.Policy) []string {
	var out []string
	for _, t := range targetRefsOf(p) {
		switch t.GetKind() {
		case "Service":
			out = append(out, t.GetName())
		case "Gateway":
			for _, svc := range s.Services {
				if svc.Namespace != p.Namespace {
					continue
				}
				if r, ok := wv.forService(svc); ok && r.ref.Name == t.GetName() && r.ref.Namespace == p.Namespace {
					out = append(out, svc.Name)
				}
			}
		}
	}
	return out
}

// keptRules are the rules ztunnel still evaluates.
func keptRules(rules []RuleVerdict) []RuleVerdict {
	var out []RuleVerdict
	for _, r := range rules {
		if r.Outcome != RuleDropped && r.Outcome != RuleNoEffect {
			out = append(out, r)
		}
	}
	return out
}

func waypointNeed(s *mesh.Snapshot, wv *waypointView, ns string, needs map[string][]mesh.ObjectRef, neededBy []mesh.ObjectRef, add func(plan.Finding)) WaypointNeed {
	out := WaypointNeed{Needed: len(neededBy) > 0, NeededBy: uniqueRefs(neededBy)}
	if r, ok := wv.forTarget(ns, nil); ok {
		ref := r.ref
		out.Namespace = &ref
	}
	var missing []string
	notReady := map[string]bool{}
	for _, svc := range s.Services {
		if svc.Namespace != ns {
			continue
		}
		sw := ServiceWaypoint{Service: svc.Ref(), NeededBy: uniqueRefs(needs[svc.Name])}
		r, ok := wv.forService(svc)
		sw.From = r.from
		if ok {
			sw.Waypoint, sw.Exists = r.ref.String(), r.exists
			if g := wv.gateway(r.ref.Namespace, r.ref.Name); g != nil {
				sw.Ready = g.ReadyPods > 0
			}
			if !sw.Ready && r.from != FromOptions {
				notReady[sw.Waypoint] = true
			}
		} else if len(sw.NeededBy) > 0 {
			missing = append(missing, svc.Name)
		}
		out.Services = append(out.Services, sw)
	}
	if out.Needed && len(missing) > 0 {
		add(plan.Finding{Code: CodeWaypointNeededButMissing, Severity: plan.Waivable, Object: mesh.ObjectRef{Kind: "Namespace", Name: ns},
			Message:       fmt.Sprintf("Services %s of namespace %s need a waypoint (for %s) but will have none", strings.Join(missing, ", "), ns, refNames(out.NeededBy)),
			Remedy:        "create a waypoint (istioctl waypoint apply -n " + ns + ") and label the namespace or the Services istio.io/use-waypoint=<name>, or pass it as ReadinessOptions.Waypoint",
			RemedyOptions: []plan.RemedyOption{{Option: "ReadinessOptions.Waypoint"}}})
	} else if out.Needed && len(out.Services) == 0 && out.Namespace == nil {
		add(plan.Finding{Code: CodeWaypointNeededButMissing, Severity: plan.Waivable, Object: mesh.ObjectRef{Kind: "Namespace", Name: ns},
			Message:       fmt.Sprintf("namespace %s needs a waypoint (for %s) but none is configured", ns, refNames(out.NeededBy)),
			Remedy:        "create a waypoint and label the namespace istio.io/use-waypoint=<name>, or pass it as ReadinessOptions.Waypoint",
			RemedyOptions: []plan.RemedyOption{{Option: "ReadinessOptions.Waypoint"}}})
	}
	for _, wp := range sortedKeys(notReady) {
		wpNS, name, _ := strings.Cut(wp, "/")
		add(plan.Finding{Code: CodeWaypointNotReady, Severity: plan.Waivable, Object: mesh.ObjectRef{Kind: "Gateway", Namespace: wpNS, Name: name},
			Message: fmt.Sprintf("waypoint %s is named by istio.io/use-waypoint but %s", wp, notReadyWhy(wv.gateway(wpNS, name))),
			Remedy:  "create the waypoint (istioctl waypoint apply) and wait until its Gateway is Programmed before labelling the namespace for ambient"})
	}
	return out
}

func notReadyWhy(g *mesh.Gateway) string {
	if g == nil {
		return "no such waypoint Gateway is in the snapshot"
	}
	return fmt.Sprintf("it has %d ready pods", g.ReadyPods)
}

func uniqueRefs(in []mesh.ObjectRef) []mesh.ObjectRef {
	seen := map[mesh.ObjectRef]bool{}
	var out []mesh.ObjectRef
	for _, r := range in {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}
