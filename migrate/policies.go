package migrate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	securityv1 "istio.io/api/security/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// PolicyClass says what happens to a policy when its namespace moves from sidecars to ambient.
type PolicyClass string

// Policy classes. The AuthorizationPolicy rows follow convertAuthorizationPolicy and handleRule in
// istio/istio pilot/pkg/serviceregistry/ambient/authorization.go@1.30.3 (same on release-1.31 and
// master) and how ztunnel evaluates the result (istio/ztunnel src/rbac.rs@62d8265 Authorization.matches).
const (
	// KeepsWorking: ztunnel enforces the policy as the sidecar did.
	KeepsWorking PolicyClass = "keeps-working"
	// NeedsWaypoint: attached with targetRef(s), which ztunnel ignores ("TargetRef is not intended for
	// ztunnel"); only a waypoint (or gateway) that istiod bound it to enforces it.
	NeedsWaypoint PolicyClass = "needs-waypoint"
	// NotEnforced: a CUSTOM or AUDIT AuthorizationPolicy, or a RequestAuthentication, attached by
	// selector or namespace. istiod never sends it to ztunnel ("ztunnel does not support the CUSTOM
	// action"), so nothing enforces it until a targetRefs copy sits on a waypoint.
	NotEnforced PolicyClass = "not-enforced-without-waypoint"
	// DryRunIgnored: an AuthorizationPolicy with istio.io/dry-run=true; istiod does not send it to
	// ztunnel unless AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY is set (pilot/pkg/features/ambient.go),
	// so its dry-run results stop.
	DryRunIgnored PolicyClass = "dry-run-ignored"
	// DenyAllUnderZtunnel: an ALLOW policy whose every rule uses an L7 attribute. ztunnel drops each
	// such rule, leaving an ALLOW policy that matches nothing: its workloads deny every request.
	DenyAllUnderZtunnel PolicyClass = "deny-all-under-ztunnel"
	// LosesL7Rules: some rules are lost. ALLOW: the rules with L7 attributes are dropped, so the
	// requests only they allowed are denied. DENY: rules (or alternatives) left with nothing ztunnel
	// can match never match, so the requests only they denied are allowed (fails open).
	LosesL7Rules PolicyClass = "loses-l7-rules"
	// BroaderDeny: a DENY policy whose rules keep matching after ztunnel strips the L7 fields, and so
	// deny more than they should (for example every request on the port, not only POST).
	BroaderDeny PolicyClass = "broader-deny"
	// BroaderAllow: an ALLOW policy with fields ztunnel leaves out without a word (trustDomains), so
	// its rules allow more than they should.
	BroaderAllow PolicyClass = "broader-allow"
	// NoEffect: a DENY policy whose every rule is left with nothing ztunnel can match: it denies
	// nothing (istio/istio#61126, fixed status message on master: "will have no effect").
	NoEffect PolicyClass = "no-effect"
	// PrincipalsMoveToWaypoint: an L4 policy that matches callers (principals, namespaces, service
	// accounts, source IPs) on workloads a waypoint will serve. The destination ztunnel then sees the
	// waypoint as the caller (istio/ztunnel src/proxy/inbound.rs: the peer certificate's identity),
	// so the caller rules must move to a targetRefs policy on the waypoint.
	PrincipalsMoveToWaypoint PolicyClass = "principals-move-to-waypoint"
	// BlocksMigration: a PeerAuthentication with mode DISABLE (namespace, workload, mesh-wide or on a
	// port); the istio.io migration guide requires none before migrating.
	BlocksMigration PolicyClass = "blocks-migration"
	// Unknown: the spec does not decode into its Istio type (Error says why). Nothing is assumed about
	// it and nothing may delete it.
	Unknown PolicyClass = "unknown"
	// Unaffected: nothing changes for it here (VirtualServices and DestinationRules are judged by
	// ClassifyRoutes).
	Unaffected PolicyClass = "unaffected"
)

// RuleOutcome says what ztunnel does with one rule of an AuthorizationPolicy.
type RuleOutcome string

