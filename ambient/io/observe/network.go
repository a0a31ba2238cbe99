package observe

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// What the observer reads of the network a mesh runs in, beyond the upgrade's needs (mesh/network.go):
// NetworkPolicies, the primary CNI's settings, Gateway API routes and gateway listeners and status,
// Istio's Sidecar, ServiceEntry, WorkloadEntry and WasmPlugin objects, and a few fields of kinds
// read already (istio-cni's environment and host paths, pod annotations and commands, istiod
// feature flags). Every addition here only adds to the snapshot: nothing read before changes.

// Names of what this file reads.
const (
	ciliumConfigMapName      = "cilium-config"
	ciliumConfigMapNamespace = "kube-system"
)

// ciliumKeys are the cilium-config keys istioctl's precheck reads (istio/istio@eed52ebb66ad
// operator/pkg/apis/validation/validation.go, detectCniIncompatibility).
var ciliumKeys = []string{"cni-exclusive", "enable-bpf-masquerade", "bpf-lb-sock", "bpf-lb-sock-hostns-only", "kube-proxy-replacement"}

// networkParts collects the objects above. Its zero value is ready to use.
type networkParts struct {
	netpols    []mesh.NetworkPolicy
	routes     []mesh.Route
	config     []mesh.IstioConfig
	primaryCNI *mesh.PrimaryCNI
	// listeners and conditions of Gateway API gateways, by namespace/name (the builder's own
	// Gateway list is assembled elsewhere; finish attaches these).
	gateways map[string]gatewayExtras
	// workloads: pod annotations and agent calls by workload.
	workloads map[workloadKey]*podExtras
	// cni: the istio-cni DaemonSet's template details, by namespace/name; cniKeys the keys of
	// istio-cni-config by namespace.
	cni     map[string]cniExtras
	cniKeys map[string][]string
	cniExcl map[string][]string
}

type gatewayExtras struct {
	listeners  []mesh.GatewayListener
	conditions []mesh.PolicyCondition
	generation int64
}

type podExtras struct {
	annotations map[string]string
	calls       map[string]bool
	probes      bool
}

type cniExtras struct {
	env       []mesh.ConfigMapEnv
	hostPaths map[string]string
}

func newNetworkParts() networkParts {
	return networkParts{gateways: map[string]gatewayExtras{}, workloads: map[workloadKey]*podExtras{}, cni: map[string]cniExtras{},
		cniKeys: map[string][]string{}, cniExcl: map[string][]string{}}
}

// ---- NetworkPolicy ------------------------------------------------------------------------------

func (b *builder) addNetworkPolicy(p *networkingv1.NetworkPolicy) {
	np := mesh.NetworkPolicy{Namespace: p.Namespace, Name: p.Name, PodSelector: &mesh.LabelSelector{MatchLabels: copyMap(p.Spec.PodSelector.MatchLabels)}}
	for _, e := range p.Spec.PodSelector.MatchExpressions {
		np.PodSelector.MatchExpressions = append(np.PodSelector.MatchExpressions,
			mesh.SelectorTerm{Key: e.Key, Operator: string(e.Operator), Values: append([]string(nil), e.Values...)})
	}
	// policyTypes defaults to Ingress (plus Egress when egress rules exist): k8s.io/api@v0.37
	// networking/v1 types.go, NetworkPolicySpec.PolicyTypes.
	np.Ingress = len(p.Spec.PolicyTypes) == 0
	for _, t := range p.Spec.PolicyTypes {
		if t == networkingv1.PolicyTypeIngress {
			np.Ingress = true
		}
	}
	for _, r := range p.Spec.Ingress {
		rule := mesh.NetworkPolicyRule{AnySource: len(r.From) == 0}
		for _, port := range r.Ports {
			proto := "TCP"
			if port.Protocol != nil {
				proto = string(*port.Protocol)
			}
			switch {
			case port.Port == nil:
				rule.Ports = append(rule.Ports, proto+"/0-65535")
			case port.EndPort != nil:
				rule.Ports = append(rule.Ports, fmt.Sprintf("%s/%s-%d", proto, port.Port.String(), *port.EndPort))
			default:
				rule.Ports = append(rule.Ports, proto+"/"+port.Port.String())
			}
		}
		for _, f := range r.From {
			if f.IPBlock != nil {
				block := f.IPBlock.CIDR
				if len(f.IPBlock.Except) > 0 {
					block += " except " + strings.Join(f.IPBlock.Except, ",")
				}
				rule.IPBlocks = append(rule.IPBlocks, block)
			}
			if f.PodSelector != nil || f.NamespaceSelector != nil {
				rule.PeerSelectors++
			}
		}
		np.IngressRules = append(np.IngressRules, rule)
	}
	b.net.netpols = append(b.net.netpols, np)
}

