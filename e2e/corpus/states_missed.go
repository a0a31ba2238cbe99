//go:build e2e

package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ambientkit/ambientkit/e2e/internal/charts"
)

// The states main missed before the corpus landed: the ones the corpus's own rules answer, then the
// ones waiting for another area's change (Pending).
func init() { states = append(states, missedStates...) }

var gvrDaemonSet = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}

var missedStates = []*State{
	// ---- NetworkPolicies --------------------------------------------------------------------------
	{
		ID:    "m03-networkpolicy-blocks-hbone",
		Title: "a NetworkPolicy admits only the application port; ambient traffic arrives on 15008",
		Sources: []string{"https://github.com/istio/istio/issues/52742", "https://github.com/istio/istio/issues/56659",
			"https://github.com/istio/istio.io/pull/15580"},
		Breaks: "shop runs on sidecars; NetworkPolicy web-ingress admits TCP 8080 only. Once shop joins ambient its clients' " +
			"ztunnels send HBONE to port 15008, which the policy drops: every mesh request to web times out.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := sidecarShop(ctx, e, "istio-injection", "enabled"); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-ingress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
  - from: [{namespaceSelector: {}}]
    ports: [{protocol: TCP, port: 8080}]
`, nil)
		},
		Command:      migrateNS("shop"),
		Expect:       []Expected{{Code: "NETWORKPOLICY_BLOCKS_HBONE", Object: "NetworkPolicy shop/web-ingress"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "the observer did not read NetworkPolicies (networking.k8s.io), so no rule could see that the namespace's only ingress rule admits port 8080 and not HBONE's 15008",
		Rule:   "compat.NetworkPolicyFindings (ambient/knowledge/compat/network.go), which migrate.MigrateNamespace runs for the namespace it moves",
	},
	{
		ID:      "m03b-networkpolicy-blocks-hbone-in-ambient",
		Title:   "an ambient namespace whose NetworkPolicy drops HBONE",
		Sources: []string{"https://github.com/istio/istio/issues/52742"},
		Breaks: "shop is in ambient and NetworkPolicy web-ingress admits TCP 8080 only: ztunnel's connections to port 15008 " +
			"time out (\"maybe a NetworkPolicy is blocking HBONE port 15008\"); the mesh is broken now, and an upgrade's health " +
			"gates would judge it against a baseline that already fails.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, nil); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-ingress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - ports: [{protocol: TCP, port: 8080}]
`, nil)
		},
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "NETWORKPOLICY_BLOCKS_HBONE", Object: "NetworkPolicy shop/web-ingress"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "NetworkPolicies were not read, and the upgrade gate had no rule about the network an ambient namespace already runs in",
		Rule:   "networkPolicyRules in the compatibility gate (ambient/knowledge/compat/network.go), run by every primitive",
	},
	{
		ID:    "m04-networkpolicy-blocks-probes",
		Title: "a default-deny NetworkPolicy drops kubelet probes, which ambient sends from 169.254.7.127",
		Sources: []string{"https://github.com/istio/istio/issues/58531", "https://github.com/istio/istio.io/pull/16660",
			"https://github.com/kartverket/skiperator/pull/940"},
		Breaks: "shop denies all ingress but from its own pods. In sidecar mode kubelet probes come from the node and pass; " +
			"istio-cni SNATs them to 169.254.7.127 in ambient, which the policy drops: after the move every pod of shop goes " +
			"unready and the rollout stalls.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := sidecarShop(ctx, e, "istio-injection", "enabled", App{Name: "web", Probe: true}); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: shop}
spec:
  podSelector: {}
  policyTypes: [Ingress]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-same-namespace, namespace: shop}
spec:
  podSelector: {}
  ingress: [{from: [{podSelector: {}}]}]
