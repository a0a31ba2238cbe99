package observe_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

const networkObjects = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{namespaceSelector: {}}, {ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}}]
    ports: [{port: 8080}, {protocol: UDP, port: 53}, {port: 9000, endPort: 9100}]
  - {}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-only, namespace: shop}
spec: {podSelector: {}, policyTypes: [Egress]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {cni-exclusive: "true", enable-bpf-masquerade: "false", cluster-name: prod}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: elsewhere}
data: {cni-exclusive: "false"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: split, namespace: shop}
spec:
  parentRefs: [{group: "", kind: Service, name: web}, {name: public, namespace: ingress}]
  rules: [{backendRefs: [{name: web, port: 80}, {name: web-v2, port: 80}, {name: web, port: 80}]}, {backendRefs: [{kind: ServiceImport, name: x}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: waypoint, namespace: shop, generation: 3, labels: {istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE, allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {team: a}}}}}]
status:
  conditions: [{type: Programmed, status: "False", reason: AddressNotUsable, message: no port, observedGeneration: 3}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: shop, labels: {istio.io/rev: prod, team: a}}
spec: {outboundTrafficPolicy: {mode: REGISTRY_ONLY}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: istio-cni-node, namespace: istio-system}
spec:
  selector: {matchLabels: {k8s-app: istio-cni-node}}
  template:
    metadata: {labels: {k8s-app: istio-cni-node}}
    spec:
      containers:
      - name: install-cni
        image: docker.io/istio/install-cni:1.30.3
        env:
        - {name: PLAIN, value: x}
        - name: CNI_NETWORK_CONFIG
          valueFrom: {configMapKeyRef: {name: istio-cni-config, key: cni_network_config}}
        - name: OPT
          valueFrom: {configMapKeyRef: {name: other, key: k, optional: true}}
      volumes:
      - {name: cni-bin-dir, hostPath: {path: /opt/cni/bin}}
      - {name: cni-log, emptyDir: {}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: istio-cni-config, namespace: istio-system}
data: {AMBIENT_ENABLED: "true", EXCLUDE_NAMESPACES: "kube-system, infra"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: istio-system}
spec:
  template:
    metadata: {labels: {app: istiod}}
    spec:
      containers:
      - name: discovery
        image: docker.io/istio/pilot:1.30.3
        env:
        - {name: AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY, value: "true"}
        - {name: PILOT_ENABLE_AMBIENT, value: "true"}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-abc
  namespace: shop
  labels: {app: web}
  annotations: {traffic.sidecar.istio.io/excludeOutboundPorts: "5432", unrelated: x}
spec:
  nodeName: n1
  containers:
  - name: web
    image: registry.k8s.io/pause:3.10
    command: [sh, -c, "serve; curl -X POST http://127.0.0.1:15020/quitquitquit"]
    livenessProbe: {exec: {command: ["true"]}}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: probed, namespace: shop, labels: {app: probed}}
spec:
  nodeName: n1
  containers: [{name: c, image: x, readinessProbe: {tcpSocket: {port: 80}}}]
