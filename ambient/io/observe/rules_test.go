package observe_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// helmSecret renders a Helm storage Secret the way Helm writes it: data.release is base64 (the
// Secret encoding) of base64 of gzipped JSON.
func helmSecret(ns, release, chart string, version int, status string, gz bool) string {
	rel, _ := json.Marshal(map[string]any{
		"name": release, "namespace": ns, "version": version,
		"info":   map[string]any{"status": status},
		"chart":  map[string]any{"metadata": map[string]any{"name": chart, "version": "1.29.2", "appVersion": "1.29.2"}},
		"config": map[string]any{"revision": fmt.Sprint("v", version)},
	})
	payload := rel
	if gz {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(rel)
		_ = w.Close()
		payload = buf.Bytes()
	}
	inner := base64.StdEncoding.EncodeToString(payload)
	return fmt.Sprintf(`---
apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: sh.helm.release.v1.%[2]s.v%[3]d
  namespace: %[1]s
  labels: {owner: helm, name: %[2]s, status: %[4]s, version: "%[3]d"}
data:
  release: %[5]s
`, ns, release, version, status, base64.StdEncoding.EncodeToString([]byte(inner)))
}

func mustObserve(t *testing.T, doc string) *mesh.Snapshot {
	t.Helper()
	s, err := observeYAML(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIstiodRules(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  mesh.Revision
	}{
		{
			name: "a discovery container running pilot is istiod even without app=istiod, and its revision defaults to default",
			input: `apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: mesh, generation: 4, annotations: {meta.helm.sh/release-name: istiod}}
spec:
  template:
    spec:
      containers:
      - name: discovery
        image: registry.example.com/mirror/pilot:1.28.1
        env:
        - {name: PILOT_ENABLE_AMBIENT, value: "false"}
        - name: CA_TRUSTED_NODE_ACCOUNTS
          valueFrom: {configMapKeyRef: {name: trust, key: accounts}}
status: {observedGeneration: 3, readyReplicas: 1}
`,
			want: mesh.Revision{Name: "default", Namespace: "mesh", Deployment: "istiod", Version: mesh.MustParseVersion("1.28.1"),
				Image: "registry.example.com/mirror/pilot:1.28.1", Replicas: 1, ReadyReplicas: 1, TrustedAccountsUnknown: true, HelmRelease: "istiod"},
		},
		{
			name: "trusted accounts are split on commas, the revision comes from the pod label",
			input: `apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod-canary, namespace: istio-system, labels: {app.kubernetes.io/instance: istiod-canary}}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: istiod, istio.io/rev: canary}}
    spec:
      containers:
      - name: discovery
        image: docker.io/istio/pilot:1.31.0-rc.0-distroless
        env:
        - {name: PILOT_ENABLE_AMBIENT, value: "true"}
        - {name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel,istio-system/ztunnel-green"}
status: {readyReplicas: 3, updatedReplicas: 3}
`,
			want: mesh.Revision{Name: "canary", Namespace: "istio-system", Deployment: "istiod-canary", Version: mesh.MustParseVersion("1.31.0-rc.0"),
				Image: "docker.io/istio/pilot:1.31.0-rc.0-distroless", Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3, ObservedCurrent: true,
				Ambient: true, TrustedZtunnelAccounts: []string{"istio-system/ztunnel", "istio-system/ztunnel-green"}, HelmRelease: "istiod-canary"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, tt.input)
			if len(s.Revisions) != 1 {
				t.Fatalf("revisions = %d, want 1", len(s.Revisions))
			}
			if d := cmp.Diff(tt.want, s.Revisions[0]); d != "" {
				t.Errorf("revision (-want +got):\n%s", d)
			}
		})
	}
}

