package compat

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// The network a mesh runs in: what ambient changes about NetworkPolicies and what it needs of the
// primary CNI. environmentRules (environment.go) runs these for the mesh as it runs;
// NetworkPolicyFindings is what namespace migration asks about the namespace it moves.

// In ambient, traffic between meshed pods arrives on the destination pod's HBONE port, 15008, not
// on the application's port (istio/istio@eed52ebb66ad pilot/pkg/model/listener.go,
// HBoneInboundListenPort). A NetworkPolicy is applied by the primary CNI to the packets as they
// arrive, so it must admit 15008 where it admits the application.
const hbonePort = 15008

// istio-cni SNATs kubelet probes of ambient pods to these link-local addresses, so that ztunnel can
// tell them apart (istio/istio@eed52ebb66ad cni/pkg/iptables/iptables.go, the ISTIO_PRERT and
// ISTIO_OUTPUT rules; cni/pkg/nftables/nftables.go). In sidecar mode probes come from the node,
// which NetworkPolicy implementations admit; from 169.254.7.127 they are admitted only by a rule.
var probeSources = []netip.Addr{netip.MustParseAddr("169.254.7.127"), netip.MustParseAddr("fd16:9254:7127:1337:ffff:ffff:ffff:ffff")}

// ruleAdmits reports whether an ingress rule admits traffic from addr.
func ruleAdmits(r mesh.NetworkPolicyRule, addr netip.Addr) bool {
	if r.AnySource {
		return true
	}
	for _, b := range r.IPBlocks {
		cidr, except, _ := strings.Cut(b, " except ")
		p, err := netip.ParsePrefix(cidr)
		if err != nil || !p.Contains(addr) {
			continue
		}
		excluded := false
		for _, e := range strings.Split(except, ",") {
			if ep, err := netip.ParsePrefix(strings.TrimSpace(e)); err == nil && ep.Contains(addr) {
				excluded = true
			}
		}
		if !excluded {
			return true
		}
	}
	return false
}

// isolating returns the ingress NetworkPolicies of namespace that select the workload's pods.
func isolating(s *mesh.Snapshot, w mesh.Workload) []mesh.NetworkPolicy {
	var out []mesh.NetworkPolicy
	for _, p := range s.NetworkPolicies {
		if p.Namespace == w.Namespace && p.Ingress && p.PodSelector.Matches(w.Labels) {
			out = append(out, p)
		}
	}
	return out
}

