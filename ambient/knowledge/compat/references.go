package compat

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// referenceRules checks that every reference in the mesh resolves, and reports each one that
// dangles with both ends and what is broken by it now, before any change. Tags, namespaces, the
// default revision and gateways are checked where their other rules are (checkTag,
// revisionRules, checkGateways); this file adds the rest:
//
//   - a workload's pods and a policy labelled istio.io/rev with neither a revision nor a tag;
//   - a ztunnel pinned to a revision that does not exist, and an injector whose revision has no
//     istiod;
//   - istio.io/use-waypoint (and -namespace) on a namespace, Service or workload naming no Gateway,
//     a Gateway that is no waypoint, or a waypoint that does not take that kind of traffic;
//   - a policy's targetRefs naming a Gateway or Service that does not exist;
//   - a trust-list entry that only matches a running ztunnel once its spaces are trimmed;
//   - a node labelled with a Karpenter NodePool that does not exist.
func referenceRules(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	out = append(out, checkRevisionLabels(s)...)
	out = append(out, checkZtunnelPins(s)...)
	out = append(out, checkInjectors(s)...)
	out = append(out, checkWaypointReferences(s)...)
	out = append(out, checkTargetRefs(s)...)
	out = append(out, checkTrustEntries(s)...)
	out = append(out, checkNodePoolLabels(s)...)
	return out
}

// checkRevisionLabels: a pod's istio.io/rev selects the injector of that revision or tag
// (istio/istio@1.30.3: manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml,
// objectSelector on istio.io/rev), so with neither new pods get no sidecar. A config object labelled
// istio.io/rev is read only by the istiod whose revision has exactly that name: tags do not count
// (istio/istio@eed52ebb66ad: pilot/pkg/config/kube/crdclient/client.go inRevision calls
// pkg/config/model.go LabelsInRevision, not LabelsInRevisionOrTags), so labelled with a tag or a missing revision it is
// enforced by nobody.
func checkRevisionLabels(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	for _, w := range s.Workloads {
		rev := w.PodRevisionLabel
		if rev == "" || s.ResolveRevision(rev) != "" {
			continue
		}
		out = append(out, plan.Finding{Code: plan.CodeWorkloadRevisionMissing, Severity: plan.Waivable, Object: w.Ref(),
			Message: fmt.Sprintf("the pods of %s are labelled istio.io/rev=%s, which is neither a revision (%s) nor a tag (%s): no injector selects them, so pods it creates now start without a sidecar",
				w.Ref(), rev, listOrNone(s.RevisionNames()), listOrNone(s.TagNames())),
			Remedy:  fmt.Sprintf("label its pod template istio.io/rev=<revision or tag> (kubectl -n %s edit %s %s), or create tag %q", w.Namespace, strings.ToLower(w.Kind), w.Name, rev),
			Details: map[string]string{"revision": rev}})
	}
	for _, p := range s.Policies {
		rev := p.RevisionLabel
		if _, ok := s.Revision(rev); rev == "" || ok {
			continue
		}
		what := "which is no revision"
		if t, isTag := s.Tag(rev); isTag {
			what = fmt.Sprintf("which is a tag (of revision %s), and config objects follow only a revision's own name, not its tags", t.Revision)
		}
		out = append(out, plan.Finding{Code: plan.CodePolicyRevisionMissing, Severity: plan.Waivable, Object: p.Ref(),
			Message: fmt.Sprintf("%s is labelled istio.io/rev=%s, %s: only an istiod of revision %s would read it, so no istiod enforces it now (revisions: %s)", p.Ref(), rev, what, rev, listOrNone(s.RevisionNames())),
			Remedy:  fmt.Sprintf("kubectl -n %s label %s %s istio.io/rev- (every revision processes it) or istio.io/rev=<revision> --overwrite", p.Namespace, strings.ToLower(p.Kind), p.Name),
			Details: map[string]string{"revision": rev}})
	}
	return out
}