func TestWeirdImageTagsGiveUnknownVersions(t *testing.T) {
	tests := []struct {
		name, image, want string
	}{
		{"latest names no release", "docker.io/istio/pilot:latest", "unknown"},
		{"a digest without a tag names no release", "docker.io/istio/pilot@sha256:0123456789abcdef", "unknown"},
		{"a registry port is not a tag", "localhost:5000/istio/pilot", "unknown"},
		{"a malformed pre-release names no release", "docker.io/istio/pilot:1.30.3-rc1", "unknown"},
		{"a tag with a digest still gives the release", "docker.io/istio/pilot:1.30.3@sha256:abcd", "1.30.3"},
		{"a debug variant is stripped", "gcr.io/istio-release/pilot:1.29.0-debug", "1.29.0"},
		{"an empty image is unknown", "", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: istio-system}
spec:
  template:
    metadata: {labels: {app: istiod}}
    spec: {containers: [{name: discovery, image: %q}]}
---
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: apps, annotations: {sidecar.istio.io/status: '{"revision":"default"}'}}
spec: {containers: [{name: app, image: app:1}, {name: istio-proxy, image: %q}]}
`, tt.image, tt.image))
			if got := s.Revisions[0].Version.String(); got != tt.want {
				t.Errorf("istiod version = %s, want %s", got, tt.want)
			}
			w := s.Workloads[0]
			if tt.want == "unknown" && len(w.ProxyVersions) != 0 {
				t.Errorf("proxy versions = %v, want none for an unreadable tag", w.ProxyVersions)
			}
			if w.Mode != mesh.ModeSidecar {
				t.Errorf("mode = %s, want sidecar", w.Mode)
			}
		})
	}
}

const nodeAgents = `
apiVersion: v1
kind: Pod
metadata:
  name: ztunnel-green-aaaaa
  namespace: istio-system
  labels: {app: ztunnel}
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: ztunnel-green, uid: x, controller: true}]
  deletionTimestamp: "2026-07-01T00:00:00Z"
spec: {nodeName: n2, containers: [{name: istio-proxy, image: docker.io/istio/ztunnel:1.30.0}]}
status: {phase: Running, conditions: [{type: Ready, status: "False"}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: cni-bbbbb
  namespace: kube-system
  labels: {k8s-app: istio-cni-node}
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: cni, uid: u2, controller: true}]
spec: {nodeName: n1, hostNetwork: true, containers: [{name: install-cni, image: docker.io/istio/install-cni:1.29.2-distroless}]}
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ztunnel-green, namespace: istio-system, annotations: {istio.io/rev: canary}}
spec:
  selector: {matchLabels: {app: ztunnel-green}}
  updateStrategy: {type: OnDelete}
  template:
    metadata: {labels: {app: ztunnel-green}}
    spec:
      nodeSelector: {kubernetes.io/os: linux, pool: green}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: karpenter.sh/nodepool, operator: In, values: [green, blue]}
              - {key: node.kubernetes.io/exclude, operator: DoesNotExist}
      containers:
      - name: istio-proxy
        image: docker.io/istio/ztunnel:1.30.0
        env:
        - {name: XDS_ADDRESS, value: "istiod-canary.istio-system.svc:15012"}
        - {name: CA_ADDRESS, value: "istiod-canary.istio-system.svc:15012"}
status: {desiredNumberScheduled: 2, currentNumberScheduled: 2, numberReady: 1, updatedNumberScheduled: 2, numberAvailable: 1}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cni, namespace: kube-system, labels: {istio.io/rev: default, app.kubernetes.io/instance: istio-cni}}
spec:
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 10%}}
  template:
    metadata: {labels: {k8s-app: istio-cni-node}}
    spec:
      terminationGracePeriodSeconds: 5
      containers: [{name: install-cni, image: docker.io/istio/install-cni:1.29.2-distroless}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: istio-cni-config, namespace: kube-system}