// ---- the primary CNI ----------------------------------------------------------------------------

func (b *builder) addPrimaryCNIConfigMap(cm *corev1.ConfigMap) {
	if cm.Name != ciliumConfigMapName || cm.Namespace != ciliumConfigMapNamespace {
		return
	}
	p := &mesh.PrimaryCNI{Name: "cilium", ConfigMap: mesh.ObjectRef{Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name}}
	settings := map[string]string{}
	for _, k := range ciliumKeys {
		if v, ok := cm.Data[k]; ok {
			settings[k] = v
		}
	}
	p.Settings = copyMap(settings)
	b.net.primaryCNI = p
}

// ---- Gateway API routes and gateways ------------------------------------------------------------

func (b *builder) addRoute(kind string, u *unstructured.Unstructured) {
	spec := mapOf(u.Object["spec"])
	r := mesh.Route{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}
	for _, p := range listOf(spec["parentRefs"]) {
		m := mapOf(p)
		parent := mesh.RouteParent{Kind: strOf(m["kind"]), Namespace: strOf(m["namespace"]), Name: strOf(m["name"])}
		if parent.Kind == "" {
			parent.Kind = mesh.GatewayKindAPI // the Gateway API's default parentRef kind
		}
		if parent.Namespace == "" {
			parent.Namespace = r.Namespace
		}
		r.Parents = append(r.Parents, parent)
	}
	seen := map[mesh.ObjectRef]bool{}
	for _, rule := range listOf(spec["rules"]) {
		for _, br := range listOf(mapOf(rule)["backendRefs"]) {
			m := mapOf(br)
			kind := strOf(m["kind"])
			if kind != "" && kind != "Service" {
				continue
			}
			ref := mesh.ObjectRef{Kind: "Service", Namespace: strOf(m["namespace"]), Name: strOf(m["name"])}
			if ref.Namespace == "" {
				ref.Namespace = r.Namespace
			}
			if ref.Name != "" && !seen[ref] {
				seen[ref] = true
				r.Backends = append(r.Backends, ref)
			}
		}
	}
	sort.Slice(r.Backends, func(i, j int) bool { return r.Backends[i].Less(r.Backends[j]) })
	b.net.routes = append(b.net.routes, r)
}

// noteGatewayExtras keeps a Gateway API gateway's listeners and status conditions.
func (b *builder) noteGatewayExtras(u *unstructured.Unstructured) {
	var ex gatewayExtras
	for _, l := range listOf(mapOf(u.Object["spec"])["listeners"]) {
		m := mapOf(l)
		gl := mesh.GatewayListener{Name: strOf(m["name"]), Protocol: strOf(m["protocol"])}
		switch p := m["port"].(type) {
		case int64:
			gl.Port = int32(p)
		case float64:
			gl.Port = int32(p)
		}
		ns := mapOf(mapOf(m["allowedRoutes"])["namespaces"])
		gl.AllowedFrom = strOf(ns["from"])
		if sel := mapOf(ns["selector"]); sel != nil {
			gl.AllowedSelector = selectorOf(sel)
		}
		ex.listeners = append(ex.listeners, gl)
	}
	ex.conditions = conditionsOf(u)
	ex.generation = u.GetGeneration()
	b.net.gateways[u.GetNamespace()+"/"+u.GetName()] = ex
}

// ---- Istio configuration ------------------------------------------------------------------------

func istioConfigAdd(kind string) func(*builder, *unstructured.Unstructured) {
	return func(b *builder, u *unstructured.Unstructured) {
		c := mesh.IstioConfig{Group: u.GroupVersionKind().Group, Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), Spec: jsonCopy(mapOf(u.Object["spec"]))}
		labels := map[string]string{}
		for _, k := range mesh.IstioConfigLabels {
			if v, ok := u.GetLabels()[k]; ok {
				labels[k] = v
			}
		}
		c.Labels = copyMap(labels)
		b.net.config = append(b.net.config, c)
	}
}

// ---- fields of kinds read already ---------------------------------------------------------------

// noteCNIDaemonSet keeps the install-cni container's ConfigMap variables and the host paths.
func (b *builder) noteCNIDaemonSet(ds *appsv1.DaemonSet) {
	tpl := ds.Spec.Template
	var ex cniExtras
	if c := pickContainer(tpl.Spec.Containers, containerInstallCNI, "install-cni"); c != nil {
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
				continue
			}
			ref := e.ValueFrom.ConfigMapKeyRef
			ex.env = append(ex.env, mesh.ConfigMapEnv{Env: e.Name, ConfigMap: ref.Name, Key: ref.Key, Optional: ref.Optional != nil && *ref.Optional})
		}
	}
	paths := map[string]string{}
	for _, v := range tpl.Spec.Volumes {
		if v.HostPath != nil {
			paths[v.Name] = v.HostPath.Path
		}
	}
	ex.hostPaths = copyMap(paths)
	b.net.cni[ds.Namespace+"/"+ds.Name] = ex
}