`, nil)
		},
		Command:      migrateNS("shop"),
		Expect:       []Expected{{Code: "NETWORKPOLICY_BLOCKS_AMBIENT_PROBES", Object: "Deployment shop/web"}},
		Absent:       []string{"NETWORKPOLICY_BLOCKS_HBONE"},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "NetworkPolicies were not read, and nothing knew that istio-cni SNATs kubelet probes to 169.254.7.127 in ambient",
		Rule:   "compat.NetworkPolicyFindings (ambient/knowledge/compat/network.go: ruleAdmits against 169.254.7.127 for workloads with probes)",
	},
	// ---- what sidecars applied and ambient ignores ------------------------------------------------
	{
		ID:      "m05-traffic-annotations-ignored",
		Title:   "sidecar capture exclusions that ambient does not read",
		Sources: []string{"https://github.com/istio/istio/issues/49829", "https://github.com/istio/istio/issues/46488"},
		Breaks: "db-client excludes port 5432 and the metadata address 169.254.169.254 from its sidecar with " +
			"traffic.sidecar.istio.io annotations. istio-cni's ambient agent reads none of them: after the move ztunnel " +
			"captures that traffic too (an external database with its own TLS, the cloud metadata endpoint).",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			return sidecarShop(ctx, e, "istio-injection", "enabled", App{Name: "web"}, App{Name: "db-client", NoService: true,
				PodAnnotations: map[string]string{"traffic.sidecar.istio.io/excludeOutboundPorts": "5432",
					"traffic.sidecar.istio.io/excludeOutboundIPRanges": "169.254.169.254/32"}})
		},
		Command:      migrateNS("shop"),
		Expect:       []Expected{{Code: "CAPTURE_EXCLUSION_IGNORED_IN_AMBIENT", Object: "Deployment shop/db-client"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "pod template annotations other than redirection and sidecar status were dropped by the observer, and the migration had no list of sidecar-only annotations",
		Rule:   "workloadChanges (migrate/ambientchanges.go) on the traffic.sidecar.istio.io/* annotations the observer now keeps",
	},
	{
		ID:    "m06-sidecar-egress-controls-lost",
		Title: "a Sidecar resource restricts egress; ambient ignores it",
		Sources: []string{"https://github.com/istio/istio/blob/master/pkg/config/analysis/analyzers/testdata/sidecar-default-selector.yaml",
			"https://github.com/istio/istio/issues/54281"},
		Breaks: "Sidecar shop/default limits egress to registered hosts (REGISTRY_ONLY, ./* and istio-system/*). There is no " +
			"sidecar in ambient, so the resource has no effect (istioctl analyze: IneffectivePolicy) and after the move shop can " +
			"reach anything: a silent security regression.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := sidecarShop(ctx, e, "istio-injection", "enabled"); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: shop}
spec:
  outboundTrafficPolicy: {mode: REGISTRY_ONLY}
  egress: [{hosts: ["./*", "istio-system/*"]}]
`, nil)
		},
		Command:      migrateNS("shop"),
		Expect:       []Expected{{Code: "SIDECAR_RESOURCE_NO_EFFECT", Object: "Sidecar shop/default"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "the Sidecar kind (networking.istio.io) was not read at all",
		Rule:   "sidecarResources (migrate/ambientchanges.go) on the Sidecar objects the observer now reads",
	},
	{
		ID:    "m08-serviceentry-none-no-healthy-upstream",
		Title: "clients of a resolution NONE ServiceEntry move to ambient before Istio 1.28",
		Sources: []string{"https://github.com/istio/istio/issues/56369", "https://github.com/istio/istio/pull/57656",
			"https://github.com/istio/istio/blob/release-1.28/releasenotes/notes/57656.yaml"},
		Breaks: "shop's sidecars reach Redis VMs through ServiceEntry redis/redis-default (resolution NONE, addresses " +
			"10.10.0.5/32). Before 1.28 istiod gives ztunnel such an entry as a VIP without endpoints: after the move shop's " +
			"connections fail with \"no healthy upstream\".",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.27.9"}); err != nil {
				return err
			}
			if err := sidecarShop(ctx, e, "istio-injection", "enabled"); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: v1
kind: Namespace
metadata: {name: redis}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: redis-default, namespace: redis}
spec:
  hosts: [redis.internal.example]
  addresses: [10.10.0.5/32]
  location: MESH_INTERNAL
  resolution: NONE
  ports: [{number: 6379, name: tcp-redis, protocol: TCP}]