data: {AMBIENT_ENABLED: "true", CURRENT_AGENT_VERSION: "1.29.2", LOG_LEVEL: debug, CNI_NET_DIR: /etc/cni/net.d}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: istio-cni-config, namespace: elsewhere}
data: {AMBIENT_ENABLED: "false"}
`

func TestNodeAgentRules(t *testing.T) {
	s := mustObserve(t, nodeAgents)
	wantCNI := &mesh.CNI{
		Namespace: "kube-system", Name: "cni", Version: mesh.MustParseVersion("1.29.2"), Image: "docker.io/istio/install-cni:1.29.2-distroless",
		Revision: "default", UpdateStrategy: mesh.UpdateStrategy{Type: "RollingUpdate", MaxUnavailable: "10%"}, TerminationGracePeriodSeconds: 5,
		Rollout:     mesh.DaemonSetRollout{ObservedCurrent: true},
		Config:      map[string]string{"AMBIENT_ENABLED": "true", "CURRENT_AGENT_VERSION": "1.29.2"},
		Pods:        []mesh.NodePod{{Node: "n1", Pod: "cni-bbbbb", Version: mesh.MustParseVersion("1.29.2"), Ready: true}},
		HelmRelease: "istio-cni",
		ConfigKeys:  []string{"AMBIENT_ENABLED", "CNI_NET_DIR", "CURRENT_AGENT_VERSION", "LOG_LEVEL"},
	}
	if d := cmp.Diff(wantCNI, s.CNI); d != "" {
		t.Errorf("CNI (-want +got):\n%s", d)
	}
	wantZ := []mesh.Ztunnel{{
		Namespace: "istio-system", Name: "ztunnel-green", ServiceAccount: "default", Version: mesh.MustParseVersion("1.30.0"),
		Image: "docker.io/istio/ztunnel:1.30.0", Selector: map[string]string{"app": "ztunnel-green"},
		NodeSelector: map[string]string{"kubernetes.io/os": "linux", "pool": "green"},
		NodeAffinity: []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{
			{Key: "karpenter.sh/nodepool", Operator: "In", Values: []string{"green", "blue"}}, {Key: "node.kubernetes.io/exclude", Operator: "DoesNotExist"}}}},
		UpdateStrategy: mesh.UpdateStrategy{Type: "OnDelete"}, TerminationGracePeriodSeconds: 30,
		Rollout:    mesh.DaemonSetRollout{Desired: 2, Current: 2, Ready: 1, Updated: 2, Available: 1, ObservedCurrent: true},
		Revision:   "canary",
		XDSAddress: "istiod-canary.istio-system.svc:15012", CAAddress: "istiod-canary.istio-system.svc:15012",
		Pods: []mesh.NodePod{{Node: "n2", Pod: "ztunnel-green-aaaaa", Version: mesh.MustParseVersion("1.30.0"), Terminating: true}},
	}}
	if d := cmp.Diff(wantZ, s.Ztunnels); d != "" {
		t.Errorf("ztunnels (-want +got):\n%s", d)
	}
	for _, w := range s.Workloads {
		if w.Mode == mesh.ModeSidecar {
			t.Errorf("node agent %s counted as a sidecar workload", w.Name)
		}
	}
}

const webhooks = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-revision-tag-stable, labels: {istio.io/tag: stable, istio.io/rev: 1-29-2}}
webhooks:
- name: rev.namespace.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod-1-29-2, namespace: istio-system}}
  sideEffects: None
  admissionReviewVersions: [v1]
  namespaceSelector: {matchExpressions: [{key: istio.io/rev, operator: In, values: [stable]}, {key: istio-injection, operator: DoesNotExist}]}
- name: object.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod-1-29-2, namespace: istio-system}}
  sideEffects: None
  admissionReviewVersions: [v1]
  objectSelector: {matchExpressions: [{key: sidecar.istio.io/inject, operator: In, values: ["true"]}]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-sidecar-injector, labels: {istio.io/rev: default}}
webhooks:
- name: namespace.sidecar-injector.istio.io
  clientConfig: {url: "https://istiod.example.com/inject"}
  sideEffects: None
  admissionReviewVersions: [v1]
  namespaceSelector: {matchLabels: {istio-injection: enabled}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: cert-manager-webhook}
webhooks:
- name: webhook.cert-manager.io
  clientConfig: {service: {name: cert-manager-webhook, namespace: cert-manager}}
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: v1
kind: Service
metadata: {name: istiod-revision-tag-stable, namespace: istio-system, labels: {istio.io/tag: stable, istio.io/rev: 1-29-2}}
---
apiVersion: v1
kind: Service
metadata: {name: istiod-revision-tag-legacy, namespace: istio-system, labels: {istio.io/tag: legacy, istio.io/rev: 1-28-0}}
---
apiVersion: v1
kind: Service
metadata: {name: istiod, namespace: istio-system, labels: {istio.io/tag: not-a-tag-service}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: istiod-default-validator, labels: {istio.io/rev: 1-29-2}}
`

func TestTagsInjectorsAndDefaultRevision(t *testing.T) {
	s := mustObserve(t, webhooks)
	wantTags := []mesh.Tag{
		{Name: "legacy", Revision: "1-28-0", ServiceRevision: "1-28-0", Service: "istiod-revision-tag-legacy", ServiceNamespace: "istio-system"},
		{Name: "stable", Revision: "1-29-2", WebhookRevision: "1-29-2", ServiceRevision: "1-29-2", Webhook: "istio-revision-tag-stable", Service: "istiod-revision-tag-stable",
			ServiceNamespace: "istio-system", TargetService: "istio-system/istiod-1-29-2"},
	}
	if d := cmp.Diff(wantTags, s.Tags); d != "" {
		t.Errorf("tags (-want +got):\n%s", d)
	}
	wantInjectors := []mesh.Injector{
		{Name: "istio-revision-tag-stable", Revision: "1-29-2", Tag: "stable", TargetService: "istio-system/istiod-1-29-2",
			Webhooks: []string{"object.sidecar-injector.istio.io", "rev.namespace.sidecar-injector.istio.io"},
			Selects:  []string{"istio.io/rev=stable", "sidecar.istio.io/inject=true"}},
		{Name: "istio-sidecar-injector", Revision: "default", TargetService: "https://istiod.example.com/inject",
			Webhooks: []string{"namespace.sidecar-injector.istio.io"}, Selects: []string{"istio-injection=enabled"}},
	}
	if d := cmp.Diff(wantInjectors, s.Injectors); d != "" {
		t.Errorf("injectors (-want +got):\n%s", d)
	}
	if s.DefaultRevision != "1-29-2" {
		t.Errorf("default revision = %q, want 1-29-2", s.DefaultRevision)
	}
}

