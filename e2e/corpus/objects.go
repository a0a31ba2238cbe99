//go:build e2e

package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The objects states are made of, as a user would write them.

var (
	gvrGateway   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	gvrHTTPRoute = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	gvrAuthz     = schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}
)

// labels renders a map as a YAML flow mapping.
func labels(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q: %q", k, m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// namespace creates a namespace with labels.
func (e *Env) namespace(ctx context.Context, name string, l map[string]string) error {
	return e.apply(ctx, `apiVersion: v1
kind: Namespace
metadata: {name: {{.Name}}, labels: {{.Labels}}}
`, map[string]any{"Name": name, "Labels": labels(l)})
}

// App is an application Deployment and, unless NoService, its Service on port 80.
type App struct {
	Namespace, Name string
	Replicas        int
	// PodLabels are added to app=<Name>; PodAnnotations go on the pod template.
	PodLabels, PodAnnotations map[string]string
	// ServiceLabels go on the Service.
	ServiceLabels map[string]string
	NoService     bool
	// Command of the container (kwok never runs it).
	Command []string
	// Probe adds a readiness probe on port 8080.
	Probe bool
}

// app creates the Deployment (and Service) of a.
func (e *Env) app(ctx context.Context, a App) error {
	if a.Replicas == 0 {
		a.Replicas = 2
	}
	pl := map[string]string{"app": a.Name}
	for k, v := range a.PodLabels {
		pl[k] = v
	}
	cmd := ""
	if len(a.Command) > 0 {
		q := make([]string, len(a.Command))
		for i, c := range a.Command {
			q[i] = fmt.Sprintf("%q", c)
		}
		cmd = "command: [" + strings.Join(q, ", ") + "]"
	}
	probe := ""
	if a.Probe {
		probe = "readinessProbe: {httpGet: {path: /healthz, port: 8080}}"
	}
	err := e.apply(ctx, `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{.Name}}, namespace: {{.Namespace}}}
spec:
  replicas: {{.Replicas}}
  selector: {matchLabels: {app: {{.Name}}}}
  template:
    metadata: {labels: {{.PodLabels}}, annotations: {{.PodAnnotations}}}
    spec:
      containers:
      - name: app
        image: {{.Image}}
        ports: [{containerPort: 8080, name: http}]
        {{.Command}}
        {{.Probe}}
`, map[string]any{"Name": a.Name, "Namespace": a.Namespace, "Replicas": a.Replicas, "PodLabels": labels(pl),
		"PodAnnotations": labels(a.PodAnnotations), "Image": appImage, "Command": cmd, "Probe": probe})
	if err != nil || a.NoService {
		return err
	}
	return e.apply(ctx, `apiVersion: v1
kind: Service
metadata: {name: {{.Name}}, namespace: {{.Namespace}}, labels: {{.Labels}}}
spec:
  selector: {app: {{.Name}}}
  ports: [{name: http, port: 80, targetPort: 8080}]
`, map[string]any{"Name": a.Name, "Namespace": a.Namespace, "Labels": labels(a.ServiceLabels)})
}

// Waypoint is a waypoint as `istioctl waypoint apply` writes it, with what istiod would generate for
// it (its Deployment and Service; istiod does not run on kwok).
type Waypoint struct {
	Namespace, Name string
	// For is istio.io/waypoint-for (service when empty); Rev the Gateway's istio.io/rev label.
	For, Rev string
	// Version of the proxy image of its pods.
	Version string
	// AllowedFrom is the HBONE listener's allowedRoutes.namespaces.from; empty leaves allowedRoutes
	// out (the Gateway API's default, Same).
	AllowedFrom string
	// ServicePort is the generated Service's port (15008 when zero).
	ServicePort int
	// NoDeployment leaves out what istiod would generate (a waypoint no revision deploys).
	NoDeployment bool
}

func (e *Env) waypoint(ctx context.Context, w Waypoint) error {
	l := map[string]string{"istio.io/waypoint-for": "service"}
	if w.For != "" {
		l["istio.io/waypoint-for"] = w.For
	}
	if w.Rev != "" {
		l["istio.io/rev"] = w.Rev
	}
	allowed := ""
	if w.AllowedFrom != "" {
		allowed = ", allowedRoutes: {namespaces: {from: " + w.AllowedFrom + "}}"
	}
	if err := e.apply(ctx, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: {{.Name}}, namespace: {{.Namespace}}, labels: {{.Labels}}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE{{.Allowed}}}]
`, map[string]any{"Name": w.Name, "Namespace": w.Namespace, "Labels": labels(l), "Allowed": allowed}); err != nil {
		return err
	}
	if w.NoDeployment {
		return nil
	}
	port := w.ServicePort
	if port == 0 {
		port = 15008
	}
	return e.apply(ctx, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
  labels: {gateway.networking.k8s.io/gateway-name: {{.Name}}, gateway.istio.io/managed: istio.io-mesh-controller}
spec:
  replicas: 1
  selector: {matchLabels: {gateway.networking.k8s.io/gateway-name: {{.Name}}}}
  template:
    metadata:
      labels: {gateway.networking.k8s.io/gateway-name: {{.Name}}, istio.io/dataplane-mode: none, sidecar.istio.io/inject: "false"}
    spec:
      containers:
      - {name: istio-proxy, image: "docker.io/istio/proxyv2:{{.Version}}", args: [proxy, waypoint]}
---
apiVersion: v1
kind: Service
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
  labels: {gateway.networking.k8s.io/gateway-name: {{.Name}}, gateway.istio.io/managed: istio.io-mesh-controller}
spec:
  selector: {gateway.networking.k8s.io/gateway-name: {{.Name}}}
  ports: [{name: mesh, port: {{.Port}}, protocol: TCP}]
`, map[string]any{"Name": w.Name, "Namespace": w.Namespace, "Version": w.Version, "Port": port})
}