`, nil)
		},
		Command:      migrateNS("shop"),
		Expect:       []Expected{{Code: "SERVICEENTRY_RESOLUTION_NONE_UNSUPPORTED", Object: "ServiceEntry redis/redis-default"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "ServiceEntries were not read, and no rule knew that istiod before 1.28 gives ztunnel resolution NONE entries without endpoints",
		Rule:   "serviceEntriesNone (migrate/ambientchanges.go), bound to the running istiod's version",
	},
	{
		ID:      "m14-job-calls-sidecar-quit",
		Title:   "a CronJob ends by calling the sidecar agent's quitquitquit",
		Sources: []string{"https://github.com/istio/istio/issues/6324", "https://github.com/astronomer/helm.astronomer.io/pull/188"},
		Breaks: "CronJob shop/nightly finishes with `curl -fsS -X POST http://127.0.0.1:15020/quitquitquit` so its sidecar " +
			"exits. Without a sidecar nothing listens there: the command fails (\"connection refused\") and every run is " +
			"marked failed after the move.",
		Kwok: "The Job of the CronJob was created by hand (as the CronJob controller would at its schedule) and its pod kept " +
			"running, so the dump holds the pod's command.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := sidecarShop(ctx, e, "istio-injection", "enabled"); err != nil {
				return err
			}
			return e.cronJobRun(ctx, "shop", "nightly", []string{"sh", "-c", "run-report && curl -fsS -X POST http://127.0.0.1:15020/quitquitquit"})
		},
		Command:      migrateNS("shop"),
		Expect:       []Expected{{Code: "WORKLOAD_CALLS_SIDECAR_AGENT", Object: "CronJob shop/nightly"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "Jobs and CronJobs were observed as metadata only and container commands were dropped",
		Rule:   "workloadChanges (migrate/ambientchanges.go) on the container commands the observer now keeps",
	},
	{
		ID:      "m01-ingress-bypasses-waypoint",
		Title:   "an ingress gateway sends straight to pods whose L7 rules move to a waypoint",
		Sources: []string{"https://github.com/istio/istio/issues/51214", "https://github.com/istio/istio/pull/54483"},
		Breaks: "shop's only-get policy (GET only on web) moves to the waypoint the migration creates. The ingress Gateway " +
			"ingress/public routes to Service web through HTTPRoute ingress/web, and neither web nor shop carries " +
			"istio.io/ingress-use-waypoint: ingress requests skip the waypoint, so after the move they reach web with L4 " +
			"checks only.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := sidecarShop(ctx, e, "istio-injection", "enabled"); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: only-get, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  rules: [{to: [{operation: {methods: [GET]}}]}]
---
apiVersion: v1
kind: Namespace
metadata: {name: ingress}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: public, namespace: ingress}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: Same}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: ingress}
spec:
  parentRefs: [{name: public}]
  rules: [{backendRefs: [{name: web, namespace: shop, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-ingress, namespace: shop}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ingress}]
  to: [{group: "", kind: Service}]
`, nil)
		},
		Command:      migrateNS("shop", "--waypoint", "waypoint", "--apply", "all"),
		Expect:       []Expected{{Code: "INGRESS_BYPASSES_WAYPOINT", Object: "Service shop/web"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "HTTPRoutes and the istio.io/ingress-use-waypoint label were not read; the migration never related an ingress route to the waypoint its policies move to",
		Rule:   "ingressBypass (migrate/ambientchanges.go) over the observed HTTPRoutes, Gateways and Service labels",
	},
	// ---- istio-cni and the platform ---------------------------------------------------------------
	{
		ID:    "n02-cni-exclude-namespaces-unenrolls",
		Title: "an ambient namespace is listed in istio-cni's excludeNamespaces, before the 1.30 upgrade",
		Sources: []string{"https://github.com/istio/istio/issues/59295", "https://github.com/istio/istio/pull/59471",
			"https://github.com/istio/istio/blob/release-1.30/releasenotes/notes/59295.yaml"},
		Breaks: "istio-cni 1.29 was installed with excludeNamespaces [kube-system, infra] while infra is in ambient. Before " +
			"1.30 only the CNI plugin honoured the list and the agent still enrolled infra's pods; from 1.30 the agent honours " +
			"it too: the CNI upgrade takes every pod of infra out of the mesh (plaintext, STRICT peers refuse it).",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.29.6", CNI: map[string]any{"excludeNamespaces": []any{"kube-system", "infra"}}}); err != nil {
				return err
			}
			if err := e.namespace(ctx, "infra", map[string]string{"istio.io/dataplane-mode": "ambient"}); err != nil {
				return err
			}
			return e.app(ctx, App{Namespace: "infra", Name: "registry"})
		},
		Command:      planUpgrade("1.30.8", "--strategy", "in-place"),
		Expect:       []Expected{{Code: "CNI_EXCLUDES_AMBIENT_NAMESPACE", Object: "Namespace infra"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "only the AMBIENT_* keys of istio-cni-config were kept (not EXCLUDE_NAMESPACES), and no rule knew the 1.30 agent honours the list",
		Rule:   "checkExcludedAmbient (ambient/knowledge/compat/cniconfig.go), bound to targets from 1.30",
	},
	{
		ID:      "n04-cni-stale-network-config-env",
		Title:   "the istio-cni DaemonSet reads a ConfigMap key that no longer exists",
		Sources: []string{"https://github.com/istio/istio/issues/54846"},
		Breaks: "After an upgrade the istio-cni-node DaemonSet still sets CNI_NETWORK_CONFIG from key cni_network_config of " +
			"ConfigMap istio-cni-config, which the new chart no longer writes: the kubelet refuses to start the agent " +
			"(CreateContainerConfigError, \"couldn't find key cni_network_config\"), node by node as the rollout goes, and " +
			"with the plugin still configured no pod on those nodes can start.",
		Kwok: "kwok starts the agent pods anyway; the kubelet would hold them in CreateContainerConfigError.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.24.2"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, nil); err != nil {
				return err
			}
			patch := `[{"op":"add","path":"/spec/template/spec/containers/0/env/-","value":{"name":"CNI_NETWORK_CONFIG",` +
				`"valueFrom":{"configMapKeyRef":{"name":"istio-cni-config","key":"cni_network_config"}}}}]`
			_, err := e.dyn.Resource(gvrDaemonSet).Namespace(istioNS).Patch(ctx, "istio-cni-node", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
			return err
		},
		Command:      planUpgrade("1.24.6", "--strategy", "in-place"),
		Expect:       []Expected{{Code: "CNI_ENV_REFERENCES_MISSING_KEY", Object: "DaemonSet istio-system/istio-cni-node"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "the istio-cni DaemonSet's env was not observed, so an env var reading a key the ConfigMap lacks went unseen (only CNI_ROLLOUT_INCOMPLETE once pods fail)",
		Rule:   "checkCNIEnvKeys (ambient/knowledge/compat/cniconfig.go)",
	},
	{
		ID:    "n05-gke-cni-bin-dir",
		Title: "istio-cni on GKE nodes writes its plugin to the read-only /opt/cni/bin",
		Sources: []string{"https://github.com/istio/istio/issues/53849", "https://github.com/istio/istio/issues/58094",
			"https://github.com/istio/istio/blob/release-1.25/releasenotes/notes/54141.yaml"},
		Breaks: "The nodes are GKE's (pool label cloud.google.com/gke-nodepool, kubelet v1.33.4-gke.1245000), but the cni " +
			"chart was rendered without global.platform=gke and with a Kubernetes version that does not say -gke (Helm 3.19 " +
			"strips it), so cni-bin-dir is /opt/cni/bin instead of /home/kubernetes/bin: the agent crash-loops on the read-only " +
			"path and no pod is redirected.",
		Kwok: "kwok runs no agent, so nothing crash-loops; the dump holds the DaemonSet's host path and the nodes.",
		Setup: func(ctx context.Context, e *Env) error {
			for i := 0; i < 3; i++ {
				if err := e.node(ctx, fmt.Sprintf("gke-prod-default-pool-%d", i), map[string]string{"cloud.google.com/gke-nodepool": "default-pool"},
					"v1.33.4-gke.1245000"); err != nil {
					return err
				}
			}
			if err := e.istio(ctx, Istio{Version: "1.26.8"}); err != nil {
				return err
			}
			return ambientShop(ctx, e, nil)
		},
		NoBaseNodes:  true,
		Command:      planUpgrade("1.27.9", "--strategy", "in-place"),
		Expect:       []Expected{{Code: "CNI_BIN_DIR_WRONG_FOR_PLATFORM", Object: "DaemonSet istio-system/istio-cni-node"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "the istio-cni DaemonSet's host paths were not observed, and nothing compared them with the nodes' platform",
		Rule:   "checkCNIBinDir (ambient/knowledge/compat/cniconfig.go) on the DaemonSet's cni-bin-dir volume and GKE node labels",
	},
	{
		ID:    "n06-cilium-incompatible-config",
		Title: "Cilium settings that break istio-cni's chained plugin and ambient redirection",
		Sources: []string{"https://github.com/istio/istio/blob/master/operator/pkg/apis/validation/validation.go",
			"https://github.com/istio/istio/pull/52902", "https://github.com/istio/istio/issues/52208", "https://github.com/istio/istio/issues/55937"},
		Breaks: "kube-system/cilium-config sets cni-exclusive=true, so Cilium keeps overwriting istio-cni's chained config, and " +
			"enable-bpf-masquerade=true, with which ambient probes and traffic time out. istioctl's precheck refuses both.",
		Kwok: "No Cilium runs on kwok; the dump holds its ConfigMap as Cilium writes it.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.27.9"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, nil); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {cni-exclusive: "true", enable-bpf-masquerade: "true", kube-proxy-replacement: "true", bpf-lb-sock-hostns-only: "true"}
`, nil)
		},
		Command:      planUpgrade("1.28.10", "--strategy", "in-place"),
		Expect:       []Expected{{Code: "PRIMARY_CNI_INCOMPATIBLE", Object: "ConfigMap kube-system/cilium-config"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "kube-system/cilium-config was not read",
		Rule:   "primaryCNIRules (ambient/knowledge/compat/network.go) on the primary CNI's settings the observer now reads",
	},
	// ---- waypoints and routes ---------------------------------------------------------------------
	{
		ID:    "w02-cross-namespace-waypoint-not-allowed",
		Title: "a namespace uses a waypoint of another namespace whose listener admits only its own",
		Sources: []string{"https://github.com/istio/istio.io/pull/15649", "https://github.com/istio/istio/pull/51846",
			"https://github.com/istio/istio/blob/master/pilot/pkg/serviceregistry/ambient/waypoints.go"},
		Breaks: "shop is labelled to use waypoint infra/shared-waypoint, whose HBONE listener allows routes from Same (the " +
			"default): istiod does not bind shop to it, and shop's traffic bypasses the waypoint and its L7 policies.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := e.namespace(ctx, "infra", nil); err != nil {
				return err
			}
			if err := e.waypoint(ctx, Waypoint{Namespace: "infra", Name: "shared-waypoint", Version: "1.30.3", AllowedFrom: "Same"}); err != nil {
				return err
			}
			return ambientShop(ctx, e, map[string]string{"istio.io/use-waypoint": "shared-waypoint", "istio.io/use-waypoint-namespace": "infra"})
		},
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "WAYPOINT_DOES_NOT_ALLOW_NAMESPACE", Object: "Namespace shop"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "Gateway listeners and allowedRoutes were not observed; the planners took a namespace's use-waypoint label as bound",
		Rule:   "checkWaypointAllowed (ambient/knowledge/compat/waypointbind.go)",
	},
	{
		ID:      "w04-waypoint-not-programmed",
		Title:   "a waypoint with ready pods that istiod reports not Programmed",
		Sources: []string{"https://github.com/istio/istio/blob/master/pkg/config/analysis/analyzers/testdata/condition-analyzer.yaml"},
		Breaks: "Gateway shop/waypoint has a ready pod, but its generated Service lacks port 15008 and istiod reports " +
			"Programmed=False (AddressNotUsable): the waypoint is unusable while every health gate that counts ready pods passes.",
		Kwok: "istiod does not run on kwok: the Gateway's status was written as istiod writes it.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, map[string]string{"istio.io/use-waypoint": "waypoint"}); err != nil {
				return err
			}
			return e.waypoint(ctx, Waypoint{Namespace: "shop", Name: "waypoint", Version: "1.30.3", ServicePort: 80})
		},
		After: func(ctx context.Context, e *Env) error {
			return e.patchStatus(ctx, gvrGateway, "shop", "waypoint", map[string]any{"conditions": []any{
				map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "Resource accepted",
					"lastTransitionTime": "2026-11-30T00:00:00Z", "observedGeneration": 1},
				map[string]any{"type": "Programmed", "status": "False", "reason": "AddressNotUsable",
					"message": "port 15008 not found for hostname waypoint.shop.svc.cluster.local", "lastTransitionTime": "2026-11-30T00:00:00Z", "observedGeneration": 1},
			}})
		},
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "WAYPOINT_NOT_PROGRAMMED", Object: "Gateway shop/waypoint"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "Gateway status conditions were not observed; waypoint readiness counted ready pods only",
		Rule:   "checkWaypointProgrammed (ambient/knowledge/compat/waypointbind.go) on the Programmed condition",
	},
	{
		ID:    "w06-httproute-parent-not-bound",
		Title: "an HTTPRoute on a Service that has no waypoint",
		Sources: []string{"https://github.com/istio/istio/blob/master/pkg/config/analysis/analyzers/testdata/condition-analyzer.yaml",
			"https://github.com/istio/istio/issues/54496"},
		Breaks: "HTTPRoute shop/web-split sends 10% of web's traffic to web-v2, attached to Service web. shop is in ambient and " +
			"web has no waypoint: only a waypoint applies a Service-attached route, so the split silently does nothing " +
			"(Accepted=False, WaypointNotBound).",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, nil); err != nil {
				return err
			}
			if err := e.app(ctx, App{Namespace: "shop", Name: "web-v2"}); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web-split, namespace: shop}
