package observe_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// injectorWithAuto is the injector the istiod chart renders for the default revision with
// sidecarInjectorWebhook.enableNamespacesByDefault=true (istio/istio@1.30.3 and @release-1.31:
// manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml): the four usual
// webhooks and auto., which selects namespaces and pods that carry no injection label at all.
const injectorWithAuto = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-sidecar-injector, labels: {istio.io/rev: default}}
webhooks:
- name: rev.namespace.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: istio-system}}
  namespaceSelector:
    matchExpressions:
    - {key: istio.io/rev, operator: In, values: [default]}
    - {key: istio-injection, operator: DoesNotExist}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: NotIn, values: ["false"]}
- name: rev.object.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: istio-system}}
  namespaceSelector:
    matchExpressions:
    - {key: istio.io/rev, operator: DoesNotExist}
    - {key: istio-injection, operator: DoesNotExist}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: NotIn, values: ["false"]}
    - {key: istio.io/rev, operator: In, values: [default]}
- name: namespace.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: istio-system}}
  namespaceSelector:
    matchExpressions:
    - {key: istio-injection, operator: In, values: [enabled]}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: NotIn, values: ["false"]}
- name: object.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: istio-system}}
  namespaceSelector:
    matchExpressions:
    - {key: istio-injection, operator: DoesNotExist}
    - {key: istio.io/rev, operator: DoesNotExist}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: In, values: ["true"]}
    - {key: istio.io/rev, operator: DoesNotExist}
- name: auto.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: istio-system}}
  namespaceSelector:
    matchExpressions:
    - {key: istio-injection, operator: DoesNotExist}
    - {key: istio.io/rev, operator: DoesNotExist}
    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kube-public, kube-node-lease, local-path-storage]}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: DoesNotExist}
    - {key: istio.io/rev, operator: DoesNotExist}
`

func TestTheAutoWebhookOfEnableNamespacesByDefaultIsSeen(t *testing.T) {
	tests := []struct {
		name       string
		doc        string
		wantAuto   bool
		wantExcept []string
	}{
		{name: "the chart's auto webhook injects unlabelled namespaces but the system ones", doc: injectorWithAuto, wantAuto: true,
			wantExcept: []string{"kube-node-lease", "kube-public", "kube-system", "local-path-storage"}},
		{name: "without the auto webhook (the chart's default) unlabelled namespaces are not injected",
			doc: injectorWithAuto[:strings.Index(injectorWithAuto, "- name: auto.")]},
		{name: "a webhook that asks for a pod label is not the auto webhook", wantAuto: false,
			doc: strings.Replace(injectorWithAuto, "{key: sidecar.istio.io/inject, operator: DoesNotExist}", "{key: sidecar.istio.io/inject, operator: In, values: [\"yes\"]}", 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustObserve(t, tc.doc)
			if len(s.Injectors) != 1 {
				t.Fatalf("injectors: %+v, want one", s.Injectors)
			}
			in := s.Injectors[0]
			if in.NamespacesByDefault != tc.wantAuto {
				t.Errorf("NamespacesByDefault = %v, want %v", in.NamespacesByDefault, tc.wantAuto)
			}
			if d := cmp.Diff(tc.wantExcept, in.NamespacesByDefaultExcept); d != "" {
				t.Errorf("NamespacesByDefaultExcept (-want +got):\n%s", d)
			}
			if tc.wantAuto && (!in.InjectsByDefault("payments") || in.InjectsByDefault("kube-system")) {
				t.Error("InjectsByDefault: want payments injected and kube-system left out")
			}
		})
	}
}
