//go:build e2e

package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ambientkit/ambientkit/e2e/internal/charts"
)

// today is the date every command judges end of life at, so the answers do not move with the clock.
const today = "2026-12-01"

// Who answers a state (State.Answers).
const (
	byRegression  = "regression"
	byCorpus      = "corpus"
	byDanglingRef = "dangling references (ambient/knowledge/compat)"
)

func planUpgrade(target string, extra ...string) []string {
	return append([]string{"plan-upgrade", "--target", target, "--today", today}, extra...)
}

func migrateNS(ns string, extra ...string) []string {
	return append([]string{"migrate-namespace", "--namespace", ns}, extra...)
}

// ambientShop is the ambient namespace most states have: shop with Deployment and Service web.
func ambientShop(ctx context.Context, e *Env, extra map[string]string) error {
	l := map[string]string{"istio.io/dataplane-mode": "ambient"}
	for k, v := range extra {
		l[k] = v
	}
	if err := e.namespace(ctx, "shop", l); err != nil {
		return err
	}
	return e.app(ctx, App{Namespace: "shop", Name: "web"})
}

// sidecarShop is shop on sidecars: injected through the label given (istio-injection=enabled or
// istio.io/rev=<rev|tag>), with Deployment and Service web.
func sidecarShop(ctx context.Context, e *Env, label, value string, apps ...App) error {
	if err := e.namespace(ctx, "shop", map[string]string{label: value}); err != nil {
		return err
	}
	if len(apps) == 0 {
		apps = []App{{Name: "web"}}
	}
	for _, a := range apps {
		a.Namespace = "shop"
		if err := e.app(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

var states = []*State{
	// ---- control plane, revisions, tags -----------------------------------------------------------
	{
		ID:    "c02-gateway-unlabelled-no-default-tag",
		Title: "a Gateway without istio.io/rev in a mesh of revisions with no default tag",
		Sources: []string{"https://github.com/istio/istio/issues/55392", "https://github.com/istio/istio/issues/55897",
			"https://github.com/istio/istio/issues/56767"},
		Breaks: "Only revision 1-24-2 runs and no tag is called default. The ingress Gateway istio-ingress/gateway carries no " +
			"istio.io/rev and its namespace none either, so from 1.24.3 no istiod programs it: ingress traffic stops at the upgrade.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.24.2", Revision: "1-24-2"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, nil); err != nil {
				return err
			}
			if err := e.namespace(ctx, "istio-ingress", nil); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gateway, namespace: istio-ingress}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: shop}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
`, nil)
		},
		Command:      planUpgrade("1.24.3"),
		Expect:       []Expected{{Code: "GATEWAY_NOT_OWNED", Object: "Gateway istio-ingress/gateway"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "plan-upgrade stopped with an internal error and no plan: the new revision's install step checked that the " +
			"unowned Gateway stays owned by revision \"\", which plan.Validate refuses (GatewayOwner: param revision is required)",
		Rule: "GATEWAY_NOT_OWNED (ambient/knowledge/compat/revision.go checkGateways), reached now that revision.Upgrade no longer " +
			"checks an owner for a gateway that has none (revision/upgrade.go)",
	},
	{
		ID:      "c03-tag-names-missing-revision",
		Title:   "a revision tag still points at a revision that was uninstalled",
		Sources: []string{"https://github.com/istio/istio/issues/55897"},
		Breaks: "Tag canary was set on revision istio-1-24-2, which was then uninstalled: its webhook configuration " +
			"istio-revision-tag-canary still calls istiod-istio-1-24-2, which no longer exists, so pods of namespace legacy " +
			"(istio.io/rev=canary) fail admission or start without a sidecar.",
		Setup: func(ctx context.Context, e *Env) error {
			old := Istio{Version: "1.24.2", Revision: "istio-1-24-2", Tags: []string{"canary"}}
			if err := e.istio(ctx, old); err != nil {
				return err
			}
			if err := e.istiod(ctx, Istio{Version: "1.24.3", Revision: "istio-1-24-3", Tags: []string{"active"}}); err != nil {
				return err
			}
			if err := e.uninstall(ctx, istioNS, old.IstiodRelease()); err != nil {
				return err
			}
			return e.namespace(ctx, "legacy", map[string]string{"istio.io/rev": "canary"})
		},
		Command:      planUpgrade("1.25.5"),
		Expect:       []Expected{{Code: "TAG_REVISION_MISSING", Object: "MutatingWebhookConfiguration istio-revision-tag-canary"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	{
		ID:    "c04-stale-default-validator",
		Title: "istiod-default-validator still names a revision that was removed",
		Sources: []string{"https://github.com/istio/istio/issues/60537", "https://github.com/istio/istio/pull/60538",
			"https://github.com/istio/istio/issues/38880"},
		Breaks: "Revision 1-30-3 was uninstalled after 1-31-4 took over, but the base chart's istiod-default-validator still " +
			"names 1-30-3: validation calls a Service that is gone, and label-less gateways are claimed by a default revision " +
			"that no longer runs.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3", Revision: "1-30-3", NoZtunnel: true}); err != nil {
				return err
			}
			next := Istio{Version: "1.31.4", Revision: "1-31-4"}
			if err := e.istiod(ctx, next); err != nil {
				return err
			}
			if err := e.ztunnel(ctx, next); err != nil {
				return err
			}
			if err := e.uninstall(ctx, istioNS, "istiod-1-30-3"); err != nil {
				return err
			}
			return ambientShop(ctx, e, nil)
		},
		Command:      planUpgrade("1.32.0"),
		Expect:       []Expected{{Code: "DEFAULT_REVISION_MISSING", Object: "ValidatingWebhookConfiguration istiod-default-validator"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	{
		ID:      "m15-namespace-ambient-and-injection",
		Title:   "a namespace labelled for ambient and for sidecar injection at once",
		Sources: []string{"https://github.com/istio/istio/blob/master/pkg/config/analysis/analyzers/testdata/injection.yaml", "https://github.com/istio/istio/issues/60313"},
		Breaks: "Namespace mixed has istio.io/dataplane-mode=ambient and istio.io/rev=prod: the injector wins, its new pods get " +
			"sidecars, and a migration that trusts the ambient label is confused. Namespace calm has ambient and " +
			"istio-injection=disabled, which is fine.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3", Revision: "1-30-3", Tags: []string{"prod"}}); err != nil {
				return err
			}
			if err := e.namespace(ctx, "mixed", map[string]string{"istio.io/rev": "prod", "istio.io/dataplane-mode": "ambient"}); err != nil {
				return err
			}
			if err := e.app(ctx, App{Namespace: "mixed", Name: "orders"}); err != nil {
				return err
			}
			if err := e.namespace(ctx, "calm", map[string]string{"istio-injection": "disabled", "istio.io/dataplane-mode": "ambient"}); err != nil {
				return err
			}
			return e.app(ctx, App{Namespace: "calm", Name: "quotes"})
		},
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "NAMESPACE_SIDECAR_AND_AMBIENT", Object: "Namespace mixed"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	{
		ID:      "w09-waypoint-unowned-in-revisioned-mesh",
		Title:   "a waypoint without a revision label in a mesh with no default revision",
		Sources: []string{"https://github.com/istio/istio.io/issues/15410", "https://github.com/istio/istio/issues/53637"},
		Breaks: "Only revision 1-30-3 runs, no tag or default revision exists, and neither the waypoint Gateway shop/waypoint " +
			"nor its namespace names a revision: no istiod deploys it, so the traffic of shop bypasses it.",
		Kwok: "The waypoint has no Deployment because no istiod claims it, which is what the report shows.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3", Revision: "1-30-3", DefaultRevision: "-"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, map[string]string{"istio.io/use-waypoint": "waypoint"}); err != nil {
				return err
			}
			return e.waypoint(ctx, Waypoint{Namespace: "shop", Name: "waypoint", Version: "1.30.3", NoDeployment: true})
		},
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "GATEWAY_NOT_OWNED", Object: "Gateway shop/waypoint"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	// ---- ztunnel ----------------------------------------------------------------------------------
	{
		ID:    "z01-ztunnel-release-rename-1.25",
		Title: "a ztunnel Helm release not named ztunnel, before the 1.25 chart",
		Sources: []string{"https://github.com/istio/istio/issues/55359", "https://github.com/istio/istio/issues/55355",
			"https://github.com/istio/istio/blob/release-1.25/releasenotes/notes/ztunnel-helm-chart.yaml"},
		Breaks: "ztunnel was installed as release istio-ztunnel with the 1.24 chart (DaemonSet and ServiceAccount ztunnel). The " +
			"1.25.0 chart names them after the release: the upgrade creates DaemonSet istio-ztunnel and deletes ztunnel on every " +
			"node at once, and on 1.25.0 its pods cannot start (ServiceAccount missing).",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.24.6", ZtunnelRelease: "istio-ztunnel"}); err != nil {
				return err
			}
			return ambientShop(ctx, e, nil)
		},
		Command: planUpgrade("1.25.2", "--strategy", "in-place"),
		// The right answer is the plan that avoids the rename: it pins resourceName to the running
		// name, says so, and has no rename left to report.
		Expect:       []Expected{{Code: "SETTING_DEFAULT_CHANGES", Object: "HelmRelease istio-system/istio-ztunnel"}},
		Values:       []ExpectedValue{{Step: "ztunnel/ztunnel/upgrade", Key: "resourceName", Value: "ztunnel"}},
		Absent:       []string{"ZTUNNEL_UPGRADE_RENAMES_DAEMONSET"},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	{
		ID:    "z02-ztunnel-untrusted-namespace",
		Title: "istiod trusts a ztunnel account in a namespace where ztunnel does not run",
		Sources: []string{"https://github.com/istio-ecosystem/sail-operator/issues/2075", "https://github.com/tigera/operator/issues/4510",
			"https://github.com/istio/istio/issues/56550"},
		Breaks: "istiod was installed with trustedZtunnelNamespace=kube-system (CA_TRUSTED_NODE_ACCOUNTS=kube-system/ztunnel) " +
			"while ztunnel runs in istio-system: istiod refuses ztunnel's certificate requests for the pods it serves " +
			"(\"request impersonation authentication failure\"), new pods at once, every pod at rotation.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3", Istiod: map[string]any{"trustedZtunnelNamespace": "kube-system"}}); err != nil {
				return err
			}
			return ambientShop(ctx, e, nil)
		},
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "ZTUNNEL_NOT_TRUSTED", Object: "DaemonSet istio-system/ztunnel"}, {Code: "TRUSTED_ACCOUNT_WITHOUT_ZTUNNEL"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	{
		ID:      "z06-two-ztunnels-one-node",
		Title:   "a second ztunnel DaemonSet runs on a node the first one also runs on",
		Sources: []string{"https://github.com/istio-ecosystem/sail-operator/issues/1299"},
		Breaks: "A green ztunnel (release ztunnel-green, nodeSelector pool=green) was installed for a blue-green move, but the " +
			"blue one in istio-system has no node selector: node general-2 runs both, and istio-cni hands new pods to the newest " +
			"connection, so traffic on it is split between two ztunnels.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := e.labelNode(ctx, "general-2", "pool", "green"); err != nil {
				return err
			}
			green := Istio{Version: "1.30.3", ZtunnelRelease: "ztunnel-green", ZtunnelNamespace: "ztunnel-green",
				Ztunnel: map[string]any{"resourceName": "ztunnel", "nodeSelector": map[string]any{"pool": "green"}}}
			if err := e.ztunnel(ctx, green); err != nil {
				return err
			}
			return ambientShop(ctx, e, nil)
		},
		// bluegreen-ztunnel refuses this cluster with an options error before it plans; the
		// compatibility gate every primitive runs names the node.
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "ZTUNNEL_TWO_ON_ONE_NODE", Object: "Node general-2"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	{
		ID:      "z07-gitops-all-charts-at-once",
		Title:   "every chart bumped at once by GitOps; a node's ztunnel and istio-cni not ready",
		Sources: []string{"https://github.com/istio/istio/issues/53843", "https://github.com/istio/ztunnel/issues/1674"},
		Breaks: "istiod, istio-cni and ztunnel were upgraded from 1.23.5 to 1.24.0 together by Argo; on node general-1 the new " +
			"ztunnel and istio-cni pods are not ready, so ambient pods there cannot start (\"no ztunnel connection\") and an " +
			"upgrade plan must not start on top of it.",
		Kwok: "kwok marks every pod ready; after the upgrade the ztunnel and istio-cni pods of general-1 were patched not ready " +
			"(pods/status), as the kubelet reports a failing readiness probe.",
		Setup: func(ctx context.Context, e *Env) error {
			from := Istio{Version: "1.23.5"}
			if err := e.istio(ctx, from); err != nil {
				return err
			}
			to := Istio{Version: "1.24.0"}
			for _, r := range []charts.Release{
				{Name: "istiod", Namespace: istioNS, Chart: charts.ChartIstiod, Values: to.istiodValues()},
				{Name: "istio-cni", Namespace: istioNS, Chart: charts.ChartCNI, Values: map[string]any{"profile": "ambient", "global": to.global()}},
				{Name: "ztunnel", Namespace: istioNS, Chart: charts.ChartZtunnel, Values: map[string]any{"profile": "ambient", "hub": hub, "tag": to.Version, "global": to.global()}},
			} {
				if err := e.upgrade(ctx, to.Version, r); err != nil {
					return err
				}
			}
			if err := e.namespace(ctx, "shop", map[string]string{"istio.io/dataplane-mode": "ambient"}); err != nil {
				return err
			}
			return e.app(ctx, App{Namespace: "shop", Name: "web", Replicas: 6})
		},
		After: func(ctx context.Context, e *Env) error {
			for _, sel := range []string{"app=ztunnel", "k8s-app=istio-cni-node"} {
				if err := e.podNotReady(ctx, istioNS, sel, "general-1"); err != nil {
					return err
				}
			}
			return e.waitDaemonSetsNotReady(ctx, istioNS)
		},
		Command: planUpgrade("1.24.6", "--strategy", "in-place"),
		Expect: []Expected{{Code: "ZTUNNEL_ROLLOUT_INCOMPLETE", Object: "DaemonSet istio-system/ztunnel"},
			{Code: "CNI_ROLLOUT_INCOMPLETE", Object: "DaemonSet istio-system/istio-cni-node"},
			{Code: "AMBIENT_NODE_WITHOUT_READY_ZTUNNEL", Object: "Node general-1"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	// ---- migration: regressions -------------------------------------------------------------------
	{
		ID:    "t01-http-metrics-lost-without-waypoint",
		Title: "alerts and canary analysis read HTTP metrics of a namespace that moves to ambient without a waypoint",
		Sources: []string{"https://github.com/kiali/kiali/issues/6415", "https://github.com/kiali/kiali/issues/7774",
			"https://github.com/fluxcd/flagger/issues/1720"},
		Breaks: "shop runs on sidecars; a PrometheusRule alerts on istio_requests_total of shop and a Flagger MetricTemplate " +
			"reads istio_request_duration_milliseconds_bucket{reporter=\"destination\"}. Without a waypoint ztunnel reports TCP " +
			"metrics only: after the move the alert goes silent and the canary analysis finds no values.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := sidecarShop(ctx, e, "istio-injection", "enabled"); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: v1
kind: Namespace
metadata: {name: monitoring}
---
apiVersion: v1
kind: Namespace
metadata: {name: flagger}
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: shop-alerts, namespace: monitoring}
spec:
  groups:
  - name: shop
    rules:
    - alert: ShopErrors
      expr: sum(rate(istio_requests_total{destination_workload_namespace="shop",response_code=~"5.."}[5m])) > 1
---
apiVersion: flagger.app/v1beta1
kind: MetricTemplate
metadata: {name: request-duration, namespace: flagger}
spec:
  provider: {type: prometheus, address: "http://prometheus.monitoring:9090"}
  query: |
    histogram_quantile(0.99, sum(rate(istio_request_duration_milliseconds_bucket{reporter="destination",destination_workload_namespace="shop"}[1m])) by (le))
`, nil)
		},
		Command: migrateNS("shop"),
		Expect: []Expected{{Code: "TELEMETRY_HTTP_METRICS_LOST", Object: "PrometheusRule monitoring/shop-alerts"},
			{Code: "TELEMETRY_HTTP_METRICS_LOST", Object: "MetricTemplate flagger/request-duration"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
	{
		ID:      "w07-ztunnel-rejects-custom-policy",
		Title:   "a CUSTOM AuthorizationPolicy that nothing enforces once the namespace has no sidecars",
		Sources: []string{"https://github.com/istio/istio/blob/master/pkg/config/analysis/analyzers/testdata/condition-analyzer.yaml"},
		Breaks: "shop's ext-authz policy (action CUSTOM, provider oauth2, selector app=web) is enforced by the sidecars; ztunnel " +
			"does not support CUSTOM (status ZtunnelAccepted=False, UnsupportedValue), so after the move without a waypoint " +
			"every request reaches web unchecked.",
		Kwok: "istiod does not run on kwok: the ZtunnelAccepted condition was written as istiod writes it.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := sidecarShop(ctx, e, "istio-injection", "enabled"); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ext-authz, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  action: CUSTOM
  provider: {name: oauth2}
  rules: [{to: [{operation: {paths: ["/admin/*"]}}]}]
`, nil)
		},
		After: func(ctx context.Context, e *Env) error {
			return e.patchStatus(ctx, gvrAuthz, "shop", "ext-authz", map[string]any{"conditions": []any{map[string]any{
				"type": "ZtunnelAccepted", "status": "False", "reason": "UnsupportedValue", "message": "ztunnel does not support the CUSTOM action",
				"lastTransitionTime": "2026-11-30T00:00:00Z", "observedGeneration": 1}}})
		},
		Command:      migrateNS("shop"),
		Expect:       []Expected{{Code: "POLICY_NOT_ENFORCED_WITHOUT_WAYPOINT", Object: "AuthorizationPolicy shop/ext-authz"}},
		BeforeCorpus: beforeAnswered, Answers: byRegression,
	},
}

// labelNode sets a label on a node.
func (e *Env) labelNode(ctx context.Context, node, key, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	_, err := e.cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// uninstall removes a Helm release the state installed.
func (e *Env) uninstall(ctx context.Context, ns, name string) error {
	for i, r := range e.releases {
		if r.namespace == ns && r.name == name {
			e.releases = append(e.releases[:i], e.releases[i+1:]...)
			break
		}
	}
	return e.helm("").Uninstall(ctx, name, ns)
}

// podNotReady marks the pod matching selector on node not ready, as the kubelet does when its
// readiness probe fails.
func (e *Env) podNotReady(ctx context.Context, ns, selector, node string) error {
	pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector, FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no pod %s on %s", selector, node)
	}
	for _, p := range pods.Items {
		patch := `{"status":{"conditions":[{"type":"Ready","status":"False","reason":"ReadinessProbeFailed"},{"type":"ContainersReady","status":"False"}]}}`
		if _, err := e.cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("pod %s not ready: %w", p.Name, err)
		}
	}
	return nil
}

// waitDaemonSetsNotReady waits until the DaemonSet controller counted the unready pods.
func (e *Env) waitDaemonSetsNotReady(ctx context.Context, ns string) error {
	return pollUntil(ctx, func(ctx context.Context) (bool, error) {
		dss, err := e.cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, d := range dss.Items {
			if d.Status.NumberReady >= d.Status.DesiredNumberScheduled {
				return false, nil
			}
		}
		return true, nil
	})
}