spec:
  parentRefs: [{group: "", kind: Service, name: web, port: 80}]
  rules: [{backendRefs: [{name: web, port: 80, weight: 90}, {name: web-v2, port: 80, weight: 10}]}]
`, nil)
		},
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "ROUTE_PARENT_HAS_NO_WAYPOINT", Object: "HTTPRoute shop/web-split"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "existing HTTPRoutes were not read (the migration writes HTTPRoutes, it did not look at the ones there)",
		Rule:   "checkRouteParents (ambient/knowledge/compat/waypointbind.go)",
	},
	// ---- waiting for another area ---------------------------------------------------------------
	{
		ID:    "w01-use-waypoint-dangling",
		Title: "istio.io/use-waypoint names a waypoint that does not exist",
		Sources: []string{"https://github.com/istio/istio.io/pull/17520", "https://github.com/istio/istio/issues/53637",
			"https://github.com/istio/istio/blob/master/pkg/config/analysis/analyzers/testdata/condition-analyzer.yaml"},
		Breaks: "shop is labelled istio.io/use-waypoint=waypoint but no Gateway shop/waypoint exists: ztunnel sends shop's " +
			"traffic straight to the pods, so policy allow-get (L7, targetRefs Service web) is enforced by nothing.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.30.3"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, map[string]string{"istio.io/use-waypoint": "waypoint"}); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-get, namespace: shop}
spec:
  targetRefs: [{kind: Service, group: "", name: web}]
  rules: [{to: [{operation: {methods: [GET]}}]}]
`, nil)
		},
		Command:      planUpgrade("1.31.4"),
		Expect:       []Expected{{Code: "WAYPOINT_REFERENCE_DANGLING", Object: "Namespace shop"}},
		BeforeCorpus: beforePartly, Answers: byDanglingRef,
		Rule:   "checkWaypointReferences in the compatibility gate (ambient/knowledge/compat/references.go), run by every primitive",
		Before: "WAYPOINT_NOT_READY and WAYPOINT_NEEDED_BUT_MISSING speak only inside the migration of the namespace that needs the waypoint; the upgrade gate said nothing of a label that names no Gateway",
	},
	{
		ID:    "c01-tag-move-drops-gateway-config",
		Title: "moving a tag while its gateways run on a revision that drops their config",
		Sources: []string{"https://github.com/istio/istio/issues/59959", "https://github.com/istio/istio/issues/57135",
			"https://github.com/istio/istio/pull/60158"},
		Breaks: "Tag prod points at 1-29-4; waypoint shop/waypoint and ingress Gateway ingress/public follow it, with pods on " +
			"proxy 1.29.4. When prod moves to 1-30-1, the old istiod stops emitting their config while their pods are still " +
			"connected to it (fixed in 1.29.5 and 1.30.2): about 30 seconds of failed requests until the new pods take over.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.29.4", Revision: "1-29-4", Tags: []string{"prod"}}); err != nil {
				return err
			}
			if err := e.istiod(ctx, Istio{Version: "1.30.1", Revision: "1-30-1"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, map[string]string{"istio.io/use-waypoint": "waypoint"}); err != nil {
				return err
			}
			if err := e.waypoint(ctx, Waypoint{Namespace: "shop", Name: "waypoint", Rev: "prod", Version: "1.29.4"}); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: v1
kind: Namespace
metadata: {name: ingress}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: public, namespace: ingress, labels: {istio.io/rev: prod}}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: public-istio, namespace: ingress, labels: {gateway.networking.k8s.io/gateway-name: public, gateway.istio.io/managed: istio.io-gateway-controller}}
spec:
  replicas: 2
  selector: {matchLabels: {gateway.networking.k8s.io/gateway-name: public}}
  template:
    metadata: {labels: {gateway.networking.k8s.io/gateway-name: public, sidecar.istio.io/inject: "false"}}
    spec:
      containers: [{name: istio-proxy, image: "docker.io/istio/proxyv2:1.29.4", args: [proxy, router]}]