// TestATagWhoseObjectsDisagreeKeepsBothRevisions: what the docs' webhook-only command leaves behind
// (istioctl or helm template of revision-tags-mwc.yaml alone) is a tag Service still naming the old
// revision.
func TestATagWhoseObjectsDisagreeKeepsBothRevisions(t *testing.T) {
	s := mustObserve(t, strings.Replace(webhooks,
		"name: istiod-revision-tag-stable, namespace: istio-system, labels: {istio.io/tag: stable, istio.io/rev: 1-29-2}",
		"name: istiod-revision-tag-stable, namespace: istio-system, labels: {istio.io/tag: stable, istio.io/rev: 1-28-0}", 1))
	tag, ok := s.Tag("stable")
	if !ok {
		t.Fatal("tag stable is missing")
	}
	want := mesh.Tag{Name: "stable", Revision: "1-29-2", WebhookRevision: "1-29-2", ServiceRevision: "1-28-0",
		Webhook: "istio-revision-tag-stable", Service: "istiod-revision-tag-stable", ServiceNamespace: "istio-system", TargetService: "istio-system/istiod-1-29-2"}
	if d := cmp.Diff(want, tag); d != "" {
		t.Errorf("tag (-want +got):\n%s", d)
	}
	if !tag.Split() {
		t.Error("a tag whose webhook and Service name different revisions is split")
	}
}

// TestTagObjectsRecordTheHelmReleaseThatOwnsThem: Helm's annotations say who owns an object; the
// app.kubernetes.io/instance label alone is also what helm template renders, so it owns nothing.
func TestTagObjectsRecordTheHelmReleaseThatOwnsThem(t *testing.T) {
	owned := strings.NewReplacer(
		"metadata: {name: istio-revision-tag-stable, labels:",
		"metadata: {name: istio-revision-tag-stable, annotations: {meta.helm.sh/release-name: istiod-1-29-2, meta.helm.sh/release-namespace: istio-system}, labels:",
		"metadata: {name: istiod-revision-tag-stable, namespace: istio-system, labels:",
		"metadata: {name: istiod-revision-tag-stable, namespace: istio-system, annotations: {meta.helm.sh/release-name: istiod-1-29-2}, labels:",
		"metadata: {name: istiod-revision-tag-legacy, namespace: istio-system, labels: {",
		"metadata: {name: istiod-revision-tag-legacy, namespace: istio-system, labels: {app.kubernetes.io/instance: istiod, app.kubernetes.io/managed-by: Helm, ",
	).Replace(webhooks)
	s := mustObserve(t, owned)
	type owners struct{ Webhook, Service *mesh.ReleaseRef }
	got := map[string]owners{}
	for _, tag := range s.Tags {
		got[tag.Name] = owners{tag.WebhookRelease, tag.ServiceRelease}
	}
	release := &mesh.ReleaseRef{Namespace: "istio-system", Name: "istiod-1-29-2"}
	want := map[string]owners{"stable": {release, release}, "legacy": {}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("owning releases by tag (-want +got):\n%s", d)
	}
}