// checkZtunnelPins: the ztunnel chart points a ztunnel pinned to revision r at istiod-r for xDS and
// certificates (istio/istio@1.30.3: manifests/charts/ztunnel/templates/daemonset.yaml, XDS_ADDRESS
// and CA_ADDRESS), a Service only that revision's chart creates.
func checkZtunnelPins(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	for _, z := range s.Ztunnels {
		if z.Revision == "" || s.ResolveRevision(z.Revision) != "" || len(s.Revisions) == 0 {
			continue
		}
		out = append(out, plan.Finding{Code: plan.CodeZtunnelRevisionMissing, Severity: plan.Blocking, Object: z.Ref(), Component: z.Component(),
			Related: []mesh.ObjectRef{{Kind: "Service", Namespace: z.Namespace, Name: "istiod-" + z.Revision}},
			Message: fmt.Sprintf("ztunnel %s/%s is pinned to revision %s (istio.io/rev), which has no istiod (revisions: %s): it asks istiod-%s for configuration and certificates, which nothing serves, so ztunnel pods that restart cannot serve their nodes",
				z.Namespace, z.Name, z.Revision, listOrNone(s.RevisionNames()), z.Revision),
			Remedy:  fmt.Sprintf("helm upgrade %s istio/ztunnel -n %s --reuse-values --set revision=<running revision> (a rolling restart of ztunnel), or reinstall revision %s", orName(z.HelmRelease, "ztunnel"), z.Namespace, z.Revision),
			Details: map[string]string{"revision": z.Revision}})
	}
	return out
}

func orName(name, fallback string) string {
	if name == "" {
		return fallback
	}
	return name
}

// checkInjectors: a revision's own injector calls istiod-<rev> with failurePolicy Fail
// (istio/istio@1.30.3: manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml),
// so once that istiod is gone every pod it selects is refused. Tag injectors are the tag rules'.
func checkInjectors(s *mesh.Snapshot) []plan.Finding {
	if len(s.Revisions) == 0 {
		return nil // ISTIOD_MISSING says it
	}
	var out []plan.Finding
	for _, inj := range s.Injectors {
		if inj.Tag != "" || inj.Revision == "" {
			continue
		}
		if _, ok := s.Revision(inj.Revision); ok {
			continue
		}
		out = append(out, plan.Finding{Code: plan.CodeInjectorRevisionMissing, Severity: plan.Blocking,
			Object: mesh.ObjectRef{Kind: "MutatingWebhookConfiguration", Name: inj.Name},
			Message: fmt.Sprintf("injector %s serves revision %s, which has no istiod: its webhooks call %s with failurePolicy Fail, so every new pod it selects (%s) is refused, pods a drain evicts among them",
				inj.Name, inj.Revision, orUnknown(inj.TargetService), listOrNone(inj.Selects)),
			Remedy:  fmt.Sprintf("back it up and delete it once nothing should be injected by %s (kubectl get mutatingwebhookconfiguration %s -o yaml > %s.yaml; kubectl delete mutatingwebhookconfiguration %s), or reinstall revision %s", inj.Revision, inj.Name, inj.Name, inj.Name, inj.Revision),
			Details: map[string]string{"revision": inj.Revision, "injector": inj.Name}})
	}
	return out
}

