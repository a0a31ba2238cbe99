package observe_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

func observeYAML(t *testing.T, doc string) (*mesh.Snapshot, error) {
	t.Helper()
	return observe.YAML(context.Background(), "input.yaml", strings.NewReader(doc), observe.Options{})
}

const istiodYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: istio-system, labels: {app: istiod}}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: istiod, istio.io/rev: default}}
    spec:
      containers:
      - name: discovery
        image: docker.io/istio/pilot:1.29.2
status: {readyReplicas: 1, updatedReplicas: 1}
`

func TestOfflineRejectsInputThatIsNotKubernetesObjects(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr []string // substrings, all required
	}{
		{
			name:    "malformed YAML names the stream and the document",
			input:   istiodYAML + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n",
			wantErr: []string{"input.yaml: document 2", "malformed YAML"},
		},
		{
			name:    "a document without kind says what is missing",
			input:   "apiVersion: v1\nmetadata:\n  name: x\n",
			wantErr: []string{"document 1", "no kind"},
		},
		{
			name:    "a Helm values file is not a Kubernetes object",
			input:   "pilot:\n  autoscaleEnabled: false\nprofile: ambient\n",
			wantErr: []string{"not a Kubernetes object", "no apiVersion or kind"},
		},
		{
			name:    "a bare scalar is not a Kubernetes object",
			input:   istiodYAML + "---\njust some text\n",
			wantErr: []string{"document 2", "found a string"},
		},
		{
			name:    "a top-level sequence is not a Kubernetes object",
			input:   "- apiVersion: v1\n  kind: Pod\n",
			wantErr: []string{"found a list"},
		},
		{
			name:    "list items that are not objects are named by index",
			input:   "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n- 42\n",
			wantErr: []string{"List item 1", "found a number"},
		},
		{
			name:    "items of a List need their own kind",
			input:   "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n",
			wantErr: []string{"List item 0", "no apiVersion or kind"},
		},
		{
			name:    "a field of the wrong type names the object and the fix",
			input:   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: istiod, namespace: istio-system}\nspec:\n  replicas: two\n",
			wantErr: []string{"Deployment istio-system/istiod", "fix the field"},
		},
		{
			name:    "metadata that is not a mapping is an error",
			input:   "apiVersion: v1\nkind: Namespace\nmetadata: [a, b]\n",
			wantErr: []string{"metadata is a list"},
		},
		{
			name:    "an apiVersion with too many slashes is an error",
			input:   "apiVersion: a/b/c\nkind: Pod\nmetadata: {name: p}\n",
			wantErr: []string{`apiVersion "a/b/c"`},
		},
		{
			name: "a Helm release Secret of an Istio release that cannot be decoded is an error naming it",
			input: `apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: istio-system, annotations: {meta.helm.sh/release-name: istiod, meta.helm.sh/release-namespace: istio-system}}