const pods = `
apiVersion: v1
kind: Namespace
metadata: {name: amb, labels: {istio.io/dataplane-mode: ambient, istio.io/use-waypoint: wp, kubernetes.io/metadata.name: amb}}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-7c9d-aaaaa
  namespace: amb
  labels: {app: web, pod-template-hash: 7c9d, version: v1}
  annotations: {ambient.istio.io/redirection: enabled}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7c9d, uid: a, controller: true}]
spec: {nodeName: n1, containers: [{name: web, image: web:1}]}
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-7c9d-bbbbb
  namespace: amb
  labels: {app: web, pod-template-hash: 7c9d, version: v2}
  annotations: {ambient.istio.io/redirection: pending}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7c9d, uid: a, controller: true}]
spec: {nodeName: n2, containers: [{name: web, image: web:1}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-7c9d-ccccc
  namespace: amb
  labels: {app: web, pod-template-hash: 7c9d}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7c9d, uid: a, controller: true}]
spec: {nodeName: n2, containers: [{name: web, image: web:1}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-7c9d-done
  namespace: amb
  labels: {app: web, pod-template-hash: 7c9d}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7c9d, uid: a, controller: true}]
spec: {nodeName: n3, containers: [{name: web, image: web:1}]}
status: {phase: Succeeded}
---
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: amb, labels: {run: debug}}
spec: {nodeName: n1, hostNetwork: true, containers: [{name: sh, image: busybox}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: legacy-0
  namespace: amb
  labels: {app: legacy, istio.io/rev: old}
  annotations: {istio.io/rev: 1-28-0}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: legacy, uid: s, controller: true}]
spec:
  nodeName: n3
  initContainers: [{name: istio-proxy, image: docker.io/istio/proxyv2:1.28.0, restartPolicy: Always, volumeMounts: [{name: envoy, mountPath: /etc/istio/proxy}]}]
  containers: [{name: legacy, image: legacy:1}]
  volumes: [{name: envoy, emptyDir: {}}]
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: tagged, namespace: plain, labels: {istio.io/dataplane-mode: ambient}}
spec: {nodeName: n1, containers: [{name: c, image: c:1, volumeMounts: [{name: scratch, mountPath: /s}]}], volumes: [{name: scratch, emptyDir: {}}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: report-29000000-zzzzz
  namespace: plain
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: report-29000000, uid: j, controller: true}]
spec: {nodeName: n1, containers: [{name: c, image: c:1}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: report-29000060-yyyyy
  namespace: plain
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: report-29000060, uid: k, controller: true}]
spec: {nodeName: n2, containers: [{name: c, image: c:1}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: migrate-2-xxxxx
  namespace: plain
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: migrate-2, uid: m, controller: true}]
spec: {nodeName: n2, containers: [{name: c, image: c:1}]}
status: {phase: Running}
---
apiVersion: batch/v1
kind: Job
metadata: {name: report-29000000, namespace: plain, ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: report, uid: c, controller: true}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: report-29000060, namespace: plain, ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: report, uid: c, controller: true}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate-2, namespace: plain}
---
apiVersion: v1
kind: Pod
metadata:
  name: rs-without-hash-qqqqq
  namespace: plain
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs-without-hash, uid: r, controller: true}]
spec: {nodeName: n1, containers: [{name: c, image: c:1}]}
status: {phase: Failed}
`