`, nil)
		},
		Command: []string{"move-tag", "--tag", "prod", "--revision", "1-30-1", "--assume-installed", ""},
		Expect: []Expected{{Code: "GATEWAY_REVISION_CHANGE_DROPS_CONFIG", Object: "Gateway shop/waypoint"},
			{Code: "GATEWAY_REVISION_CHANGE_DROPS_CONFIG", Object: "Gateway ingress/public"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "tags.MoveTag said only that the waypoint is redeployed; no version-bound hazard reached a finding",
		Rule:   "tags.MoveTag (gatewayDropFindings) through compat.GatewayRevisionChangeFindings (ambient/knowledge/compat/gatewayrev.go), its ranges from advisory istio#59959 (ambient/knowledge/advisories)",
	},
	{
		ID:      "z03-dry-run-policy-old-ztunnel",
		Title:   "istiod sends dry-run policies that a ztunnel older than 1.29 enforces",
		Sources: []string{"https://github.com/istio/istio/blob/release-1.29/releasenotes/notes/authz-dry-run-ambient.yaml"},
		Breaks: "istiod was upgraded to 1.29.6 with AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true while ztunnel is still " +
			"1.28.5. A ztunnel below 1.29 does not know the dry-run field and enforces the policy: the \"dry-run\" DENY-all " +
			"shop/deny-all-dry denies real traffic on every node until ztunnel is upgraded.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.28.5"}); err != nil {
				return err
			}
			to := Istio{Version: "1.29.6", Istiod: map[string]any{"env": map[string]any{"AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY": "true"}}}
			if err := e.upgrade(ctx, to.Version, chartsIstiod(to)); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, nil); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-all-dry, namespace: shop, annotations: {istio.io/dry-run: "true"}}
spec:
  action: DENY
  rules: [{}]
`, nil)
		},
		Command:      planUpgrade("1.29.6", "--strategy", "in-place"),
		Expect:       []Expected{{Code: "DRY_RUN_POLICY_ENFORCED_BY_OLD_ZTUNNEL", Object: "AuthorizationPolicy shop/deny-all-dry"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "the migration assumed AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY unset (AUTHZ_DRY_RUN_IGNORED), and no rule related istiod's setting to ztunnel's version",
		Rule:   "dryRunSkew (ambient/knowledge/compat/skew.go) in the compatibility gate, its ranges from advisory istio-note/authz-dry-run-ambient (ambient/knowledge/advisories)",
	},
	{
		ID:    "z04-serviceentry-none-old-ztunnel",
		Title: "resolution NONE ServiceEntries that a ztunnel older than 1.28 rejects once istiod is 1.28",
		Sources: []string{"https://github.com/istio/istio/pull/57656",
			"https://github.com/istio/istio/blob/release-1.28/releasenotes/notes/57656.yaml"},
		Breaks: "The mesh runs 1.27.9 in ambient with ServiceEntry shop/redis-vm (resolution NONE). From 1.28 istiod sends it " +
			"as a passthrough service, which ztunnel 1.27 NACKs: between the istiod and the ztunnel upgrades new or changed " +
			"such entries act as if absent, and waypoint-bound ones bypass the waypoint.",
		Setup: func(ctx context.Context, e *Env) error {
			if err := e.istio(ctx, Istio{Version: "1.27.9"}); err != nil {
				return err
			}
			if err := ambientShop(ctx, e, nil); err != nil {
				return err
			}
			return e.apply(ctx, `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: redis-vm, namespace: shop}
spec:
  hosts: [redis-vm.shop.internal]
  addresses: [10.10.0.5/32]
  location: MESH_INTERNAL
  resolution: NONE
  ports: [{number: 6379, name: tcp-redis, protocol: TCP}]
`, nil)
		},
		Command:      planUpgrade("1.28.10", "--strategy", "in-place"),
		Expect:       []Expected{{Code: "SERVICEENTRY_NACKED_BY_OLD_ZTUNNEL", Object: "ServiceEntry shop/redis-vm"}},
		BeforeCorpus: beforeMissed, Answers: byCorpus,
		Before: "ServiceEntries were not read and no rule knew ztunnel 1.27 NACKs resolution NONE entries sent by istiod 1.28",
		Rule:   "serviceEntryNoneSkew (ambient/knowledge/compat/skew.go) in the compatibility gate, its ranges from advisory istio#57656 (ambient/knowledge/advisories)",
	},
}

