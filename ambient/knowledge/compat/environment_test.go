package compat_test

import (
	"testing"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// withAmbientStore adds namespace store in ambient with workload web (app=web) and its Service.
func withAmbientStore(s *mesh.Snapshot, nsLabels map[string]string) *mesh.Snapshot {
	l := map[string]string{mesh.LabelDataplaneMode: "ambient"}
	for k, v := range nsLabels {
		l[k] = v
	}
	s.Namespaces = append(s.Namespaces, mesh.Namespace{Name: "store", Labels: l})
	s.Workloads = append(s.Workloads, mesh.Workload{Namespace: "store", Kind: "Deployment", Name: "web", Labels: map[string]string{"app": "web"},
		Pods: 2, Ready: 2, Mode: mesh.ModeAmbient, NetworkProbes: true})
	s.Services = append(s.Services, mesh.Service{Namespace: "store", Name: "web", Selector: map[string]string{"app": "web"}, Ports: []mesh.ServicePort{{Port: 80}}})
	return s
}

func netpol(name string, sel map[string]string, rules ...mesh.NetworkPolicyRule) mesh.NetworkPolicy {
	return mesh.NetworkPolicy{Namespace: "store", Name: name, PodSelector: &mesh.LabelSelector{MatchLabels: sel}, Ingress: true, IngressRules: rules}
}

// found returns the findings of code in the gate's report of s.
func found(t *testing.T, s *mesh.Snapshot, target string, code plan.Code) []plan.Finding {
	t.Helper()
	opts := compat.Options{}
	if target != "" {
		opts.Target = mesh.MustParseVersion(target)
	}
	r, err := compat.Compute(mesh.MustNormalized(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []plan.Finding
	for _, f := range r.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

func TestEnvironmentRules(t *testing.T) {
	tests := []struct {
		name   string
		mesh   func() *mesh.Snapshot
		target string
		code   plan.Code
		want   []string // objects, in order; nil: no finding
		sev    plan.Severity
	}{
		{
			name: "a NetworkPolicy of an ambient namespace that admits only the application port blocks HBONE",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.NetworkPolicies = []mesh.NetworkPolicy{netpol("web", map[string]string{"app": "web"}, mesh.NetworkPolicyRule{AnySource: true, Ports: []string{"TCP/8080"}})}
				return s
			},
			code: plan.CodeNetworkPolicyBlocksHBONE, want: []string{"NetworkPolicy store/web"}, sev: plan.Waivable,
		},
		{
			name: "a NetworkPolicy that also admits 15008 does not block HBONE",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.NetworkPolicies = []mesh.NetworkPolicy{netpol("web", map[string]string{"app": "web"}, mesh.NetworkPolicyRule{AnySource: true, Ports: []string{"TCP/8080", "TCP/15008"}})}
				return s
			},
			code: plan.CodeNetworkPolicyBlocksHBONE,
		},
		{
			name: "a port range that covers 15008 admits HBONE",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.NetworkPolicies = []mesh.NetworkPolicy{netpol("web", map[string]string{"app": "web"}, mesh.NetworkPolicyRule{AnySource: true, Ports: []string{"TCP/8000-16000"}})}
				return s
			},
			code: plan.CodeNetworkPolicyBlocksHBONE,
		},
		{
			name: "a policy that admits only pods blocks the probe address of workloads with network probes",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.NetworkPolicies = []mesh.NetworkPolicy{netpol("same-ns", nil, mesh.NetworkPolicyRule{PeerSelectors: 1})}
				return s
			},
			code: plan.CodeNetworkPolicyBlocksAmbientProbes, want: []string{"Deployment store/web"}, sev: plan.Waivable,
		},
		{
			name: "an ipBlock for 169.254.7.127 admits the probes",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.NetworkPolicies = []mesh.NetworkPolicy{netpol("same-ns", nil, mesh.NetworkPolicyRule{PeerSelectors: 1}, mesh.NetworkPolicyRule{IPBlocks: []string{"169.254.7.127/32"}})}
				return s
			},
			code: plan.CodeNetworkPolicyBlocksAmbientProbes,
		},
		{
			name: "an ipBlock whose exception holds the probe address does not admit it",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.NetworkPolicies = []mesh.NetworkPolicy{netpol("all-but", nil, mesh.NetworkPolicyRule{IPBlocks: []string{"0.0.0.0/0 except 169.254.0.0/16"}})}
				return s
			},
			code: plan.CodeNetworkPolicyBlocksAmbientProbes, want: []string{"Deployment store/web"}, sev: plan.Waivable,
		},
		{
			name: "Cilium with cni-exclusive and BPF masquerading is refused, each setting once",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.PrimaryCNI = &mesh.PrimaryCNI{Name: "cilium", ConfigMap: mesh.ObjectRef{Kind: "ConfigMap", Namespace: "kube-system", Name: "cilium-config"},
					Settings: map[string]string{"cni-exclusive": "true", "enable-bpf-masquerade": "true"}}
				return s
			},
			code: plan.CodePrimaryCNIIncompatible, want: []string{"ConfigMap kube-system/cilium-config", "ConfigMap kube-system/cilium-config"}, sev: plan.Blocking,
		},
		{
			name: "Cilium with socket load balancing in the host namespace only is fine",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.PrimaryCNI = &mesh.PrimaryCNI{Name: "cilium", ConfigMap: mesh.ObjectRef{Kind: "ConfigMap", Namespace: "kube-system", Name: "cilium-config"},
					Settings: map[string]string{"cni-exclusive": "false", "bpf-lb-sock": "true", "bpf-lb-sock-hostns-only": "true"}}
				return s
			},
			code: plan.CodePrimaryCNIIncompatible,
		},
		{
			name: "an excluded ambient namespace blocks an upgrade of istio-cni to 1.30",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.29.6", 3), nil)
				s.CNI.ExcludeNamespaces = []string{"kube-system", "store"}
				return s
			},
			target: "1.30.3", code: plan.CodeCNIExcludesAmbientNamespace, want: []string{"Namespace store"}, sev: plan.Blocking,
		},
		{
			name: "an excluded ambient namespace is only noted while istio-cni stays before 1.30",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.29.6", 3), nil)
				s.CNI.ExcludeNamespaces = []string{"store"}
				return s
			},
			code: plan.CodeCNIExcludesAmbientNamespace, want: []string{"Namespace store"}, sev: plan.Info,
		},
		{
			name: "a variable read from a key istio-cni-config lacks stops the agent",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.CNI.ConfigKeys = []string{"AMBIENT_ENABLED"}
				s.CNI.ConfigMapEnv = []mesh.ConfigMapEnv{{Env: "CNI_NETWORK_CONFIG", ConfigMap: "istio-cni-config", Key: "cni_network_config"},
					{Env: "AMBIENT_ENABLED", ConfigMap: "istio-cni-config", Key: "AMBIENT_ENABLED"},
					{Env: "OPTIONAL", ConfigMap: "istio-cni-config", Key: "gone", Optional: true}}
				return s
			},
			code: plan.CodeCNIEnvReferencesMissingKey, want: []string{"DaemonSet " + "istio-system/istio-cni-node"}, sev: plan.Blocking,
		},
		{
			name: "GKE nodes with the plugin in /opt/cni/bin are refused",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.CNI.HostPaths = map[string]string{"cni-bin-dir": "/opt/cni/bin"}
				s.Nodes[0].KubeletVersion = "v1.33.4-gke.1245000"
				return s
			},
			code: plan.CodeCNIBinDirWrongForPlatform, want: []string{"DaemonSet istio-system/istio-cni-node"}, sev: plan.Blocking,
		},
		{
			name: "GKE nodes with the plugin in /home/kubernetes/bin are fine",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.CNI.HostPaths = map[string]string{"cni-bin-dir": "/home/kubernetes/bin"}
				s.Nodes[0].Labels = map[string]string{"cloud.google.com/gke-nodepool": "default-pool"}
				return s
			},
			code: plan.CodeCNIBinDirWrongForPlatform,
		},
		{
			name: "a waypoint of another namespace whose HBONE listener admits Same does not bind the namespace",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), map[string]string{mesh.LabelUseWaypoint: "wp", mesh.LabelUseWaypointNamespace: "infra"})
				s.Gateways = append(s.Gateways, mesh.Gateway{Kind: mesh.GatewayKindAPI, Namespace: "infra", Name: "wp", Class: "istio-waypoint", Waypoint: true,
					Listeners: []mesh.GatewayListener{{Name: "mesh", Port: 15008, Protocol: "HBONE"}}})
				return s
			},
			code: plan.CodeWaypointDoesNotAllowNamespace, want: []string{"Namespace store"}, sev: plan.Waivable,
		},
		{
			name: "a waypoint whose HBONE listener admits All binds every namespace",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), map[string]string{mesh.LabelUseWaypoint: "wp", mesh.LabelUseWaypointNamespace: "infra"})
				s.Gateways = append(s.Gateways, mesh.Gateway{Kind: mesh.GatewayKindAPI, Namespace: "infra", Name: "wp", Class: "istio-waypoint", Waypoint: true,
					Listeners: []mesh.GatewayListener{{Name: "mesh", Port: 15008, Protocol: "HBONE", AllowedFrom: "All"}}})
				return s
			},
			code: plan.CodeWaypointDoesNotAllowNamespace,
		},
		{
			name: "a waypoint whose current status says Programmed=False is reported",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.Gateways = append(s.Gateways, mesh.Gateway{Kind: mesh.GatewayKindAPI, Namespace: "store", Name: "waypoint", Class: "istio-waypoint", Waypoint: true,
					Generation: 2, Conditions: []mesh.PolicyCondition{{Type: "Programmed", Status: "False", Reason: "AddressNotUsable", ObservedGeneration: 2}}})
				return s
			},
			code: plan.CodeWaypointNotProgrammed, want: []string{"Gateway store/waypoint"}, sev: plan.Waivable,
		},
		{
			name: "a Programmed=False status of an older generation is not judged",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.Gateways = append(s.Gateways, mesh.Gateway{Kind: mesh.GatewayKindAPI, Namespace: "store", Name: "waypoint", Class: "istio-waypoint", Waypoint: true,
					Generation: 3, Conditions: []mesh.PolicyCondition{{Type: "Programmed", Status: "False", ObservedGeneration: 2}}})
				return s
			},
			code: plan.CodeWaypointNotProgrammed,
		},
		{
			name: "a route on a Service of an ambient namespace without a waypoint is ignored",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), nil)
				s.Routes = []mesh.Route{{Kind: "HTTPRoute", Namespace: "store", Name: "split", Parents: []mesh.RouteParent{{Kind: "Service", Namespace: "store", Name: "web"}}}}
				return s
			},
			code: plan.CodeRouteParentHasNoWaypoint, want: []string{"HTTPRoute store/split"}, sev: plan.Waivable,
		},
		{
			name: "a route on a Service whose namespace names a waypoint is applied by it",
			mesh: func() *mesh.Snapshot {
				s := withAmbientStore(meshtest.Healthy("1.30.3", 3), map[string]string{mesh.LabelUseWaypoint: "waypoint"})
				s.Routes = []mesh.Route{{Kind: "HTTPRoute", Namespace: "store", Name: "split", Parents: []mesh.RouteParent{{Kind: "Service", Namespace: "store", Name: "web"}}}}
				return s
			},
			code: plan.CodeRouteParentHasNoWaypoint,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := found(t, tt.mesh(), tt.target, tt.code)
			if len(fs) != len(tt.want) {
				t.Fatalf("%d findings %s, want %d: %v", len(fs), tt.code, len(tt.want), fs)
			}
			for i, f := range fs {
				if f.Object.String() != tt.want[i] || f.Severity != tt.sev {
					t.Errorf("finding %d: %s %s, want %s %s", i, f.Severity, f.Object, tt.sev, tt.want[i])
				}
				if f.Message == "" || f.Remedy == "" {
					t.Errorf("finding %d has no message or remedy: %+v", i, f)
				}
			}
		})
	}
}
