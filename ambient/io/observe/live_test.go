package observe_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

var ignoreObservation = cmpopts.IgnoreFields(mesh.Snapshot{}, "Observation")

func demoObjects(t *testing.T) []client.Object {
	t.Helper()
	objs, err := demo.Objects()
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// concatenated returns every demo file as one multi-document stream.
func concatenated(t *testing.T) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	err := fs.WalkDir(demo.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(demo.Files(), p)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(b)
		buf.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &buf
}

func TestEverySourceGivesTheSameSnapshot(t *testing.T) {
	ctx := context.Background()
	want, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		observe func(t *testing.T) (*mesh.Snapshot, error)
		source  string
	}{
		{"a live cluster listed in default pages matches the YAML", func(t *testing.T) (*mesh.Snapshot, error) {
			return observe.Live(ctx, newFakeCluster(t, demoObjects(t), nil), observe.Options{})
		}, "live"},
		{"a live cluster listed in pages of three matches the YAML", func(t *testing.T) (*mesh.Snapshot, error) {
			return observe.Live(ctx, newFakeCluster(t, demoObjects(t), nil), observe.Options{PageSize: 3})
		}, "live"},
		{"one stream holding every file matches the directory", func(t *testing.T) (*mesh.Snapshot, error) {
			return observe.YAML(ctx, "all.yaml", concatenated(t), observe.Options{})
		}, "offline:all.yaml"},
		{"the demo directory read from disk matches the embedded files", func(t *testing.T) (*mesh.Snapshot, error) {
			return observe.Dir(ctx, "../demo/cluster", observe.Options{})
		}, "offline:../demo/cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.observe(t)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, ignoreObservation); d != "" {
				t.Errorf("snapshot differs from the demo snapshot (-want +got):\n%s", d)
			}
			if got.Observation.Source != tt.source {
				t.Errorf("source = %q, want %q", got.Observation.Source, tt.source)
			}
			if want.Fingerprint() != got.Fingerprint() {
				t.Errorf("fingerprints differ")
			}
		})
	}
}

