package migrate

import (
	"encoding/json"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"
	securityv1 "istio.io/api/security/v1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Proposal is an object the migration would create where the translation is mechanical: a
// targetRefs AuthorizationPolicy or RequestAuthentication for a waypoint, or an HTTPRoute for a
// VirtualService. Object is complete (apiVersion, kind, metadata, spec) and ready to apply; nothing
// here applies it; a plan step does, when the caller chooses to.
type Proposal struct {
	// For is the sidecar-era object the proposal replaces.
	For mesh.ObjectRef `json:"for"`
	// Object is the proposed object as JSON data.
	Object map[string]any `json:"object"`
	// Notes say what could not be carried over, and what to check.
	Notes []string `json:"notes,omitempty"`
}

// Ref names the proposed object.
func (p Proposal) Ref() mesh.ObjectRef {
	md, _ := p.Object["metadata"].(map[string]any)
	kind, _ := p.Object["kind"].(string)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return mesh.ObjectRef{Kind: kind, Namespace: ns, Name: name}
}

func structToMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	err = json.Unmarshal(b, &out)
	return out, err
}

// needsCopyOnWaypoint lists the classes whose policy must be enforced on a waypoint to keep its
// meaning.
var needsCopyOnWaypoint = map[PolicyClass]bool{
	DenyAllUnderZtunnel: true, LosesL7Rules: true, BroaderDeny: true, BroaderAllow: true, NoEffect: true,
	NotEnforced: true, DryRunIgnored: true, PrincipalsMoveToWaypoint: true,
}

// policyTargets finds what a targetRefs copy of a policy should attach to: the waypoint Gateway for
// a namespace-wide policy whose namespace uses a waypoint of its own namespace, else the Services
// that select the policy's workloads and are bound to a waypoint. Only objects that exist in the
// snapshot, or the waypoint ReadinessOptions says will be created, are named.
func policyTargets(wv *waypointView, ns string, selector map[string]string, namespaceWide bool) (refs []*typev1beta1.PolicyTargetReference, notes []string) {
	if namespaceWide {
		if r, ok := wv.forTarget(ns, nil); ok && r.ref.Namespace == ns && (r.exists || r.from == FromOptions) {
			return []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: r.ref.Name}}, nil
		}
	}
	seen := map[string]bool{}
	for _, svc := range wv.s.Services {
		if svc.Namespace != ns || len(svc.Selector) == 0 || seen[svc.Name] {
			continue
		}
		if !namespaceWide && !selectsSameWorkloads(wv.s, svc, selector) {
			continue
		}
		r, ok := wv.forService(svc)
		switch {
		case !ok:
			notes = append(notes, fmt.Sprintf("Service %s is bound to no waypoint, so a targetRef to it would not be accepted (AncestorNotBound); label it istio.io/use-waypoint", svc.Ref()))
			continue
		case !r.exists && r.from != FromOptions:
			notes = append(notes, fmt.Sprintf("Service %s uses waypoint %s, which is not in the snapshot; create it first", svc.Ref(), r.ref))
		}
		seen[svc.Name] = true
		refs = append(refs, &typev1beta1.PolicyTargetReference{Group: "", Kind: "Service", Name: svc.Name})
	}
	if len(refs) > 16 {
		notes = append(notes, fmt.Sprintf("%d Services exceed the 16 targetRefs a policy may hold; split the policy", len(refs)))
	}
	if len(refs) > 0 && !namespaceWide {
		notes = append(notes, "targetRefs to Services cover traffic addressed to the Services; traffic to pod IPs passes a waypoint only with istio.io/waypoint-for: workload or all")
	}
	return refs, notes
}

// selectsSameWorkloads: the Service selects a workload of the snapshot that the policy selector
// also selects.
func selectsSameWorkloads(s *mesh.Snapshot, svc mesh.Service, selector map[string]string) bool {
	for _, w := range s.Workloads {
		if w.Namespace == svc.Namespace && subset(svc.Selector, w.Labels) && subset(selector, w.Labels) {
			return true
		}
	}
	return false
}