// Rule outcomes.
const (
	// RuleKept: enforced as written.
	RuleKept RuleOutcome = "kept"
	// RuleDropped: an ALLOW rule with an L7 attribute; istiod leaves the whole rule out
	// (handleRule: "L7 policies never match for ALLOW").
	RuleDropped RuleOutcome = "dropped"
	// RuleBroadened: fields ztunnel cannot evaluate were removed and the rule matches more.
	RuleBroadened RuleOutcome = "broadened"
	// RuleNarrowed: DENY only; some alternatives (to or from entries) held nothing but L7 fields and
	// never match, so the rule denies less.
	RuleNarrowed RuleOutcome = "narrowed"
	// RuleNoEffect: a clause (to, from or a when condition) is left with nothing to match; ztunnel
	// skips empty matches, so the rule never matches (istio/ztunnel src/rbac.rs "empty clause", since
	// f385be46, ztunnel 1.18).
	RuleNoEffect RuleOutcome = "no-effect"
)

// RuleVerdict is what ztunnel does with one rule.
type RuleVerdict struct {
	// Index of the rule in spec.rules.
	Index   int         `json:"index"`
	Outcome RuleOutcome `json:"outcome"`
	// L7 lists the attributes ztunnel cannot evaluate, as paths in the rule
	// ("to[0].operation.methods", "when[1]:request.headers[x-user]").
	L7 []string `json:"l7,omitempty"`
	// Ignored lists fields istiod leaves out for ztunnel without saying so (trustDomains).
	Ignored []string `json:"ignored,omitempty"`
	// Callers lists the L4 fields that match the caller (principals, namespaces, service accounts,
	// source IPs); a waypoint in the path takes the caller's place.
	Callers []string `json:"callers,omitempty"`
	// AlsoBroadened is true when a narrowed rule also lost fields in the alternatives it keeps.
	AlsoBroadened bool `json:"alsoBroadened,omitempty"`
}

