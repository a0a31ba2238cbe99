package tags

import (
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// serviceTagsSince is the first Istio version that represents tags as Services too (istio-facts §1.6).
var serviceTagsSince = mesh.Version{Major: 1, Minor: 28}

// WebhookName returns the MutatingWebhookConfiguration name of a tag, as the istiod chart renders it.
func WebhookName(tag, namespace string) string {
	if namespace == "" || namespace == "istio-system" {
		return "istio-revision-tag-" + tag
	}
	return "istio-revision-tag-" + tag + "-" + namespace
}

// ServiceName returns the tag Service name (Istio 1.28+).
func ServiceName(tag string) string { return "istiod-revision-tag-" + tag }

// istiodService returns the Service name of a revision's istiod.
func istiodService(rev string) string {
	if rev == "default" {
		return "istiod"
	}
	return "istiod-" + rev
}

// Render returns the objects that make tag point at revision rev of the given version, as the istiod
// chart's revision-tags templates render them: the MutatingWebhookConfiguration and, from Istio 1.28,
// the Service. caBundle is left to istiod, which patches the webhooks labelled with its revision.
func Render(tag, rev, namespace string, version mesh.Version) []map[string]any {
	labels := map[string]any{
		mesh.LabelTag:                 tag,
		mesh.LabelRev:                 rev,
		"app":                         "sidecar-injector",
		"app.kubernetes.io/name":      "istiod",
		"app.kubernetes.io/part-of":   "istio",
		"operator.istio.io/component": "Pilot",
	}
	client := map[string]any{"service": map[string]any{"name": istiodService(rev), "namespace": namespace, "path": "/inject", "port": float64(443)}}
	common := func(name string, ns, obj map[string]any) map[string]any {
		return map[string]any{
			"name": name, "clientConfig": client,
			"admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "failurePolicy": "Fail",
			"reinvocationPolicy": "Never",
			"rules":              []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"pods"}}},
			"namespaceSelector":  ns, "objectSelector": obj,
		}
	}
	expr := func(key, op string, values ...string) map[string]any {
		e := map[string]any{"key": key, "operator": op}
		if len(values) > 0 {
			vs := make([]any, len(values))
			for i, v := range values {
				vs[i] = v
			}
			e["values"] = vs
		}
		return e
	}
	sel := func(exprs ...map[string]any) map[string]any {
		l := make([]any, len(exprs))
		for i, e := range exprs {
			l[i] = e
		}
		return map[string]any{"matchExpressions": l}
	}
	webhooks := []any{
		common("rev.namespace.sidecar-injector.istio.io",
			sel(expr(mesh.LabelRev, "In", tag), expr(mesh.LabelInjection, "DoesNotExist")),
			sel(expr(mesh.LabelSidecarInject, "NotIn", "false"))),
		common("rev.object.sidecar-injector.istio.io",
			sel(expr(mesh.LabelRev, "DoesNotExist"), expr(mesh.LabelInjection, "DoesNotExist")),
			sel(expr(mesh.LabelSidecarInject, "NotIn", "false"), expr(mesh.LabelRev, "In", tag))),
	}
	if tag == "default" {
		webhooks = append(webhooks,
			common("namespace.sidecar-injector.istio.io",
				sel(expr(mesh.LabelInjection, "In", "enabled")),
				sel(expr(mesh.LabelSidecarInject, "NotIn", "false"))),
			common("object.sidecar-injector.istio.io",
				sel(expr(mesh.LabelInjection, "DoesNotExist"), expr(mesh.LabelRev, "DoesNotExist")),
				sel(expr(mesh.LabelSidecarInject, "In", "true"), expr(mesh.LabelRev, "DoesNotExist"))))
	}
	out := []map[string]any{{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "MutatingWebhookConfiguration",
		"metadata":   map[string]any{"name": WebhookName(tag, namespace), "labels": labels},
		"webhooks":   webhooks,
	}}
	if !version.Less(serviceTagsSince) {
		port := func(name string, p, target float64) map[string]any {
			return map[string]any{"name": name, "port": p, "protocol": "TCP", "targetPort": target}
		}
		out = append(out, map[string]any{
			"apiVersion": "v1",
			"kind":       "Service",
			"metadata": map[string]any{"name": ServiceName(tag), "namespace": namespace, "labels": map[string]any{
				mesh.LabelTag: tag, mesh.LabelRev: rev, "app": "istiod", "istio": "pilot"}},
			"spec": map[string]any{
				"selector": map[string]any{"app": "istiod", mesh.LabelRev: rev},
				"ports": []any{port("grpc-xds", 15010, 15010), port("https-dns", 15012, 15012),
					port("https-webhook", 443, 15017), port("http-monitoring", 15014, 15014)},
			},
		})
	}
	return out
}
