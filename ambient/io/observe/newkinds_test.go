package observe_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// meshFirewallCRD is a CRD of security.istio.io that no version of the code knows.
func meshFirewallCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "meshfirewalls.security.istio.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "security.istio.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "MeshFirewall", Plural: "meshfirewalls"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true},
				{Name: "v1", Served: true, Storage: true},
			},
		},
	}
}

func meshFirewall() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"rules": []any{}}}}
	u.SetAPIVersion("security.istio.io/v1")
	u.SetKind("MeshFirewall")
	u.SetNamespace("payments")
	u.SetName("edge")
	return u
}

// TestLiveReadsAKindOfTheIstioGroupsThatTheCodeDoesNotKnow: a CRD of an Istio API group newer than
// the code is read from its definition (kind, storage version first) and its objects are kept as
// configuration, so the plans name them; nothing is left unread.
func TestLiveReadsAKindOfTheIstioGroupsThatTheCodeDoesNotKnow(t *testing.T) {
	objs := append(demoObjects(t), client.Object(meshFirewallCRD()), client.Object(meshFirewall()))
	s, err := observe.Live(context.Background(), newFakeCluster(t, objs, nil), observe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []mesh.ConfigObject
	for _, o := range s.ConfigObjects() {
		if o.Kind == "MeshFirewall" {
			got = append(got, o)
		}
	}
	want := []mesh.ConfigObject{{Group: "security.istio.io", Kind: "MeshFirewall", Namespace: "payments", Name: "edge"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("objects of the unknown kind (-want +got):\n%s", d)
	}
	if len(s.Observation.Unread) > 0 {
		t.Errorf("Unread = %v, want none: a live observation reads every kind its CRDs serve", s.Observation.Unread)
	}
}

// TestADumpWithoutTheFileOfAServedKindSaysItIsUnread: in a folder DumpCommands wrote, a kind of
// the Istio groups whose CRD is in cluster.yaml but whose file is missing is unread (its objects
// are unknown); an empty file of it means none; other input is taken as complete.
func TestADumpWithoutTheFileOfAServedKindSaysItIsUnread(t *testing.T) {
	crds := `apiVersion: v1
kind: List
items:
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: envoyfilters.networking.istio.io}
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: telemetries.telemetry.istio.io}
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: meshfirewalls.security.istio.io}
`
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"a dump lacking two files names both", map[string]string{"cluster.yaml": crds, "telemetries.telemetry.istio.io.yaml": "apiVersion: v1\nkind: List\nitems: []\n"},
			[]string{"envoyfilters.networking.istio.io", "meshfirewalls.security.istio.io"}},
		{"objects of a kind make it read even without its own file", map[string]string{"cluster.yaml": crds + `- apiVersion: networking.istio.io/v1alpha3
  kind: EnvoyFilter
  metadata: {name: f, namespace: payments}
`}, []string{"meshfirewalls.security.istio.io", "telemetries.telemetry.istio.io"}},
		{"a folder that is not a dump is taken as complete", map[string]string{"everything.yaml": crds}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s, err := observe.Dir(context.Background(), dir, observe.Options{})
			if err != nil && !strings.Contains(err.Error(), "version") {
				t.Fatal(err)
			}
			if s == nil {
				t.Fatalf("no snapshot: %v", err)
			}
			if d := cmp.Diff(tc.want, s.Observation.Unread); d != "" {
				t.Errorf("Unread (-want +got):\n%s", d)
			}
		})
	}
}