// noteCNIConfigKeys keeps every key of istio-cni-config and its EXCLUDE_NAMESPACES list
// (istio/istio@eed52ebb66ad manifests/charts/istio-cni/templates/configmap-cni.yaml).
func (b *builder) noteCNIConfigKeys(cm *corev1.ConfigMap) {
	keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	for k := range cm.BinaryData {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.net.cniKeys[cm.Namespace] = keys
	var excl []string
	for _, ns := range strings.Split(cm.Data["EXCLUDE_NAMESPACES"], ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			excl = append(excl, ns)
		}
	}
	sort.Strings(excl)
	b.net.cniExcl[cm.Namespace] = excl
}

// agentCall finds calls of the sidecar agent's and Envoy's admin endpoints in a command line:
// pilot-agent serves /quitquitquit on its status port 15020 and Envoy on its admin port 15000
// (istio/istio@eed52ebb66ad pilot/cmd/pilot-agent/status/server.go, quitPath).
var agentCall = regexp.MustCompile(`(?:localhost|127\.0\.0\.1|\[::1\]):(?:15020|15000)/(?:quitquitquit|healthz/ready|drain_listeners)`)

// notePodExtras keeps a pod's kept annotations and the agent endpoints its containers call.
func (b *builder) notePodExtras(key workloadKey, p *corev1.Pod) {
	ex := b.net.workloads[key]
	if ex == nil {
		ex = &podExtras{annotations: map[string]string{}, calls: map[string]bool{}}
		b.net.workloads[key] = ex
	}
	for k, v := range p.Annotations {
		if keptAnnotation(k) {
			if _, ok := ex.annotations[k]; !ok {
				ex.annotations[k] = v
			}
		}
	}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			if c.Name == containerProxy {
				continue
			}
			for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
				if p != nil && (p.HTTPGet != nil || p.TCPSocket != nil || p.GRPC != nil) {
					ex.probes = true
				}
			}
			for _, m := range agentCall.FindAllString(strings.Join(append(append([]string(nil), c.Command...), c.Args...), " "), -1) {
				ex.calls[m] = true
			}
		}
	}
}

func keptAnnotation(k string) bool {
	for _, p := range mesh.WorkloadAnnotationsKept {
		if k == p || strings.HasSuffix(p, "/") && strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// finishNetwork attaches everything to the snapshot; Normalize sorts it after.
func (b *builder) finishNetwork(s *mesh.Snapshot) {
	n := &b.net
	for k, ex := range n.workloads { // Jobs of a CronJob are summarised under the CronJob
		if cj, ok := b.cronJobOf[k.namespace+"/"+k.name]; ok && k.kind == "Job" {
			into := workloadKey{k.namespace, "CronJob", cj}
			if n.workloads[into] == nil {
				n.workloads[into] = &podExtras{annotations: map[string]string{}, calls: map[string]bool{}}
			}
			for a, v := range ex.annotations {
				if _, ok := n.workloads[into].annotations[a]; !ok {
					n.workloads[into].annotations[a] = v
				}
			}
			for c := range ex.calls {
				n.workloads[into].calls[c] = true
			}
			n.workloads[into].probes = n.workloads[into].probes || ex.probes
		}
	}
	s.NetworkPolicies = append(s.NetworkPolicies, n.netpols...)
	s.Routes = append(s.Routes, n.routes...)
	s.IstioConfig = append(s.IstioConfig, n.config...)
	s.PrimaryCNI = n.primaryCNI
	for i := range s.Gateways {
		g := &s.Gateways[i]
		if g.Kind != mesh.GatewayKindAPI {
			continue
		}
		if ex, ok := n.gateways[g.Namespace+"/"+g.Name]; ok {
			g.Listeners, g.Conditions, g.Generation = ex.listeners, ex.conditions, ex.generation
		}
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		ex := n.workloads[workloadKey{w.Namespace, w.Kind, w.Name}]
		if ex == nil {
			continue
		}
		w.Annotations = copyMap(ex.annotations)
		w.NetworkProbes = ex.probes
		for c := range ex.calls {
			w.AgentCalls = append(w.AgentCalls, c)
		}
		sort.Strings(w.AgentCalls)
	}
	if s.CNI != nil {
		ex := n.cni[s.CNI.Namespace+"/"+s.CNI.Name]
		s.CNI.ConfigMapEnv, s.CNI.HostPaths = ex.env, ex.hostPaths
		s.CNI.ConfigKeys, s.CNI.ExcludeNamespaces = n.cniKeys[s.CNI.Namespace], n.cniExcl[s.CNI.Namespace]
	}
}