func TestWorkloadAndNamespaceRules(t *testing.T) {
	s := mustObserve(t, pods)
	byRef := map[string]mesh.Workload{}
	for _, w := range s.Workloads {
		byRef[w.Ref().String()] = w
	}
	tests := []struct {
		name string
		ref  string
		want mesh.Workload
	}{
		{
			name: "pods of a ReplicaSet are summarised under their Deployment, finished pods are skipped, labels are the common ones",
			ref:  "Deployment amb/web",
			want: mesh.Workload{Namespace: "amb", Kind: "Deployment", Name: "web", Labels: map[string]string{"app": "web"}, Pods: 3, Ready: 1,
				Mode: mesh.ModeMixed, Redirection: map[string]int{"enabled": 1, "pending": 1}, Nodes: []string{"n1", "n2"}},
		},
		{
			name: "a native sidecar counts as a sidecar with the revision it was injected by, and its volumes are not local storage",
			ref:  "StatefulSet amb/legacy",
			want: mesh.Workload{Namespace: "amb", Kind: "StatefulSet", Name: "legacy", Labels: map[string]string{"app": "legacy", "istio.io/rev": "old"},
				Pods: 1, Ready: 1, Mode: mesh.ModeSidecar, SidecarRevisions: map[string]int{"1-28-0": 1},
				ProxyVersions: []mesh.Version{mesh.MustParseVersion("1.28.0")}, PodRevisionLabel: "old", Nodes: []string{"n3"}},
		},
		{
			name: "a pod without an owner is its own workload and its emptyDir is local storage",
			ref:  "Pod plain/tagged",
			want: mesh.Workload{Namespace: "plain", Kind: "Pod", Name: "tagged", Labels: map[string]string{"istio.io/dataplane-mode": "ambient"},
				Pods: 1, Mode: mesh.ModeNone, Nodes: []string{"n1"}, LocalStorage: true},
		},
		{
			name: "Jobs a CronJob created are summarised under the CronJob",
			ref:  "CronJob plain/report",
			want: mesh.Workload{Namespace: "plain", Kind: "CronJob", Name: "report", Pods: 2, Mode: mesh.ModeNone, Nodes: []string{"n1", "n2"}},
		},
		{
			name: "a Job whose name only looks like a CronJob's stays a Job",
			ref:  "Job plain/migrate-2",
			want: mesh.Workload{Namespace: "plain", Kind: "Job", Name: "migrate-2", Pods: 1, Mode: mesh.ModeNone, Nodes: []string{"n2"}},
		},
		{
			name: "a host-network pod is counted as such",
			ref:  "Pod amb/debug",
			want: mesh.Workload{Namespace: "amb", Kind: "Pod", Name: "debug", Labels: map[string]string{"run": "debug"}, Pods: 1, Mode: mesh.ModeNone,
				HostNetwork: 1, Nodes: []string{"n1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := byRef[tt.ref]
			if !ok {
				t.Fatalf("no workload %s among %v", tt.ref, keys(byRef))
			}
			// Where pods go again has its own tests (scheduling_test.go).
			if d := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(mesh.Workload{}, "Scheduling", "Placed")); d != "" {
				t.Errorf("workload (-want +got):\n%s", d)
			}
		})
	}
	if _, ok := byRef["ReplicaSet plain/rs-without-hash"]; ok {
		t.Errorf("a Failed pod made a workload")
	}

	t.Run("namespace summaries count capture state once the namespace labels are known", func(t *testing.T) {
		amb, _ := s.Namespace("amb")
		wantAmb := mesh.Namespace{Name: "amb",
			Labels: map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "wp"},
			// web: enabled, pending, missing; debug: host network (none); legacy: sidecar
			Pods: mesh.PodSummary{Total: 5, Sidecar: map[string]int{"1-28-0": 1}, AmbientEnabled: 1, AmbientPending: 1, AmbientMissing: 1, None: 1}}
		if d := cmp.Diff(wantAmb, amb); d != "" {
			t.Errorf("namespace amb (-want +got):\n%s", d)
		}
		plain, ok := s.Namespace("plain")
		wantPlain := mesh.Namespace{Name: "plain", Pods: mesh.PodSummary{Total: 4, AmbientMissing: 1, None: 3}}
		if d := cmp.Diff(wantPlain, plain); !ok || d != "" {
			t.Errorf("namespace plain, seen only through its pods (-want +got):\n%s", d)
		}
	})
}

func keys(m map[string]mesh.Workload) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

const policies = `
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: l4, namespace: a, labels: {istio.io/rev: canary}}
spec:
  selector: {matchLabels: {app: x}}
  rules: [{from: [{source: {principals: [p], namespaces: [n], ipBlocks: [10.0.0.0/8]}}], to: [{operation: {ports: ["80"]}}]}]
---
apiVersion: security.istio.io/v1beta1
kind: AuthorizationPolicy
metadata: {name: l7, namespace: a}
spec:
  action: DENY
  rules:
  - to: [{operation: {notPaths: [/healthz], hosts: [a.example.com]}}]
    from: [{source: {requestPrincipals: ["*"]}}]
    when: [{key: "request.auth.claims[groups]", values: [admin]}, {key: source.ip, values: [10.0.0.1]}]
  - to: [{operation: {methods: [POST]}}, {operation: {paths: [/x]}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ext, namespace: a}
spec:
  action: CUSTOM
  targetRef: {kind: Gateway, group: gateway.networking.k8s.io, name: wp}
  provider: {name: opa}
  rules: "not a list"
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: a}
spec:
  portLevelMtls: {"8080": {mode: DISABLE}, "9090": {}}
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: a}
spec: {targetRefs: [{kind: Gateway, name: wp}], jwtRules: [{issuer: x}]}
---
apiVersion: networking.istio.io/v1alpha3
kind: DestinationRule
metadata: {name: dr, namespace: a}
spec: {host: reviews.a.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: vs, namespace: a}
spec: {hosts: [reviews, reviews.a.svc.cluster.local]}
`