// expectedKinds are the kinds a live observation lists, each exactly once per selector (in pages).
// ConfigMaps are listed twice: istio-cni-config by name, and Grafana dashboards by label.
var expectedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "NamespaceList"},
	{Version: "v1", Kind: "NodeList"},
	{Version: "v1", Kind: "PodList"},
	{Version: "v1", Kind: "PersistentVolumeClaimList"},
	{Version: "v1", Kind: "PersistentVolumeList"},
	{Version: "v1", Kind: "ConfigMapList"},
	{Version: "v1", Kind: "ServiceList"},
	{Version: "v1", Kind: "SecretList"},
	{Group: "apps", Version: "v1", Kind: "DeploymentList"},
	{Group: "apps", Version: "v1", Kind: "DaemonSetList"},
	{Group: "batch", Version: "v1", Kind: "JobList"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfigurationList"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfigurationList"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudgetList"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"},
	{Group: "security.istio.io", Version: "v1", Kind: "AuthorizationPolicyList"},
	{Group: "security.istio.io", Version: "v1", Kind: "PeerAuthenticationList"},
	{Group: "security.istio.io", Version: "v1", Kind: "RequestAuthenticationList"},
	{Group: "networking.istio.io", Version: "v1", Kind: "VirtualServiceList"},
	{Group: "networking.istio.io", Version: "v1", Kind: "DestinationRuleList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "GatewayList"},
	{Group: "karpenter.sh", Version: "v1", Kind: "NodePoolList"},
	{Version: "v1", Kind: "ConfigMapList"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRuleList"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitorList"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitorList"},
	{Group: "grafana.integreatly.org", Version: "v1beta1", Kind: "GrafanaDashboardList"},
	{Group: "argoproj.io", Version: "v1alpha1", Kind: "AnalysisTemplateList"},
	{Group: "argoproj.io", Version: "v1alpha1", Kind: "ClusterAnalysisTemplateList"},
	{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObjectList"},
	{Group: "flagger.app", Version: "v1beta1", Kind: "MetricTemplateList"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicyList"},
	{Version: "v1", Kind: "ConfigMapList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRouteList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "GRPCRouteList"},
	{Group: "networking.istio.io", Version: "v1", Kind: "SidecarList"},
	{Group: "networking.istio.io", Version: "v1", Kind: "ServiceEntryList"},
	{Group: "networking.istio.io", Version: "v1", Kind: "WorkloadEntryList"},
	{Group: "extensions.istio.io", Version: "v1alpha1", Kind: "WasmPluginList"},
	// The other kinds of mesh.ConfigKinds, in its order.
	{Group: "networking.istio.io", Version: "v1alpha3", Kind: "EnvoyFilterList"},
	{Group: "networking.istio.io", Version: "v1", Kind: "GatewayList"},
	{Group: "networking.istio.io", Version: "v1beta1", Kind: "ProxyConfigList"},
	{Group: "networking.istio.io", Version: "v1", Kind: "WorkloadGroupList"},
	{Group: "telemetry.istio.io", Version: "v1", Kind: "TelemetryList"},
	{Group: "extensions.istio.io", Version: "v1alpha1", Kind: "TrafficExtensionList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "BackendTLSPolicyList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "GatewayClassList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "ListenerSetList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "ReferenceGrantList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "TCPRouteList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "TLSRouteList"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "UDPRouteList"},
	{Group: "gateway.networking.x-k8s.io", Version: "v1alpha1", Kind: "XBackendTrafficPolicyList"},
	{Group: "gateway.networking.x-k8s.io", Version: "v1alpha1", Kind: "XListenerSetList"},
	{Group: "gateway.networking.x-k8s.io", Version: "v1alpha1", Kind: "XMeshList"},
	{Group: "gateway.networking.x-k8s.io", Version: "v1alpha1", Kind: "XBackendList"},
}

// expectedRecordLists are the Secret LISTs a live observation of the demo makes: one per namespace
// holding Istio releases, selecting only those releases' records. "istiod" is the
// app.kubernetes.io/instance label of the demo's tag objects, which helm template rendered.
var expectedRecordLists = map[string]string{
	"istio-ingress": "name in (istio-ingress),owner=helm",
	"istio-system":  "name in (istio-base,istio-cni,istiod,istiod-1-30-3,ztunnel),owner=helm",
}

var secretList = schema.GroupVersionKind{Version: "v1", Kind: "SecretList"}

func TestLiveListsEveryKindOnceInPages(t *testing.T) {
	for _, pageSize := range []int64{3, 7, 500} {
		t.Run("pages of "+strconv.FormatInt(pageSize, 10), func(t *testing.T) {
			fc := newFakeCluster(t, demoObjects(t), nil)
			s, err := observe.Live(context.Background(), fc, observe.Options{PageSize: pageSize})
			if err != nil {
				t.Fatal(err)
			}
			calls := fc.listCalls()
			if s.Observation.Requests != len(calls) {
				t.Errorf("Observation.Requests = %d, but the cluster served %d requests", s.Observation.Requests, len(calls))
			}
			// A list is a kind in a namespace ("" cluster-wide) with a selector.
			type list struct {
				gvk       schema.GroupVersionKind
				namespace string
				selector  string
			}
			firsts := map[list]int{}
			pages := map[list]int{}
			totals := map[list]int{}
			gotRecordLists := map[string]string{}
			for _, c := range calls {
				l := list{c.gvk, c.namespace, c.selector}
				switch {
				case c.gvk == secretList && c.namespace == "":
					t.Errorf("Secrets were listed cluster-wide (selector %q); only the records of Istio's releases may be listed", c.labels)
				case c.gvk == secretList:
					gotRecordLists[c.namespace] = c.labels
				case c.namespace != "":
					t.Errorf("%s was listed in namespace %q; every kind but Secrets must be listed cluster-wide", c.gvk.Kind, c.namespace)
				}
				if !c.continued {
					firsts[l]++
				}
				pages[l]++
				totals[l] = c.total
			}
			var listed []string
			for l := range firsts {
				if l.namespace == "" || l.gvk == secretList {
					listed = append(listed, l.gvk.String())
				}
			}
			listed = slices.Compact(slices.Sorted(slices.Values(listed)))
			var want []string
			for _, gvk := range expectedKinds {
				want = append(want, gvk.String())
			}
			sort.Strings(want)
			want = slices.Compact(want)
			if d := cmp.Diff(want, listed); d != "" {
				t.Errorf("kinds listed (-want +got):\n%s", d)
			}
			if d := cmp.Diff(expectedRecordLists, gotRecordLists); d != "" {
				t.Errorf("Secret LISTs by namespace and label selector (-want +got):\n%s", d)
			}
			for l, n := range firsts {
				if n != 1 {
					t.Errorf("%s in %q (selector %q) listed %d times from the start; want once", l.gvk.Kind, l.namespace, l.selector, n)
				}
				wantPages := (totals[l] + int(pageSize) - 1) / int(pageSize)
				if wantPages == 0 {
					wantPages = 1
				}
				if pages[l] != wantPages {
					t.Errorf("%s in %q: %d requests for %d objects in pages of %d; want %d", l.gvk.Kind, l.namespace, pages[l], totals[l], pageSize, wantPages)
				}
			}
			if podPages := pages[list{gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodList"}}]; pageSize == 3 && podPages < 10 {
				t.Errorf("pods were not paged: %d requests", podPages)
			}
			// One page per list at 500: every kind, a second ConfigMap list (dashboards), and a
			// second namespace of release records.
			if pageSize == 500 && s.Observation.Requests != len(firsts) {
				t.Errorf("Observation.Requests = %d, want %d", s.Observation.Requests, len(firsts))
			}
		})
	}
}

func noMatch(group string) error {
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: group, Kind: "X"}, SearchedVersions: []string{"v1"}}
}

func TestLiveOptionalAndFailingKinds(t *testing.T) {
	gatewayAPI := "gateway.networking.k8s.io"
	tests := []struct {
		name        string
		fail        failFunc
		wantSkipped []string
		wantErr     string
		check       func(t *testing.T, s *mesh.Snapshot)
	}{
		{
			name: "Gateway API not installed is skipped and recorded, not an error",
			fail: func(gvk schema.GroupVersionKind) error {
				if gvk.Group == gatewayAPI {
					return noMatch(gvk.Group)
				}
				return nil
			},
			wantSkipped: []string{"gateway.networking.k8s.io/BackendTLSPolicy", "gateway.networking.k8s.io/GRPCRoute", "gateway.networking.k8s.io/Gateway",
				"gateway.networking.k8s.io/GatewayClass", "gateway.networking.k8s.io/HTTPRoute", "gateway.networking.k8s.io/ListenerSet",
				"gateway.networking.k8s.io/ReferenceGrant", "gateway.networking.k8s.io/TCPRoute", "gateway.networking.k8s.io/TLSRoute",
				"gateway.networking.k8s.io/UDPRoute"},
			check: func(t *testing.T, s *mesh.Snapshot) {
				for _, g := range s.Gateways {
					if g.Kind == mesh.GatewayKindAPI {
						t.Errorf("API gateway %s observed although Gateway API is not served", g.Name)
					}
				}
			},
		},
		{
			name: "Karpenter answering 404 is skipped",
			fail: func(gvk schema.GroupVersionKind) error {
				if gvk.Group == "karpenter.sh" {
					return apierrors.NewNotFound(schema.GroupResource{Group: "karpenter.sh", Resource: "nodepools"}, "")
				}
				return nil
			},
			wantSkipped: []string{"karpenter.sh/NodePool"},
		},
		{
			name: "Istio security kinds served only as v1beta1 are read through the fallback",
			fail: func(gvk schema.GroupVersionKind) error {
				if gvk.Group == "security.istio.io" && gvk.Version == "v1" {
					return errors.New("the server could not find the requested resource")
				}
				return nil
			},
			check: func(t *testing.T, s *mesh.Snapshot) {
				// The fake holds v1 objects only, so the v1beta1 lists come back empty; what matters is
				// that the kinds were not skipped and nothing failed.
				for _, p := range s.Policies {
					if p.Kind == "AuthorizationPolicy" {
						t.Errorf("unexpected policy %s from an empty v1beta1 list", p.Name)
					}
				}
			},
		},
		{
			name: "Istio CRDs absent in every version are skipped",
			fail: func(gvk schema.GroupVersionKind) error {
				if strings.HasSuffix(gvk.Group, ".istio.io") {
					return noMatch(gvk.Group)
				}
				return nil
			},
			wantSkipped: []string{"extensions.istio.io/TrafficExtension", "extensions.istio.io/WasmPlugin", "networking.istio.io/DestinationRule", "networking.istio.io/EnvoyFilter",
				"networking.istio.io/Gateway", "networking.istio.io/ProxyConfig", "networking.istio.io/ServiceEntry",
				"networking.istio.io/Sidecar", "networking.istio.io/VirtualService", "networking.istio.io/WorkloadEntry",
				"networking.istio.io/WorkloadGroup", "security.istio.io/AuthorizationPolicy", "security.istio.io/PeerAuthentication",
				"security.istio.io/RequestAuthentication", "telemetry.istio.io/Telemetry"},
		},
		{
			name: "a required kind that is not served is an error naming it",
			fail: func(gvk schema.GroupVersionKind) error {
				if gvk.Group == "policy" {
					return noMatch(gvk.Group)
				}
				return nil
			},
			wantErr: "list poddisruptionbudgets",
		},
		{
			name: "forbidden Secrets are an error that says what access is needed",
			fail: func(gvk schema.GroupVersionKind) error {
				if gvk.Kind == "SecretList" {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("RBAC"))
				}
				return nil
			},
			wantErr: "needs get/list on secrets",
		},
		{
			name: "a server error on pods stops the observation",
			fail: func(gvk schema.GroupVersionKind) error {
				if gvk.Kind == "PodList" {
					return apierrors.NewInternalError(errors.New("etcd timeout"))
				}
				return nil
			},
			wantErr: "list pods",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, demoObjects(t), tt.fail)
			s, err := observe.Live(context.Background(), fc, observe.Options{PageSize: 50})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantSkipped, s.Observation.Skipped, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Skipped (-want +got):\n%s", d)
			}
			if len(s.Revisions) != 1 {
				t.Errorf("revisions = %d, want the demo's one", len(s.Revisions))
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

type fixedVersion struct {
	info *version.Info
	err  error
}

func (f fixedVersion) ServerVersion() (*version.Info, error) { return f.info, f.err }

func TestKubernetesVersionSources(t *testing.T) {
	tests := []struct {
		name       string
		getter     observe.VersionGetter
		wantVer    string
		wantSource string
		wantErr    string
	}{
		{"without a version getter the oldest kubelet gives the version", nil, "1.34.2", "nodes", ""},
		{"the server version wins when given", fixedVersion{info: &version.Info{GitVersion: "v1.35.1-eks-113cf36"}}, "1.35.1", "server", ""},
		{"a failing version getter is an error", fixedVersion{err: errors.New("connection refused")}, "", "", "read the Kubernetes server version"},
		{"an unreadable server version is an error", fixedVersion{info: &version.Info{GitVersion: "banana"}}, "", "", "Kubernetes version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, demoObjects(t), nil)
			s, err := observe.Live(context.Background(), fc, observe.Options{ServerVersion: tt.getter})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Cluster.KubernetesVersion.String(); got != tt.wantVer || s.Cluster.KubernetesVersionSource != tt.wantSource {
				t.Errorf("version = %s from %q, want %s from %q", got, s.Cluster.KubernetesVersionSource, tt.wantVer, tt.wantSource)
			}
		})
	}
}

func TestLiveRefusesANilReader(t *testing.T) {
	if _, err := observe.Live(context.Background(), nil, observe.Options{}); err == nil {
		t.Fatal("want an error for a nil reader")
	}
}

func TestLiveStopsWhenTheContextIsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := observe.Live(ctx, newFakeCluster(t, demoObjects(t), nil), observe.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}