// checkWaypointReferences: istiod resolves istio.io/use-waypoint (with -namespace; "none" opts
// out) to a Gateway, and uses it for a Service only when the waypoint takes service traffic and for
// a workload only when it takes workload traffic (istio.io/waypoint-for on the Gateway, else on its
// GatewayClass, else service) (istio/istio@eed52ebb66ad: pilot/pkg/serviceregistry/ambient/waypoints.go,
// GetUseWaypoint, fetchWaypointForTarget, fetchWaypointForService, fetchWaypointForWorkload,
// gatewayToWaypointTransform). A reference that does not resolve sends the traffic around the
// waypoint: its policies and routes do not apply. A Gateway of another class is taken as a
// waypoint as soon as it has an address (gatewayToWaypointTransform reads only status.addresses),
// so traffic is sent to it over HBONE, which it does not terminate.
func checkWaypointReferences(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	check := func(from mesh.ObjectRef, labels map[string]string, namespace, traffic string) {
		wp, present, ok := mesh.UseWaypoint(labels, namespace)
		if !present || (!ok && labels[mesh.LabelUseWaypoint] == "none") {
			return
		}
		label := fmt.Sprintf("%s=%s", mesh.LabelUseWaypoint, labels[mesh.LabelUseWaypoint])
		if ns, has := labels[mesh.LabelUseWaypointNamespace]; has {
			label += fmt.Sprintf(", %s=%s", mesh.LabelUseWaypointNamespace, ns)
		}
		why, breaks := "", "istiod gives its traffic no waypoint, so it bypasses the policies and routes meant to run there"
		g, found := s.Waypoint(wp)
		switch {
		case !ok:
			why = "names no Gateway (an empty name or namespace)"
		case !found && !s.GatewayAPI.Installed:
			why = fmt.Sprintf("names Gateway %s/%s, and the Gateway API CRDs are not installed", wp.Namespace, wp.Name)
		case !found:
			why = fmt.Sprintf("names Gateway %s/%s, which does not exist", wp.Namespace, wp.Name)
		case !g.Waypoint && g.Class != "istio-east-west":
			why = fmt.Sprintf("names Gateway %s/%s, which is not a waypoint (class %s)", wp.Namespace, wp.Name, orUnknown(g.Class))
			breaks = "istiod takes any Gateway with an address for a waypoint, so its traffic is sent there over HBONE, which that Gateway does not terminate: connections fail"
		case g.WaypointFor == "none":
			why = fmt.Sprintf("names waypoint %s/%s, which takes no traffic (istio.io/waypoint-for=none)", wp.Namespace, wp.Name)
		case traffic == "service" && !g.ServesServices():
			why = fmt.Sprintf("names waypoint %s/%s, which takes only %s traffic (istio.io/waypoint-for=%s), not a Service's", wp.Namespace, wp.Name, g.WaypointFor, g.WaypointFor)
		case traffic == "workload" && !g.ServesWorkloads():
			why = fmt.Sprintf("names waypoint %s/%s, which takes only %s traffic (istio.io/waypoint-for=%s), not a workload's", wp.Namespace, wp.Name, orName(g.WaypointFor, "service"), orName(g.WaypointFor, "service"))
		default:
			return
		}
		related := []mesh.ObjectRef{}
		if ok {
			related = append(related, wp)
		}
		out = append(out, plan.Finding{Code: plan.CodeWaypointReferenceDangling, Severity: plan.Waivable, Object: from, Related: related,
			Message: fmt.Sprintf("%s is labelled %s, which %s: %s", from, label, why, breaks),
			Remedy:  fmt.Sprintf("create the waypoint (istioctl waypoint apply -n %s --name %s%s) or fix the label, or label it %s=none to opt out on purpose", wp.Namespace, wp.Name, forFlag(traffic), mesh.LabelUseWaypoint),
			Details: map[string]string{"waypoint": wp.Namespace + "/" + wp.Name, "traffic": traffic}})
	}
	for _, n := range s.Namespaces {
		check(mesh.ObjectRef{Kind: "Namespace", Name: n.Name}, n.Labels, n.Name, "")
	}
	for _, svc := range s.Services {
		switch svc.Labels[mesh.LabelGatewayManaged] {
		case "istio.io-mesh-controller", "istio.io-eastwest-controller":
			continue // a waypoint's own Service
		}
		check(svc.Ref(), svc.Labels, svc.Namespace, "service")
	}
	for _, w := range s.Workloads {
		if w.GatewayName == "" {
			check(w.Ref(), w.Labels, w.Namespace, "workload")
		}
	}
	return out
}

func forFlag(traffic string) string {
	if traffic == "workload" {
		return " --for workload"
	}
	return ""
}

// checkTargetRefs: a policy with targetRefs applies only to the Gateways (waypoints included) and
// Services it names (istio/istio@1.30.3: pilot/pkg/model/policyattachment.go); one naming objects
// that do not exist applies to nothing. Kinds the snapshot does not read (ServiceEntry,
// GatewayClass) are not judged.
func checkTargetRefs(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	for _, p := range s.Policies {
		if !p.HasTargetRefs {
			continue
		}
		var missing []mesh.ObjectRef
		refs := targetRefs(p)
		for _, r := range refs {
			switch {
			case r.Kind == "Gateway" && s.GatewayAPI.Installed:
				if _, ok := s.Waypoint(r); !ok {
					missing = append(missing, r)
				}
			case r.Kind == "Service" && len(s.Services) > 0:
				if !hasService(s, r) {
					missing = append(missing, r)
				}
			}
		}
		if len(missing) == 0 {
			continue
		}
		what := "so it applies to nothing now"
		if len(missing) < len(refs) {
			what = "so it does not apply there"
		}
		var names []string
		for _, m := range missing {
			names = append(names, m.String())
		}
		out = append(out, plan.Finding{Code: plan.CodePolicyTargetMissing, Severity: plan.Waivable, Object: p.Ref(), Related: missing,
			Message: fmt.Sprintf("%s targets %s, which does not exist, %s", p.Ref(), strings.Join(names, ", "), what),
			Remedy:  "create the target (for a waypoint: istioctl waypoint apply), or point targetRefs at an object that exists",
			Details: map[string]string{"missing": strings.Join(names, ",")}})
	}
	return out
}