func TestPolicyRules(t *testing.T) {
	s := mustObserve(t, policies)
	want := []mesh.Policy{
		{Kind: "AuthorizationPolicy", Namespace: "a", Name: "ext", Action: "CUSTOM", HasTargetRefs: true},
		{Kind: "AuthorizationPolicy", Namespace: "a", Name: "l4", RevisionLabel: "canary", Action: "ALLOW", HasSelector: true},
		{Kind: "AuthorizationPolicy", Namespace: "a", Name: "l7", Action: "DENY",
			L7: []string{"hosts", "methods", "notPaths", "paths", "request.auth.claims[groups]", "requestPrincipals"}},
		{Kind: "DestinationRule", Namespace: "a", Name: "dr", Hosts: []string{"reviews.a.svc.cluster.local"}},
		{Kind: "PeerAuthentication", Namespace: "a", Name: "default", Mode: "UNSET", PortModes: []string{"8080=DISABLE", "9090=UNSET"}},
		{Kind: "RequestAuthentication", Namespace: "a", Name: "jwt", HasTargetRefs: true},
		{Kind: "VirtualService", Namespace: "a", Name: "vs", Hosts: []string{"reviews", "reviews.a.svc.cluster.local"}},
	}
	// The spec, status and metadata planners decode are checked in TestPoliciesCarryTheirSpecAndStatus.
	ignore := cmpopts.IgnoreFields(mesh.Policy{}, "APIVersion", "Generation", "Annotations", "Spec", "Conditions")
	if d := cmp.Diff(want, s.Policies, ignore); d != "" {
		t.Errorf("policies (-want +got):\n%s", d)
	}
}

const gateways = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio.io/rev: stable}}
---
apiVersion: v1
kind: Namespace
metadata: {name: edge}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-revision-tag-stable, labels: {istio.io/tag: stable, istio.io/rev: 1-30-0}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: istiod-default-validator, labels: {istio.io/rev: 1-29-2}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod-1-29-2, namespace: istio-system}
spec: {template: {metadata: {labels: {app: istiod, istio.io/rev: 1-29-2}}, spec: {containers: [{name: discovery, image: pilot:1.29.2}]}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod-1-30-0, namespace: istio-system}
spec: {template: {metadata: {labels: {app: istiod, istio.io/rev: 1-30-0}}, spec: {containers: [{name: discovery, image: pilot:1.30.0}]}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: shop-waypoint, namespace: shop}
spec: {gatewayClassName: istio-waypoint}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: Gateway
metadata: {name: pinned, namespace: shop, labels: {istio.io/rev: 1-29-2, istio.io/waypoint-for: workload}}
spec: {gatewayClassName: istio}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: public, namespace: edge}
spec: {gatewayClassName: istio}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: lost, namespace: edge, labels: {istio.io/rev: gone}}
spec: {gatewayClassName: istio}
---
apiVersion: v1
kind: Pod
metadata:
  name: public-istio-5d-aaaaa
  namespace: edge
  labels: {gateway.networking.k8s.io/gateway-name: public, gateway.istio.io/managed: istio.io-gateway-controller, pod-template-hash: 5d}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: public-istio-5d, uid: r, controller: true}]
spec: {nodeName: n1, containers: [{name: istio-proxy, image: docker.io/istio/proxyv2:1.29.2}]}
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: public-istio-6e-bbbbb
  namespace: edge
  labels: {gateway.networking.k8s.io/gateway-name: public, gateway.istio.io/managed: istio.io-gateway-controller, pod-template-hash: 6e}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: public-istio-6e, uid: r, controller: true}]
spec: {nodeName: n2, containers: [{name: istio-proxy, image: docker.io/istio/proxyv2:1.30.0}]}
status: {phase: Running}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: public-istio
  namespace: edge
  labels: {gateway.istio.io/managed: istio.io-gateway-controller, gateway.networking.k8s.io/gateway-name: public}
  ownerReferences: [{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, name: public, uid: g}]