status: {phase: Running}
`

func TestTheNetworkAMeshRunsInIsObserved(t *testing.T) {
	s := mustObserve(t, networkObjects)
	wantNP := []mesh.NetworkPolicy{
		{Namespace: "shop", Name: "egress-only", PodSelector: &mesh.LabelSelector{}},
		{Namespace: "shop", Name: "web", PodSelector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Ingress: true,
			IngressRules: []mesh.NetworkPolicyRule{
				{Ports: []string{"TCP/8080", "UDP/53", "TCP/9000-9100"}, IPBlocks: []string{"10.0.0.0/8 except 10.1.0.0/16"}, PeerSelectors: 1},
				{AnySource: true}}},
	}
	if d := cmp.Diff(wantNP, s.NetworkPolicies); d != "" {
		t.Errorf("NetworkPolicies (-want +got):\n%s", d)
	}
	wantCNI := &mesh.PrimaryCNI{Name: "cilium", ConfigMap: mesh.ObjectRef{Kind: "ConfigMap", Namespace: "kube-system", Name: "cilium-config"},
		Settings: map[string]string{"cni-exclusive": "true", "enable-bpf-masquerade": "false"}}
	if d := cmp.Diff(wantCNI, s.PrimaryCNI); d != "" {
		t.Errorf("PrimaryCNI (-want +got):\n%s", d)
	}
	wantRoutes := []mesh.Route{{Kind: "HTTPRoute", Namespace: "shop", Name: "split",
		Parents:  []mesh.RouteParent{{Kind: "Service", Namespace: "shop", Name: "web"}, {Kind: "Gateway", Namespace: "ingress", Name: "public"}},
		Backends: []mesh.ObjectRef{{Kind: "Service", Namespace: "shop", Name: "web"}, {Kind: "Service", Namespace: "shop", Name: "web-v2"}}}}
	if d := cmp.Diff(wantRoutes, s.Routes); d != "" {
		t.Errorf("Routes (-want +got):\n%s", d)
	}
	var wp *mesh.Gateway
	for i := range s.Gateways {
		if s.Gateways[i].Name == "waypoint" {
			wp = &s.Gateways[i]
		}
	}
	if wp == nil {
		t.Fatal("the waypoint Gateway was not observed")
	}
	wantL := []mesh.GatewayListener{{Name: "mesh", Port: 15008, Protocol: "HBONE", AllowedFrom: "Selector",
		AllowedSelector: &mesh.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}}
	if d := cmp.Diff(wantL, wp.Listeners); d != "" || wp.Generation != 3 || len(wp.Conditions) != 1 || wp.Conditions[0].Reason != "AddressNotUsable" {
		t.Errorf("waypoint listeners (-want +got):\n%s; generation %d, conditions %v", d, wp.Generation, wp.Conditions)
	}
	wantCfg := []mesh.IstioConfig{{Group: "networking.istio.io", Kind: "Sidecar", Namespace: "shop", Name: "default", Labels: map[string]string{"istio.io/rev": "prod"},
		Spec: map[string]any{"outboundTrafficPolicy": map[string]any{"mode": "REGISTRY_ONLY"}}}}
	if d := cmp.Diff(wantCfg, s.IstioConfig); d != "" {
		t.Errorf("IstioConfig (-want +got):\n%s", d)
	}
	if s.CNI == nil {
		t.Fatal("istio-cni was not observed")
	}
	if d := cmp.Diff([]mesh.ConfigMapEnv{{Env: "CNI_NETWORK_CONFIG", ConfigMap: "istio-cni-config", Key: "cni_network_config"},
		{Env: "OPT", ConfigMap: "other", Key: "k", Optional: true}}, s.CNI.ConfigMapEnv); d != "" {
		t.Errorf("CNI ConfigMapEnv (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"cni-bin-dir": "/opt/cni/bin"}, s.CNI.HostPaths); d != "" {
		t.Errorf("CNI HostPaths (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"AMBIENT_ENABLED", "EXCLUDE_NAMESPACES"}, s.CNI.ConfigKeys); d != "" {
		t.Errorf("CNI ConfigKeys (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"infra", "kube-system"}, s.CNI.ExcludeNamespaces); d != "" {
		t.Errorf("CNI ExcludeNamespaces (-want +got):\n%s", d)
	}
	if len(s.Revisions) != 1 || s.Revisions[0].Settings["AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY"] != "true" {
		t.Errorf("istiod Env = %v, want only the dry-run flag", s.Revisions)
	}
	byName := map[string]mesh.Workload{}
	for _, w := range s.Workloads {
		byName[w.Name] = w
	}
	web, probed := byName["web-abc"], byName["probed"]
	if d := cmp.Diff(map[string]string{"traffic.sidecar.istio.io/excludeOutboundPorts": "5432"}, web.Annotations); d != "" {
		t.Errorf("web annotations (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"127.0.0.1:15020/quitquitquit"}, web.AgentCalls); d != "" {
		t.Errorf("web agent calls (-want +got):\n%s", d)
	}
	if web.NetworkProbes || !probed.NetworkProbes {
		t.Errorf("network probes: web (exec only) %v, probed (tcpSocket) %v; want false, true", web.NetworkProbes, probed.NetworkProbes)
	}
}
