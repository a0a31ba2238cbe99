package observe

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// istioCharts are the chart names (Chart.yaml name) of Istio's Helm charts, old and new.
var istioCharts = map[string]bool{
	"base": true, "istiod": true, "istio-discovery": true, "cni": true, "istio-cni": true,
	"ztunnel": true, "gateway": true, "istio-default": true,
}

// maxReleaseJSON bounds the decompressed size of one Helm release, against corrupt or hostile data.
const maxReleaseJSON = 64 << 20

// helmRelease is the part of Helm's release record (helm.sh/helm/v3/pkg/release.Release) we read.
type helmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Info      struct {
		Status string `json:"status"`
	} `json:"info"`
	Chart struct {
		Metadata struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
		} `json:"metadata"`
	} `json:"chart"`
	Config map[string]any `json:"config"`
}

// decodeHelmRelease reads Helm's storage format: base64 of (usually gzipped) JSON.
func decodeHelmRelease(data []byte) (*helmRelease, error) {
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, fmt.Errorf("data.release is not base64: %w", err)
	}
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("data.release is not valid gzip: %w", err)
		}
		raw, err = io.ReadAll(io.LimitReader(zr, maxReleaseJSON+1))
		if err != nil {
			return nil, fmt.Errorf("data.release is not valid gzip: %w", err)
		}
		if len(raw) > maxReleaseJSON {
			return nil, fmt.Errorf("data.release decompresses to more than %d bytes", maxReleaseJSON)
		}
	}
	var r helmRelease
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("data.release is not a Helm release record: %w", err)
	}
	return &r, nil
}

// addSecret reads a Helm release Secret (label owner=helm) and keeps the newest revision of each
// release of an Istio chart.
func (b *builder) addSecret(s *corev1.Secret) error {
	if s.Labels[helmOwnerLabel] != "helm" {
		return nil
	}
	data, ok := s.Data["release"]
	if !ok {
		return fmt.Errorf("%w: Secret %s/%s is labelled owner=helm but has no data.release; remove the label or the Secret if it is not Helm's", ErrInvalidInput, s.Namespace, s.Name)
	}
	r, err := decodeHelmRelease(data)
	if err != nil {
		return fmt.Errorf("%w: Secret %s/%s (Helm release storage): %v; repair or delete it (helm history will fail on it too)", ErrInvalidInput, s.Namespace, s.Name, err)
	}
	if !istioCharts[r.Chart.Metadata.Name] {
		return nil
	}
	if r.Name == "" {
		r.Name = s.Labels["name"]
	}
	if r.Namespace == "" {
		r.Namespace = s.Namespace
	}
	key := r.Namespace + "/" + r.Name
	if old, ok := b.helm[key]; ok && old.Revision >= r.Version {
		return nil
	}
	h := mesh.HelmRelease{
		Name:         r.Name,
		Namespace:    r.Namespace,
		Chart:        r.Chart.Metadata.Name,
		ChartVersion: r.Chart.Metadata.Version,
		AppVersion:   r.Chart.Metadata.AppVersion,
		Revision:     r.Version,
		Status:       r.Info.Status,
	}
	if len(r.Config) > 0 {
		h.Values = r.Config
	}
	b.helm[key] = h
	return nil
}