// targetRefs reads spec.targetRefs and the older spec.targetRef of a policy, in the policy's
// namespace (a targetRef names an object of its own namespace).
func targetRefs(p mesh.Policy) []mesh.ObjectRef {
	var raw []any
	if l, ok := p.Spec["targetRefs"].([]any); ok {
		raw = append(raw, l...)
	}
	if one, ok := p.Spec["targetRef"].(map[string]any); ok {
		raw = append(raw, one)
	}
	var out []mesh.ObjectRef
	for _, r := range raw {
		m, _ := r.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		if kind != "" && name != "" {
			out = append(out, mesh.ObjectRef{Kind: kind, Namespace: p.Namespace, Name: name})
		}
	}
	return out
}

func hasService(s *mesh.Snapshot, r mesh.ObjectRef) bool {
	for _, svc := range s.Services {
		if svc.Namespace == r.Namespace && svc.Name == r.Name {
			return true
		}
	}
	return false
}

// checkTrustEntries: istiod splits CA_TRUSTED_NODE_ACCOUNTS on "," and each entry on "/" without
// trimming (istio/istio@eed52ebb66ad: pilot/pkg/features/security.go, CATrustedNodeAccounts), so "a/b, c/d"
// trusts " c/d", an account no ztunnel has. ZTUNNEL_NOT_TRUSTED reports the ztunnel; this names the
// entry that was meant for it.
func checkTrustEntries(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	for _, r := range s.Revisions {
		for _, a := range r.TrustedZtunnelAccounts {
			t := strings.TrimSpace(a)
			if t == a {
				continue
			}
			for _, z := range s.Ztunnels {
				if z.Account() != t {
					continue
				}
				out = append(out, plan.Finding{Code: plan.CodeTrustEntryHasSpaces, Severity: plan.Blocking,
					Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}, Component: "istiod/" + r.Name,
					Related: []mesh.ObjectRef{z.Ref()},
					Message: fmt.Sprintf("istiod %q trusts %q, with spaces istiod does not trim, so it does not trust ztunnel %s, and refuses its certificate requests", r.Name, a, t),
					Remedy:  TrustRemedy(s, r, trimmed(r.TrustedZtunnelAccounts)),
					Details: map[string]string{"revision": r.Name, "entry": a, "account": t}})
			}
		}
	}
	return out
}

func trimmed(list []string) []string {
	out := make([]string, 0, len(list))
	for _, a := range list {
		if t := strings.TrimSpace(a); t != "" && !slicesContains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// checkNodePoolLabels: Karpenter labels every node it launches karpenter.sh/nodepool=<pool>
// (sigs.k8s.io/karpenter@v1: pkg/apis/v1/labels.go, NodePoolLabelKey). A node naming a pool that is
// gone is one Karpenter no longer replaces or consolidates, and that a blue-green cannot colour
// through its pool. Judged only when the snapshot holds NodePools at all.
func checkNodePoolLabels(s *mesh.Snapshot) []plan.Finding {
	if len(s.NodePools) == 0 {
		return nil
	}
	byPool := map[string][]string{}
	for _, n := range s.Nodes {
		pool := n.Labels["karpenter.sh/nodepool"]
		if pool == "" {
			continue
		}
		if _, ok := s.NodePool(pool); !ok {
			byPool[pool] = append(byPool[pool], n.Name)
		}
	}
	pools := make([]string, 0, len(byPool))
	for p := range byPool {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	var out []plan.Finding
	for _, p := range pools {
		nodes := byPool[p]
		sort.Strings(nodes)
		var related []mesh.ObjectRef
		for _, n := range nodes {
			related = append(related, mesh.ObjectRef{Kind: "Node", Name: n})
		}
		out = append(out, plan.Finding{Code: plan.CodeNodePoolMissing, Severity: plan.Info, Object: mesh.ObjectRef{Kind: "NodePool", Name: p}, Related: related,
			Message: fmt.Sprintf("%d node(s) are labelled karpenter.sh/nodepool=%s, a NodePool that does not exist (NodePools: %s): Karpenter no longer replaces or consolidates them, and a blue-green cannot make them green through that pool (%s)",
				len(nodes), p, listOrNone(nodePoolNames(s)), plan.ListSome(nodes, 3)),
			Remedy:  "drain and remove them once their workloads run elsewhere, or relabel them for a blue-green (Capacity.Relabel)",
			Details: map[string]string{"nodePool": p, "nodes": fmt.Sprint(len(nodes))}})
	}
	return out
}

func nodePoolNames(s *mesh.Snapshot) []string {
	var out []string
	for _, p := range s.NodePools {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}