// NetworkPolicyFindings reports the NetworkPolicies of namespace that break its pods once they are
// in ambient: policies that admit application ports but not HBONE (15008), and workloads whose
// isolating policies admit nothing from the probe address. sev is the severity of both.
func NetworkPolicyFindings(s *mesh.Snapshot, namespace string, sev plan.Severity) []plan.Finding {
	var out []plan.Finding
	hbone := map[string][]mesh.ObjectRef{} // policy name → workloads it blocks HBONE for
	ports := map[string][]string{}
	for _, w := range s.Workloads {
		if w.Namespace != namespace || w.GatewayName != "" {
			continue
		}
		pols := isolating(s, w)
		if len(pols) == 0 {
			continue
		}
		admitsHBONE, admitsProbes := false, false
		var restricted []mesh.NetworkPolicy // policies whose rules name ports, none of them 15008
		for _, p := range pols {
			named := false
			for _, r := range p.IngressRules {
				if r.AllowsPort(hbonePort) {
					admitsHBONE = true
				}
				if len(r.Ports) > 0 {
					named = true
				}
				for _, a := range probeSources {
					if ruleAdmits(r, a) {
						admitsProbes = true
					}
				}
			}
			if named {
				restricted = append(restricted, p)
			}
		}
		if !admitsHBONE {
			for _, p := range restricted {
				hbone[p.Name] = append(hbone[p.Name], w.Ref())
				for _, r := range p.IngressRules {
					ports[p.Name] = append(ports[p.Name], r.Ports...)
				}
			}
		}
		if !admitsProbes && w.NetworkProbes {
			var names []string
			var refs []mesh.ObjectRef
			for _, p := range pols {
				names = append(names, p.Name)
				refs = append(refs, p.Ref())
			}
			out = append(out, plan.Finding{Code: plan.CodeNetworkPolicyBlocksAmbientProbes, Severity: sev, Object: w.Ref(), Related: refs,
				Message: fmt.Sprintf("%s is isolated for ingress by NetworkPolicy %s, which admits nothing from 169.254.7.127: in ambient istio-cni sends kubelet probes from that address, so its readiness and liveness probes fail",
					w.Ref(), strings.Join(names, ", ")),
				Remedy:  "admit the probe address in an ingress rule of a policy selecting these pods: from: [{ipBlock: {cidr: 169.254.7.127/32}}] (and fd16:9254:7127:1337:ffff:ffff:ffff:ffff/128 on IPv6)",
				Details: map[string]string{"namespace": namespace, "policies": strings.Join(names, ",")}})
		}
	}
	names := make([]string, 0, len(hbone))
	for n := range hbone {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ref := mesh.ObjectRef{Kind: "NetworkPolicy", Namespace: namespace, Name: n}
		ps := uniq(ports[n])
		out = append(out, plan.Finding{Code: plan.CodeNetworkPolicyBlocksHBONE, Severity: sev, Object: ref, Related: hbone[n],
			Message: fmt.Sprintf("%s admits ingress on %s only; in ambient meshed clients connect to port %d (HBONE), which no policy selecting these pods admits, so their requests time out",
				ref, strings.Join(ps, ", "), hbonePort),
			Remedy:  fmt.Sprintf("add {protocol: TCP, port: %d} to the ports of the rule that admits the application, before the pods join ambient", hbonePort),
			Details: map[string]string{"namespace": namespace, "ports": strings.Join(ps, ",")}})
	}
	return out
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// networkPolicyRules runs NetworkPolicyFindings over every ambient namespace: there the break is
// not to come but happening (waivable: the plan itself does not make it worse).
func networkPolicyRules(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	for _, n := range s.Namespaces {
		if n.Ambient() {
			out = append(out, NetworkPolicyFindings(s, n.Name, plan.Waivable)...)
		}
	}
	return out
}

// primaryCNIRules are istioctl's precheck of the primary CNI (istio/istio@eed52ebb66ad
// operator/pkg/apis/validation/validation.go, detectCniIncompatibility): Cilium with cni-exclusive
// (it overwrites istio-cni's chained config), with BPF masquerading while ztunnel runs
// (istio/istio#52208), or with socket load balancing outside the host namespace (istio/istio#27619),
// also implied by kube-proxy-replacement=strict on older Cilium.
func primaryCNIRules(s *mesh.Snapshot) []plan.Finding {
	p := s.PrimaryCNI
	if p == nil || p.Name != "cilium" {
		return nil
	}
	set := p.Settings
	type bad struct{ setting, value, want, why string }
	var bads []bad
	if s.CNI != nil && set["cni-exclusive"] == "true" {
		bads = append(bads, bad{"cni-exclusive", "true", "false", "Cilium keeps overwriting istio-cni's chained CNI configuration, so new pods start without it"})
	}
	if len(s.Ztunnels) > 0 && set["enable-bpf-masquerade"] == "true" {
		bads = append(bads, bad{"enable-bpf-masquerade", "true", "false", "BPF masquerading breaks ambient's redirection: probes and traffic time out"})
	}
	hostnsOnly := set["bpf-lb-sock-hostns-only"] == "true"
	if set["bpf-lb-sock"] == "true" && !hostnsOnly {
		bads = append(bads, bad{"bpf-lb-sock-hostns-only", set["bpf-lb-sock-hostns-only"], "true", "socket load balancing in pod namespaces sends traffic straight to endpoints, around the mesh"})
	}
	if set["kube-proxy-replacement"] == "strict" && !hostnsOnly {
		bads = append(bads, bad{"bpf-lb-sock-hostns-only", set["bpf-lb-sock-hostns-only"], "true", "kube-proxy-replacement=strict balances in pod namespaces unless bpf-lb-sock-hostns-only is true"})
	}
	var out []plan.Finding
	for _, b := range bads {
		out = append(out, plan.Finding{Code: plan.CodePrimaryCNIIncompatible, Severity: plan.Blocking, Object: p.ConfigMap, Component: "cni",
			Message: fmt.Sprintf("%s sets %s=%q: %s", p.ConfigMap, b.setting, b.value, b.why),
			Remedy:  fmt.Sprintf("set %s: %q in %s (Helm: the Cilium chart's value for it) and restart the Cilium agents", b.setting, b.want, p.ConfigMap),
			Details: map[string]string{"cni": p.Name, "setting": b.setting, "value": b.value, "want": b.want}})
	}
	return out
}