// proposalName picks a name no policy of that kind in the namespace has.
func proposalName(s *mesh.Snapshot, kind, ns, base string) string {
	return freeName(base, func(name string) bool {
		for _, p := range s.Policies {
			if p.Kind == kind && p.Namespace == ns && p.Name == name {
				return true
			}
		}
		return false
	})
}

// freeName is base-waypoint, else base-waypoint-2, -3, ...: the first that taken refuses.
func freeName(base string, taken func(string) bool) string {
	name := base + "-waypoint"
	for n := 2; taken(name); n++ {
		name = fmt.Sprintf("%s-waypoint-%d", base, n)
	}
	return name
}

// securityProposal writes the targetRefs copy of an AuthorizationPolicy or RequestAuthentication:
// the same action, provider, rules (all of them) or JWT rules, attached to what policyTargets found.
func securityProposal(s *mesh.Snapshot, wv *waypointView, p mesh.Policy, v PolicyVerdict) (*Proposal, []string) {
	if !needsCopyOnWaypoint[v.Class] {
		return nil, nil
	}
	msg, err := DecodePolicy(p)
	if err != nil {
		return nil, nil
	}
	var selector map[string]string
	var out proto.Message
	switch m := msg.(type) {
	case *securityv1.AuthorizationPolicy:
		c := proto.Clone(m).(*securityv1.AuthorizationPolicy)
		selector = c.GetSelector().GetMatchLabels()
		refs, notes := policyTargets(wv, p.Namespace, selector, c.GetSelector() == nil)
		if len(refs) == 0 {
			return nil, append(notes, fmt.Sprintf("no waypoint or bound Service to attach a copy of %s to; create a waypoint (or set ReadinessOptions.Waypoint) and label the namespace or Services", p.Ref()))
		}
		c.Selector, c.TargetRef, c.TargetRefs = nil, nil, refs
		out = c
		return finishProposal(s, p, out, notes, v)
	case *securityv1.RequestAuthentication:
		c := proto.Clone(m).(*securityv1.RequestAuthentication)
		selector = c.GetSelector().GetMatchLabels()
		refs, notes := policyTargets(wv, p.Namespace, selector, c.GetSelector() == nil)
		if len(refs) == 0 {
			return nil, append(notes, fmt.Sprintf("no waypoint or bound Service to attach a copy of %s to; create a waypoint (or set ReadinessOptions.Waypoint) and label the namespace or Services", p.Ref()))
		}
		c.Selector, c.TargetRef, c.TargetRefs = nil, nil, refs
		out = c
		return finishProposal(s, p, out, notes, v)
	}
	return nil, nil
}

func finishProposal(s *mesh.Snapshot, p mesh.Policy, m proto.Message, notes []string, v PolicyVerdict) (*Proposal, []string) {
	spec, err := toMap(m)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: cannot write the copy: %v", p.Ref(), err)}
	}
	md := map[string]any{
		"name":        proposalName(s, p.Kind, p.Namespace, p.Name),
		"namespace":   p.Namespace,
		"annotations": map[string]any{annotationReplaces: p.Ref().String()},
	}
	if dry, ok := p.Annotations["istio.io/dry-run"]; ok {
		md["annotations"].(map[string]any)["istio.io/dry-run"] = dry
	}
	if p.RevisionLabel != "" {
		md["labels"] = map[string]any{mesh.LabelRev: p.RevisionLabel}
	}
	if v.Class == PrincipalsMoveToWaypoint {
		notes = append(notes, fmt.Sprintf("keep %s for traffic that bypasses the waypoint, and allow the waypoint's service account in it", p.Ref()))
	}
	sort.Strings(notes)
	return &Proposal{For: p.Ref(), Object: map[string]any{"apiVersion": "security.istio.io/v1", "kind": p.Kind, "metadata": md, "spec": spec}, Notes: notes}, nil
}