// WaypointStatus is istiod's WaypointAccepted condition on a targetRefs policy
// (pilot/pkg/model/service.go and pilot/pkg/serviceregistry/ambient/policies.go@release-1.31).
type WaypointStatus struct {
	// Accepted is true when the condition is True for the policy's current generation.
	Accepted bool `json:"accepted"`
	// Reason: Accepted, PartiallyInvalid, Invalid, TargetNotFound, AncestorNotBound; "" when istiod
	// wrote no condition; "Stale" when it describes an older generation.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// PolicyVerdict is the class of one policy with the reason and what to do.
type PolicyVerdict struct {
	Policy mesh.ObjectRef `json:"policy"`
	Class  PolicyClass    `json:"class"`
	Reason string         `json:"reason"`
	Remedy string         `json:"remedy,omitempty"`
	// Action of an AuthorizationPolicy (ALLOW when unset).
	Action string `json:"action,omitempty"`
	// Rules says rule by rule what ztunnel does (AuthorizationPolicies attached by selector or
	// namespace).
	Rules []RuleVerdict `json:"rules,omitempty"`
	// Waypoints that will serve the policy's workloads ("namespace/name"), for caller rules.
	Waypoints []string `json:"waypoints,omitempty"`
	// Status is istiod's WaypointAccepted condition (targetRefs policies only).
	Status *WaypointStatus `json:"status,omitempty"`
	// Error is why the spec does not decode (class Unknown).
	Error string `json:"error,omitempty"`
}

// ClassifyPolicies classifies the AuthorizationPolicies, PeerAuthentications and
// RequestAuthentications of the namespaces (every namespace when none is given, plus the mesh-wide
// ones of the root namespace: where istiod runs) by what moving to ambient does to them, with the
// waypoints the snapshot already routes through. The result is sorted by namespace, kind and name.
func ClassifyPolicies(s *mesh.Snapshot, namespaces ...string) []PolicyVerdict {
	return classifyPolicies(s, newWaypointView(s, ""), "", namespaces)
}

func classifyPolicies(s *mesh.Snapshot, wv *waypointView, root string, namespaces []string) []PolicyVerdict {
	want := map[string]bool{}
	for _, n := range namespaces {
		want[n] = true
	}
	var out []PolicyVerdict
	for _, p := range s.Policies {
		if p.Kind == "VirtualService" || p.Kind == "DestinationRule" {
			continue
		}
		if len(want) > 0 && !want[p.Namespace] && !isRootNamespace(s, root, p.Namespace) {
			continue
		}
		out = append(out, classify(p, wv))
	}
	sortVerdicts(out)
	return out
}

func sortVerdicts(out []PolicyVerdict) {
	sort.Slice(out, func(i, j int) bool { return out[i].Policy.Less(out[j].Policy) })
}

// isRootNamespace: the mesh root namespace is root when given, else any namespace istiod runs in
// (meshConfig.rootNamespace defaults to istiod's namespace).
func isRootNamespace(s *mesh.Snapshot, root, ns string) bool {
	if root != "" {
		return ns == root
	}
	for _, r := range s.Revisions {
		if r.Namespace == ns {
			return true
		}
	}
	return false
}

func classify(p mesh.Policy, wv *waypointView) PolicyVerdict {
	v := PolicyVerdict{Policy: p.Ref(), Class: Unaffected}
	msg, err := DecodePolicy(p)
	if err != nil {
		v.Class, v.Error = Unknown, err.Error()
		v.Reason = "the spec does not decode, so what ztunnel does with it cannot be told"
		v.Remedy = "fix the policy so it decodes; it is kept as it is and never deleted by a plan"
		return v
	}
	switch m := msg.(type) {
	case *securityv1.AuthorizationPolicy:
		classifyAuthorization(&v, p, m, wv)
	case *securityv1.PeerAuthentication:
		classifyPeerAuthentication(&v, m)
	case *securityv1.RequestAuthentication:
		if len(m.GetTargetRefs()) > 0 || m.GetTargetRef() != nil {
			v.Class = NeedsWaypoint
			v.Reason = "attached with targetRefs: a waypoint or gateway validates the tokens"
			v.Remedy = "make sure the target has a waypoint before relying on it"
		} else {
			// Nothing in pilot/pkg/serviceregistry/ambient converts RequestAuthentication for ztunnel.
			v.Class = NotEnforced
			v.Reason = "JWT validation needs an HTTP proxy; ztunnel never receives RequestAuthentication, so without a waypoint requests with bad tokens pass"
			v.Remedy = "copy it as a targetRefs RequestAuthentication on the waypoint that will serve these workloads"
		}
	}
	return v
}

func classifyPeerAuthentication(v *PolicyVerdict, m *securityv1.PeerAuthentication) {
	disabled := m.GetMtls().GetMode() == securityv1.PeerAuthentication_MutualTLS_DISABLE
	var ports []string
	for port, pm := range m.GetPortLevelMtls() {
		if pm.GetMode() == securityv1.PeerAuthentication_MutualTLS_DISABLE {
			ports = append(ports, strconv.FormatUint(uint64(port), 10))
		}
	}
	sort.Strings(ports)
	mode := m.GetMtls().GetMode().String()
	switch {
	case disabled || len(ports) > 0:
		v.Class = BlocksMigration
		where := "mode DISABLE"
		if len(ports) > 0 {
			where = "mode DISABLE on port " + strings.Join(ports, ", ")
		}
		v.Reason = where + ": the migration guide requires no PeerAuthentication DISABLE; ztunnels always speak mTLS to each other"
		v.Remedy = "switch it to PERMISSIVE (or STRICT) before migrating the namespace"
	case len(m.GetPortLevelMtls()) > 0 && m.GetSelector() != nil:
		// istiod turns a workload policy's port-level modes into a ztunnel policy
		// (istio/istio@86c9f01fd735 pilot/pkg/serviceregistry/ambient/authorization.go,
		// convertPeerAuthentication), so they keep applying.
		v.Reason = "mode " + mode + " with port-level modes: istiod converts them for ztunnel, which honours them"
	default:
		v.Reason = "mode " + mode + ": ztunnel honours it"
	}
}

// Attribute sets of authorization.go@1.30.3: httpOperations, httpSources and l4WhenAttributes.
var (
	l4WhenKeys     = map[string]bool{"source.ip": true, "source.namespace": true, "source.principal": true, "destination.ip": true, "destination.port": true}
	callerWhenKeys = map[string]bool{"source.ip": true, "source.namespace": true, "source.principal": true}
)

type clause struct {
	entries   int // alternatives in the clause
	effective int // alternatives left with something ztunnel matches
	stripped  int // effective alternatives that lost fields
}

func classifyAuthorization(v *PolicyVerdict, p mesh.Policy, m *securityv1.AuthorizationPolicy, wv *waypointView) {
	v.Action = m.GetAction().String()
	if len(m.GetTargetRefs()) > 0 || m.GetTargetRef() != nil {
		v.Class = NeedsWaypoint
		v.Status = waypointStatus(p)
		v.Reason = "attached with targetRefs: ztunnel ignores it; the waypoint or gateway istiod binds it to enforces it"
		v.Remedy = "make sure istiod accepted it on a waypoint (status WaypointAccepted=True) before relying on it"
		if v.Status != nil && !v.Status.Accepted {
			v.Reason += "; istiod has not accepted it on a waypoint (" + orUnknown(v.Status.Reason) + ")"
		}
		return
	}
	switch m.GetAction() {
	case securityv1.AuthorizationPolicy_CUSTOM, securityv1.AuthorizationPolicy_AUDIT:
		v.Class = NotEnforced
		v.Reason = fmt.Sprintf("%s policies are never sent to ztunnel: without a waypoint nothing enforces it", v.Action)
		v.Remedy = fmt.Sprintf("copy it (action %s and its provider) as a targetRefs policy on the waypoint that will serve these workloads", v.Action)
		return
	}
	if dry, err := strconv.ParseBool(p.Annotations["istio.io/dry-run"]); err == nil && dry {
		v.Class = DryRunIgnored
		v.Reason = "a dry-run policy: istiod does not send it to ztunnel unless AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY is set"
		v.Remedy = "enable the feature on istiod, or move the dry run to a targetRefs policy on a waypoint"
		return
	}
	deny := m.GetAction() == securityv1.AuthorizationPolicy_DENY
	counts := map[RuleOutcome]int{}
	callers := false
	for i, r := range m.GetRules() {
		rv := classifyRule(i, r, deny)
		v.Rules = append(v.Rules, rv)
		counts[rv.Outcome]++
		if len(rv.Callers) > 0 && rv.Outcome != RuleDropped && rv.Outcome != RuleNoEffect {
			callers = true
		}
	}
	n := len(v.Rules)
	scope := "its selector's workloads"
	if m.GetSelector() == nil {
		scope = "every workload of the namespace"
	}
	switch {
	case !deny && counts[RuleDropped] == n && n > 0:
		v.Class = DenyAllUnderZtunnel
		v.Reason = fmt.Sprintf("every rule uses L7 attributes (%s); ztunnel drops them all and %s deny every request", strings.Join(allL7(v.Rules), ", "), scope)
		v.Remedy = "copy it as a targetRefs policy on a waypoint, then back it up and delete it right after the namespace is labelled for ambient"
	case !deny && counts[RuleDropped] > 0:
		v.Class = LosesL7Rules
		v.Reason = fmt.Sprintf("rules %s use L7 attributes (%s); ztunnel drops them, so the requests only they allowed are denied on %s", ruleList(v.Rules, RuleDropped), strings.Join(allL7(v.Rules), ", "), scope)
		v.Remedy = "move the L7 rules to a targetRefs policy on a waypoint and keep the L4 rules here"
	case !deny && counts[RuleBroadened] > 0:
		v.Class = BroaderAllow
		v.Reason = fmt.Sprintf("rules %s use fields ztunnel leaves out (%s), so they allow more than written", ruleList(v.Rules, RuleBroadened), strings.Join(allIgnored(v.Rules), ", "))
		v.Remedy = "enforce these fields on a waypoint (targetRefs policy), or express them with principals"
	case deny && counts[RuleNoEffect] == n && n > 0:
		v.Class = NoEffect
		v.Reason = fmt.Sprintf("every rule is left with nothing ztunnel can match once its L7 attributes (%s) are removed: the policy denies nothing", strings.Join(allL7(v.Rules), ", "))
		v.Remedy = "copy it as a targetRefs policy on a waypoint before migrating; until then the requests it denied are allowed"
	case deny && counts[RuleNoEffect]+counts[RuleNarrowed] > 0:
		v.Class = LosesL7Rules
		v.Reason = fmt.Sprintf("rules %s match only on L7 attributes (%s) in some clause and stop matching, so the requests only they denied are allowed", ruleList(v.Rules, RuleNoEffect, RuleNarrowed), strings.Join(allL7(v.Rules), ", "))
		if counts[RuleBroadened] > 0 {
			v.Reason += fmt.Sprintf("; rules %s deny more than written", ruleList(v.Rules, RuleBroadened))
		}
		v.Remedy = "move the L7 rules to a targetRefs DENY policy on a waypoint"
	case deny && counts[RuleBroadened] > 0:
		v.Class = BroaderDeny
		v.Reason = fmt.Sprintf("ztunnel strips the L7 fields (%s) of rules %s, which then deny more than written on %s", strings.Join(append(allL7(v.Rules), allIgnored(v.Rules)...), ", "), ruleList(v.Rules, RuleBroadened), scope)
		v.Remedy = "move the L7 rules to a targetRefs DENY policy on a waypoint and keep only L4 rules here"
	default:
		v.Class = KeepsWorking
		v.Reason = fmt.Sprintf("L4 only (%s): ztunnel enforces it", v.Action)
	}
	if callers {
		v.Waypoints = wv.forPolicy(p.Namespace, m.GetSelector().GetMatchLabels(), m.GetSelector() == nil)
	}
	if len(v.Waypoints) > 0 && v.Class == KeepsWorking {
		v.Class = PrincipalsMoveToWaypoint
		v.Reason = fmt.Sprintf("L4 rules %s match callers, but waypoint %s will stand between callers and these workloads and ztunnel will see the waypoint's identity instead",
			ruleListCallers(v.Rules), strings.Join(v.Waypoints, ", "))
		v.Remedy = "move the caller rules to a targetRefs policy on the waypoint, and allow the waypoint's service account here"
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "no WaypointAccepted condition yet"
	}
	return s
}

func waypointStatus(p mesh.Policy) *WaypointStatus {
	c := p.Condition(mesh.ConditionWaypointAccepted)
	if c == nil {
		return &WaypointStatus{}
	}
	st := &WaypointStatus{Accepted: c.Status == "True", Reason: c.Reason, Message: c.Message}
	if p.Generation > 0 && c.ObservedGeneration > 0 && c.ObservedGeneration < p.Generation {
		st.Accepted, st.Reason = false, "Stale"
		st.Message = fmt.Sprintf("the condition describes generation %d; the policy is at %d", c.ObservedGeneration, p.Generation)
	}
	return st
}

// classifyRule follows handleRule (authorization.go@1.30.3): the to, from and each when become
// clauses that must all match; inside a clause, any alternative may match. ALLOW drops a rule with
// any L7 attribute; DENY keeps it with the L7 fields removed, and an alternative left empty is
// skipped by ztunnel (rbac.rs: "empty clause").
func classifyRule(i int, r *securityv1.Rule, deny bool) RuleVerdict {
	rv := RuleVerdict{Index: i, Outcome: RuleKept}
	var clauses []clause
	if len(r.GetTo()) > 0 {
		c := clause{entries: len(r.GetTo())}
		for j, to := range r.GetTo() {
			op := to.GetOperation()
			at := fmt.Sprintf("to[%d].operation.", j)
			l7 := presentFields(at, map[string][]string{"hosts": op.GetHosts(), "notHosts": op.GetNotHosts(), "methods": op.GetMethods(),
				"notMethods": op.GetNotMethods(), "paths": op.GetPaths(), "notPaths": op.GetNotPaths()})
			rv.L7 = append(rv.L7, l7...)
			l4 := len(op.GetPorts()) + len(op.GetNotPorts())
			c.count(l4 > 0, len(l7) > 0)
		}
		clauses = append(clauses, c)
	}
	if len(r.GetFrom()) > 0 {
		c := clause{entries: len(r.GetFrom())}
		for j, from := range r.GetFrom() {
			src := from.GetSource()
			at := fmt.Sprintf("from[%d].source.", j)
			l7 := presentFields(at, map[string][]string{"remoteIpBlocks": src.GetRemoteIpBlocks(), "notRemoteIpBlocks": src.GetNotRemoteIpBlocks(),
				"requestPrincipals": src.GetRequestPrincipals(), "notRequestPrincipals": src.GetNotRequestPrincipals()})
			ignored := presentFields(at, map[string][]string{"trustDomains": src.GetTrustDomains(), "notTrustDomains": src.GetNotTrustDomains()})
			callers := presentFields(at, map[string][]string{"principals": src.GetPrincipals(), "notPrincipals": src.GetNotPrincipals(),
				"namespaces": src.GetNamespaces(), "notNamespaces": src.GetNotNamespaces(), "serviceAccounts": src.GetServiceAccounts(),
				"notServiceAccounts": src.GetNotServiceAccounts(), "ipBlocks": src.GetIpBlocks(), "notIpBlocks": src.GetNotIpBlocks()})
			rv.L7 = append(rv.L7, l7...)
			rv.Ignored = append(rv.Ignored, ignored...)
			rv.Callers = append(rv.Callers, callers...)
			c.count(len(callers) > 0, len(l7)+len(ignored) > 0)
		}
		clauses = append(clauses, c)
	}
	for j, w := range r.GetWhen() {
		at := fmt.Sprintf("when[%d]:%s", j, w.GetKey())
		has := len(w.GetValues())+len(w.GetNotValues()) > 0
		c := clause{entries: 1}
		if l4WhenKeys[w.GetKey()] {
			if callerWhenKeys[w.GetKey()] {
				rv.Callers = append(rv.Callers, at)
			}
			c.count(has, false)
		} else {
			rv.L7 = append(rv.L7, at)
			c.count(false, true)
		}
		clauses = append(clauses, c)
	}
	if !deny && len(rv.L7) > 0 {
		rv.Outcome = RuleDropped
		return rv
	}
	narrowed, broadened := false, false
	for _, c := range clauses {
		switch {
		case c.effective == 0:
			rv.Outcome = RuleNoEffect
			if !deny {
				rv.Outcome = RuleDropped // an ALLOW rule that can never match allows nothing
			}
			return rv
		case c.effective < c.entries:
			narrowed = true
		}
		if c.stripped > 0 {
			broadened = true
		}
	}
	switch {
	case narrowed && deny:
		rv.Outcome, rv.AlsoBroadened = RuleNarrowed, broadened
	case broadened:
		rv.Outcome = RuleBroadened
	}
	return rv
}

func (c *clause) count(l4, lost bool) {
	if l4 {
		c.effective++
		if lost {
			c.stripped++
		}
	}
}

func presentFields(prefix string, fields map[string][]string) []string {
	var out []string
	for name, vals := range fields {
		if len(vals) > 0 {
			out = append(out, prefix+name)
		}
	}
	sort.Strings(out)
	return out
}

// attribute turns "to[0].operation.methods" or "when[1]:request.headers[x]" into "methods" or
// "request.headers[x]".
func attribute(path string) string {
	if i := strings.Index(path, ":"); i >= 0 && strings.HasPrefix(path, "when[") {
		return path[i+1:]
	}
	return path[strings.LastIndex(path, ".")+1:]
}

func allL7(rules []RuleVerdict) []string {
	return attributes(rules, func(r RuleVerdict) []string { return r.L7 })
}

func allIgnored(rules []RuleVerdict) []string {
	return attributes(rules, func(r RuleVerdict) []string { return r.Ignored })
}

func attributes(rules []RuleVerdict, of func(RuleVerdict) []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rules {
		for _, p := range of(r) {
			if a := attribute(p); !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

func ruleList(rules []RuleVerdict, outcomes ...RuleOutcome) string {
	var out []string
	for _, r := range rules {
		for _, o := range outcomes {
			if r.Outcome == o {
				out = append(out, strconv.Itoa(r.Index))
			}
		}
	}
	return strings.Join(out, ", ")
}

func ruleListCallers(rules []RuleVerdict) string {
	var out []string
	for _, r := range rules {
		if len(r.Callers) > 0 {
			out = append(out, strconv.Itoa(r.Index))
		}
	}
	return strings.Join(out, ", ")
}
