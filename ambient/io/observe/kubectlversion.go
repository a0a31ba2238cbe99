package observe

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/version"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// kubectlVersionSource is Cluster.KubernetesVersionSource for a version read from `kubectl version`
// output in offline input.
const kubectlVersionSource = "kubectl-version"

// isKubectlVersion recognises the output of `kubectl version -o yaml` (or -o json): a mapping with
// clientVersion, serverVersion and kustomizeVersion (k8s.io/kubectl@v0.37.2 pkg/cmd/version/version.go,
// type Version), and neither apiVersion nor kind.
func isKubectlVersion(m map[string]any) bool {
	if _, ok := m["apiVersion"]; ok {
		return false
	}
	if _, ok := m["kind"]; ok {
		return false
	}
	_, client := m["clientVersion"]
	_, server := m["serverVersion"]
	return client || server
}

// serverVersionOf reads serverVersion from kubectl version output. Output without it (kubectl
// writes only clientVersion when it cannot reach the server, and exits non-zero) is an error: the
// dump was not taken from the cluster, and the version would silently fall back to the kubelets'.
func serverVersionOf(m map[string]any, where string) (*version.Info, error) {
	raw, ok := m["serverVersion"]
	if !ok || raw == nil {
		return nil, fmt.Errorf("%w: %s: kubectl version output without serverVersion: kubectl could not reach the cluster when it ran; run kubectl version -o yaml > version.yaml with access to the cluster, or remove the file", ErrInvalidInput, where)
	}
	if _, ok := raw.(map[string]any); !ok {
		return nil, fmt.Errorf("%w: %s: kubectl version serverVersion is a %s, not a mapping", ErrInvalidInput, where, describe(raw))
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: kubectl version serverVersion: %v", ErrInvalidInput, where, err)
	}
	var info version.Info
	if err := json.Unmarshal(b, &info); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%w: %s: kubectl version serverVersion.%s is a %s, want a %s", ErrInvalidInput, where, te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("%w: %s: kubectl version serverVersion: %v", ErrInvalidInput, where, err)
	}
	return &info, nil
}

// addKubectlVersion takes the server version from kubectl version output. Two outputs must agree.
func (b *builder) addKubectlVersion(info *version.Info, where string) error {
	v, err := mesh.ParseKubernetesVersion(info.GitVersion)
	if err != nil {
		return fmt.Errorf("%w: %s: kubectl version serverVersion.gitVersion: %v", ErrInvalidInput, where, err)
	}
	if b.kubectlVersionAt != "" && b.kubectlVersion != v {
		return fmt.Errorf("%w: %s: kubectl version says the server is %s, but %s says %s; keep only the output of this cluster",
			ErrInvalidInput, where, v, b.kubectlVersionAt, b.kubectlVersion)
	}
	if b.kubectlVersionAt == "" {
		b.kubectlVersion, b.kubectlVersionAt = v, where
	}
	return nil
}