func chartsIstiod(i Istio) charts.Release {
	return charts.Release{Name: i.IstiodRelease(), Namespace: istioNS, Chart: charts.ChartIstiod, Values: i.istiodValues()}
}

// cronJobRun creates a CronJob and one Job of it (named as the CronJob controller names them), whose
// pod kwok keeps running (annotation e2e.ambientkit.io/run-forever).
func (e *Env) cronJobRun(ctx context.Context, ns, name string, command []string) error {
	q := ""
	for i, c := range command {
		if i > 0 {
			q += ", "
		}
		q += fmt.Sprintf("%q", c)
	}
	if err := e.apply(ctx, `apiVersion: batch/v1
kind: CronJob
metadata: {name: {{.Name}}, namespace: {{.NS}}}
spec:
  schedule: "0 3 * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        metadata: {annotations: {e2e.ambientkit.io/run-forever: "true"}}
        spec:
          restartPolicy: Never
          containers: [{name: report, image: {{.Image}}, command: [{{.Cmd}}]}]
`, map[string]any{"Name": name, "NS": ns, "Image": appImage, "Cmd": q}); err != nil {
		return err
	}
	cj, err := e.cs.BatchV1().CronJobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return e.apply(ctx, `apiVersion: batch/v1
kind: Job
metadata:
  name: {{.Name}}-29410020
  namespace: {{.NS}}
  ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: {{.Name}}, uid: {{.UID}}, controller: true}]
spec:
  template:
    metadata: {annotations: {e2e.ambientkit.io/run-forever: "true"}}
    spec:
      restartPolicy: Never
      containers: [{name: report, image: {{.Image}}, command: [{{.Cmd}}]}]
`, map[string]any{"Name": name, "NS": ns, "UID": string(cj.UID), "Image": appImage, "Cmd": q})
}
