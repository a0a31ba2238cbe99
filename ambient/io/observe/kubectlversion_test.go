package observe_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/version"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
)

// kubectlVersionYAML is `kubectl version -o yaml` as kubectl v1.37 writes it (k8s.io/kubectl
// pkg/cmd/version, type Version over apimachinery's version.Info).
const kubectlVersionYAML = `clientVersion:
  buildDate: "2026-10-14T10:11:12Z"
  compiler: gc
  gitCommit: 0123456789abcdef0123456789abcdef01234567
  gitTreeState: clean
  gitVersion: v1.37.2
  goVersion: go1.26.8
  major: "1"
  minor: "37"
  platform: linux/amd64
kustomizeVersion: v5.8.0
serverVersion:
  buildDate: "2026-10-14T10:11:12Z"
  compiler: gc
  emulationMajor: "1"
  emulationMinor: "36"
  gitCommit: 0123456789abcdef0123456789abcdef01234567
  gitTreeState: clean
  gitVersion: v1.36.4-eks-4f4795d
  goVersion: go1.26.8
  major: "1"
  minCompatibilityMajor: "1"
  minCompatibilityMinor: "35"
  minor: "36+"
  platform: linux/amd64
`

const kubectlVersionJSON = `{
  "clientVersion": {"major": "1", "minor": "37", "gitVersion": "v1.37.2", "gitCommit": "x", "gitTreeState": "clean",
    "buildDate": "2026-10-14T10:11:12Z", "goVersion": "go1.26.8", "compiler": "gc", "platform": "linux/amd64"},
  "kustomizeVersion": "v5.8.0",
  "serverVersion": {"major": "1", "minor": "35", "gitVersion": "v1.35.1", "gitCommit": "y", "gitTreeState": "clean",
    "buildDate": "2026-06-01T00:00:00Z", "goVersion": "go1.25.4", "compiler": "gc", "platform": "linux/arm64"}
}
`

// nodeAt is a node whose kubelet runs the given version.
func nodeAt(name, kubelet string) string {
	return "---\napiVersion: v1\nkind: Node\nmetadata: {name: " + name + "}\nstatus: {nodeInfo: {kubeletVersion: " + kubelet + "}}\n"
}

func TestKubectlVersionOutputGivesTheServerVersionOffline(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		files      fstest.MapFS
		opts       observe.Options
		wantVer    string
		wantSource string
	}{
		{name: "kubectl version -o yaml beside the objects gives the server version, not the kubelets'",
			files: fstest.MapFS{
				"cluster.yaml": {Data: []byte(nodeAt("n1", "v1.34.2") + nodeAt("n2", "v1.35.0"))},
				"version.yaml": {Data: []byte(kubectlVersionYAML)},
			},
			wantVer: "1.36.4", wantSource: "kubectl-version"},
		{name: "kubectl version -o json is read the same way",
			files:   fstest.MapFS{"version.json": {Data: []byte(kubectlVersionJSON)}},
			wantVer: "1.35.1", wantSource: "kubectl-version"},
		{name: "kubectl version output as one document of a larger stream is read",
			files:   fstest.MapFS{"all.yaml": {Data: []byte(nodeAt("n1", "v1.34.2") + "---\n" + kubectlVersionYAML)}},
			wantVer: "1.36.4", wantSource: "kubectl-version"},
		{name: "two outputs that agree are fine",
			files: fstest.MapFS{
				"a/version.yaml": {Data: []byte(kubectlVersionYAML)},
				"b/version.yaml": {Data: []byte(kubectlVersionYAML)},
			},
			wantVer: "1.36.4", wantSource: "kubectl-version"},
		{name: "a version getter in the options wins over the file",
			files:   fstest.MapFS{"version.yaml": {Data: []byte(kubectlVersionYAML)}},
			opts:    observe.Options{ServerVersion: fixedVersion{info: &version.Info{GitVersion: "v1.33.0"}}},
			wantVer: "1.33.0", wantSource: "server"},
		{name: "without kubectl version output the oldest kubelet gives the version",
			files:   fstest.MapFS{"cluster.yaml": {Data: []byte(nodeAt("n1", "v1.34.2") + nodeAt("n2", "v1.35.0"))}},
			wantVer: "1.34.2", wantSource: "nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := observe.FS(ctx, "dump", tt.files, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Cluster.KubernetesVersion.String(); got != tt.wantVer || s.Cluster.KubernetesVersionSource != tt.wantSource {
				t.Errorf("version %s from %q, want %s from %q", got, s.Cluster.KubernetesVersionSource, tt.wantVer, tt.wantSource)
			}
			if len(s.Observation.Ignored) != 0 {
				t.Errorf("Ignored = %v; kubectl version output is read, not ignored", s.Observation.Ignored)
			}
		})
	}
}

func TestKubectlVersionOutputThatCannotBeUsedIsAnError(t *testing.T) {
	clientOnly := "clientVersion:\n  gitVersion: v1.37.2\n  major: \"1\"\n  minor: \"37\"\nkustomizeVersion: v5.8.0\n"
	tests := []struct {
		name    string
		input   string
		wantErr []string
	}{
		{"output with only clientVersion says kubectl did not reach the cluster", clientOnly,
			[]string{"input.yaml: document 1", "without serverVersion", "kubectl version -o yaml"}},
		{"an unreadable server gitVersion is an error naming the field", strings.Replace(kubectlVersionYAML, "v1.36.4-eks-4f4795d", "banana", 1),
			[]string{"serverVersion.gitVersion", "banana"}},
		{"a serverVersion field of the wrong type is an error naming it", "serverVersion:\n  gitVersion: 1.3\n",
			[]string{"serverVersion.gitVersion is a number"}},
		{"a serverVersion that is not a mapping is an error", "serverVersion: v1.36.4\n",
			[]string{"serverVersion is a string"}},
		{"two outputs that disagree are an error naming both", kubectlVersionYAML + "---\n" + kubectlVersionJSON,
			[]string{"document 2", "1.35.1", "document 1", "1.36.4", "keep only the output of this cluster"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := observeYAML(t, tt.input)
			if !errors.Is(err, observe.ErrInvalidInput) {
				t.Fatalf("error = %v, want one wrapping ErrInvalidInput", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestDecodeSkipsKubectlVersionOutput(t *testing.T) {
	objs, err := observe.Decode("x.yaml", strings.NewReader(kubectlVersionYAML+"---\n"+istiodYAML))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetName() != "istiod" {
		t.Fatalf("Decode gave %d objects, want only the istiod Deployment", len(objs))
	}
}