spec: {template: {metadata: {labels: {app: istiod}}, spec: {containers: [{name: discovery, image: docker.io/istio/pilot:1.29.2}]}}}
---
apiVersion: v1
kind: Secret
metadata: {name: sh.helm.release.v1.istiod.v3, namespace: istio-system, labels: {owner: helm, name: istiod}}
data: {release: bm90IGJhc2U2NCE=}
`,
			wantErr: []string{"input.yaml: document 2", "Secret istio-system/sh.helm.release.v1.istiod.v3", "Istio release istiod", "not base64", "repair or delete it"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := observeYAML(t, tt.input)
			if err == nil {
				t.Fatalf("no error; snapshot has %d revisions", len(s.Revisions))
			}
			if !errors.Is(err, observe.ErrInvalidInput) {
				t.Errorf("error %v does not wrap ErrInvalidInput", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestOfflineAcceptsWhatKubectlWrites(t *testing.T) {
	tests := []struct {
		name        string
		input       string
		wantIgnored map[string]int
		check       func(t *testing.T, s *mesh.Snapshot)
	}{
		{
			name:        "kinds the observer does not read are ignored and counted",
			input:       istiodYAML + "---\napiVersion: v1\nkind: Event\nmetadata: {name: e1}\n---\napiVersion: v1\nkind: Event\nmetadata: {name: e2}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: old}\n",
			wantIgnored: map[string]int{"core/Event": 2, "example.com/Widget": 1, "policy/PodDisruptionBudget": 1},
			check: func(t *testing.T, s *mesh.Snapshot) {
				if len(s.Revisions) != 1 || len(s.PodDisruptionBudgets) != 0 {
					t.Errorf("revisions %d, budgets %d; want 1 and 0", len(s.Revisions), len(s.PodDisruptionBudgets))
				}
			},
		},
		{
			name:  "a cluster without istiod gives no revisions and no error",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps, labels: {istio.io/rev: prod, team: x}}\n",
			check: func(t *testing.T, s *mesh.Snapshot) {
				if len(s.Revisions) != 0 || s.CNI != nil || len(s.Ztunnels) != 0 {
					t.Errorf("want an empty mesh, got %d revisions", len(s.Revisions))
				}
				ns, ok := s.Namespace("apps")
				if !ok || ns.Labels["istio.io/rev"] != "prod" || ns.Labels["team"] != "" {
					t.Errorf("namespace labels = %v; want only the mesh label", ns.Labels)
				}
			},
		},
		{
			name:  "a kind: List is expanded",
			input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: b}\nmetadata: {resourceVersion: \"\"}\n",
			check: func(t *testing.T, s *mesh.Snapshot) {
				if len(s.Namespaces) != 2 {
					t.Errorf("namespaces = %d, want 2", len(s.Namespaces))
				}
			},
		},
		{
			name:  "items of a typed list take their kind from the list",
			input: "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: n1, labels: {pool: blue}}\n  status: {nodeInfo: {kubeletVersion: v1.33.4}}\n- metadata: {name: n2}\n  status: {nodeInfo: {kubeletVersion: v1.34.0}}\n",
			check: func(t *testing.T, s *mesh.Snapshot) {
				if len(s.Nodes) != 2 || s.Nodes[0].Pool != "blue" || s.Cluster.KubernetesVersion.String() != "1.33.4" {
					t.Errorf("nodes %+v, version %s", s.Nodes, s.Cluster.KubernetesVersion)
				}
			},
		},
		{
			name:  "JSON from kubectl get -o json is read",
			input: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"j","labels":{"istio.io/dataplane-mode":"ambient"}}}]}`,
			check: func(t *testing.T, s *mesh.Snapshot) {
				if ns, ok := s.Namespace("j"); !ok || !ns.Ambient() {
					t.Errorf("namespace j not read as ambient: %+v", s.Namespaces)
				}
			},
		},
		{
			name:  "empty and comment-only documents are skipped",
			input: "---\n# nothing here\n---\n\n---\n" + istiodYAML + "---\n",
			check: func(t *testing.T, s *mesh.Snapshot) {
				if len(s.Revisions) != 1 {
					t.Errorf("revisions = %d, want 1", len(s.Revisions))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := observeYAML(t, tt.input)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantIgnored, s.Observation.Ignored); d != "" {
				t.Errorf("Ignored (-want +got):\n%s", d)
			}
			if s.Observation.Source != "offline:input.yaml" {
				t.Errorf("source = %q", s.Observation.Source)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestOfflineDirectories(t *testing.T) {
	ctx := context.Background()
	t.Run("a directory without YAML files is an error", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := observe.Dir(ctx, dir, observe.Options{})
		if !errors.Is(err, observe.ErrInvalidInput) || !strings.Contains(err.Error(), "no *.yaml") {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("a path that does not exist is an error", func(t *testing.T) {
		if _, err := observe.Dir(ctx, filepath.Join(t.TempDir(), "missing"), observe.Options{}); err == nil {
			t.Fatal("want an error")
		}
	})
	t.Run("a single file is read as a stream", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "istiod.yaml")
		if err := os.WriteFile(f, []byte(istiodYAML), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := observe.Dir(ctx, f, observe.Options{})
		if err != nil || len(s.Revisions) != 1 || s.Observation.Source != "offline:"+f {
			t.Fatalf("snapshot %+v, error %v", s, err)
		}
	})
	t.Run("errors name the file inside the directory", func(t *testing.T) {
		fsys := fstest.MapFS{
			"a/ok.yaml":    {Data: []byte(istiodYAML)},
			"b/broken.yml": {Data: []byte("apiVersion: v1\nkind: [\n")},
			"c/skip.txt":   {Data: []byte("not read")},
		}
		_, err := observe.FS(ctx, "dump", fsys, observe.Options{})
		if err == nil || !strings.Contains(err.Error(), filepath.Join("dump", "b", "broken.yml")+": document 1") {
			t.Fatalf("error = %v", err)
		}
	})
}

func TestDecodeGivesTypedObjectsForBuiltInKinds(t *testing.T) {
	objs, err := observe.Decode("x.yaml", strings.NewReader(istiodYAML+"---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: a, namespace: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("objects = %d", len(objs))
	}
	if got := typeName(objs[0]); got != "*v1.Deployment" {
		t.Errorf("first object is %s, want *v1.Deployment", got)
	}
	if got := typeName(objs[1]); got != "*unstructured.Unstructured" {
		t.Errorf("second object is %s, want *unstructured.Unstructured", got)
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