spec:
  template:
    metadata: {annotations: {inject.istio.io/templates: gateway}, labels: {gateway.networking.k8s.io/gateway-name: public}}
    spec: {containers: [{name: istio-proxy, image: auto}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: egress, namespace: edge, labels: {app.kubernetes.io/managed-by: Helm}, annotations: {meta.helm.sh/release-name: istio-egress}}
spec:
  template:
    metadata: {labels: {sidecar.istio.io/inject: "true", istio.io/rev: stable}}
    spec: {containers: [{name: istio-proxy, image: auto}]}
`

func TestGatewayRules(t *testing.T) {
	s := mustObserve(t, gateways)
	want := []mesh.Gateway{
		{Kind: "Deployment", Namespace: "edge", Name: "egress", RevisionLabel: "stable", Revision: "1-30-0", Owners: []string{"1-30-0"}, ManagedBy: "Helm", HelmRelease: "istio-egress"},
		{Kind: "Gateway", Namespace: "edge", Name: "lost", Class: "istio", RevisionLabel: "gone"},
		{Kind: "Gateway", Namespace: "edge", Name: "public", Class: "istio", Revision: "1-29-2", Owners: []string{"1-29-2"}, ManagedBy: "istio.io-gateway-controller",
			Versions: []mesh.Version{mesh.MustParseVersion("1.29.2"), mesh.MustParseVersion("1.30.0")}, Pods: 2, ReadyPods: 1},
		{Kind: "Gateway", Namespace: "shop", Name: "pinned", Class: "istio", Waypoint: true, WaypointFor: "workload", RevisionLabel: "1-29-2", Revision: "1-29-2", Owners: []string{"1-29-2"}},
		{Kind: "Gateway", Namespace: "shop", Name: "shop-waypoint", Class: "istio-waypoint", Waypoint: true, Revision: "1-30-0", Owners: []string{"1-30-0"}},
	}
	if d := cmp.Diff(want, s.Gateways); d != "" {
		t.Errorf("gateways (-want +got):\n%s", d)
	}
}

// TestAnEmptyRevisionLabelOnAGatewayIsNotItsNamespaces: istiod's IsMine reads a present
// istio.io/rev label even when empty and then never the namespace's (istio/istio@release-1.31:
// pkg/revisions/tag_watcher.go); an empty value goes to the default owner, here the default
// revision 1-29-2 (1.28+, no default tag), not to the namespace's tag stable (1-30-0).
func TestAnEmptyRevisionLabelOnAGatewayIsNotItsNamespaces(t *testing.T) {
	s := mustObserve(t, gateways+`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: blank, namespace: shop, labels: {istio.io/rev: ""}}
spec: {gatewayClassName: istio-waypoint}
`)
	for _, g := range s.Gateways {
		if g.Name != "blank" {
			continue
		}
		if !g.RevisionLabelEmpty || !g.HasRevisionLabel() || g.Revision != "1-29-2" || !cmp.Equal(g.Owners, []string{"1-29-2"}) {
			t.Errorf("gateway blank: empty label %v, revision %q, owners %v; want an empty label owned by 1-29-2", g.RevisionLabelEmpty, g.Revision, g.Owners)
		}
		return
	}
	t.Fatal("gateway blank was not observed")
}

func TestGatewayAPIBundle(t *testing.T) {
	crd := func(name, bundle, channel string) string {
		return fmt.Sprintf("---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n  labels: {app.kubernetes.io/instance: x, team: platform}\n  annotations: {gateway.networking.k8s.io/bundle-version: %s, gateway.networking.k8s.io/channel: %s, kubectl.kubernetes.io/last-applied-configuration: big}\nspec: {group: ignored}\n", name, bundle, channel)
	}
	tests := []struct {
		name  string
		input string
		want  mesh.GatewayAPI
	}{
		{"the oldest bundle version wins and experimental is reported",
			crd("gateways.gateway.networking.k8s.io", "v1.5.1", "standard") + crd("httproutes.gateway.networking.k8s.io", "v1.4.0", "experimental") +
				crd("widgets.example.com", "v0.1.0", "standard"),
			mesh.GatewayAPI{Installed: true, BundleVersion: "v1.4.0", Channel: "experimental"}},
		{"routes without the gateways CRD are not an installed Gateway API",
			crd("httproutes.gateway.networking.k8s.io", "v1.2.0", "standard"),
			mesh.GatewayAPI{BundleVersion: "v1.2.0", Channel: "standard"}},
		{"an unreadable bundle version is kept only when no readable one exists",
			crd("gateways.gateway.networking.k8s.io", "dev", "standard") + crd("grpcroutes.gateway.networking.k8s.io", "v1.3.0", "standard"),
			mesh.GatewayAPI{Installed: true, BundleVersion: "v1.3.0", Channel: "standard"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, tt.input)
			if d := cmp.Diff(tt.want, s.GatewayAPI); d != "" {
				t.Errorf("GatewayAPI (-want +got):\n%s", d)
			}
			for _, c := range s.CRDs {
				if c.Group == "example.com" || c.Labels["team"] != "" || c.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" {
					t.Errorf("CRD %s kept more than it should: %+v", c.Name, c)
				}
			}
		})
	}
}
