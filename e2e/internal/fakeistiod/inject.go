package fakeistiod

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Names istiod uses when it injects a pod.
const (
	ContainerProxy            = "istio-proxy"
	AnnotationStatus          = "sidecar.istio.io/status"
	AnnotationRev             = "istio.io/rev"
	AnnotationProxyImage      = "sidecar.istio.io/proxyImage"
	AnnotationProxyImageType  = "sidecar.istio.io/proxyImageType"
	AnnotationDefaultContainr = "kubectl.kubernetes.io/default-container"
	LabelTLSMode              = "security.istio.io/tlsMode"
	LabelCanonicalName        = "service.istio.io/canonical-name"
	LabelCanonicalRevision    = "service.istio.io/canonical-revision"
	LabelTunnel               = "networking.istio.io/tunnel"
)

// RevisionConfig is what injection needs to know about one revision. istiod reads it from the
// revision's ConfigMaps: istio-sidecar-injector[-<rev>] (key "values") and istio[-<rev>] (key "mesh").
type RevisionConfig struct {
	// Revision as istiod names itself ("default" for a non-revisioned install).
	Revision string
	// Hub, Tag, Variant and ProxyImage are global.hub, global.tag, global.variant and global.proxy.image.
	Hub, Tag, Variant, ProxyImage string
	// EnableHBONE is meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE == "true" (the
	// ambient profile sets it); injected pods then get label networking.istio.io/tunnel=http.
	EnableHBONE bool
}

// ParseRevisionConfig reads the "values" JSON of ConfigMap istio-sidecar-injector[-<rev>] and the
// "mesh" YAML of ConfigMap istio[-<rev>] (mesh may be empty).
func ParseRevisionConfig(revision, valuesJSON, meshYAML string) (RevisionConfig, error) {
	var values struct {
		Global struct {
			Hub     string `json:"hub"`
			Tag     any    `json:"tag"`
			Variant string `json:"variant"`
			Proxy   struct {
				Image string `json:"image"`
			} `json:"proxy"`
		} `json:"global"`
	}
	if err := json.Unmarshal([]byte(valuesJSON), &values); err != nil {
		return RevisionConfig{}, fmt.Errorf("injector values of revision %q: %w", revision, err)
	}
	rc := RevisionConfig{
		Revision:   revision,
		Hub:        values.Global.Hub,
		Variant:    values.Global.Variant,
		ProxyImage: values.Global.Proxy.Image,
	}
	if values.Global.Tag != nil {
		rc.Tag = fmt.Sprint(values.Global.Tag)
	}
	if meshYAML != "" {
		var mesh struct {
			DefaultConfig struct {
				ProxyMetadata map[string]string `json:"proxyMetadata"`
			} `json:"defaultConfig"`
		}
		if err := yaml.Unmarshal([]byte(meshYAML), &mesh); err != nil {
			return RevisionConfig{}, fmt.Errorf("mesh config of revision %q: %w", revision, err)
		}
		rc.EnableHBONE = mesh.DefaultConfig.ProxyMetadata["ISTIO_META_ENABLE_HBONE"] == "true"
	}
	return rc, nil
}

// ProxyImageFor returns the proxy image istiod would inject, following istiod's rules: the
// sidecar.istio.io/proxyImage annotation wins; an image name with a "/" is used as is; otherwise
// <hub>/<image>:<tag>, with "-<variant>" appended unless the variant is empty or "default".
func (rc RevisionConfig) ProxyImageFor(annotations map[string]string) string {
	if img := annotations[AnnotationProxyImage]; img != "" {
		return img
	}
	name := rc.ProxyImage
	if name == "" {
		name = "proxyv2"
	}
	if strings.Contains(name, "/") {
		return name
	}
	variant := rc.Variant
	if v, ok := annotations[AnnotationProxyImageType]; ok {
		variant = v
	}
	image := rc.Hub + "/" + name + ":" + rc.Tag
	if variant != "" && variant != "default" {
		image += "-" + variant
	}
	return image
}

// sidecarStatus is the JSON istiod writes into sidecar.istio.io/status.
type sidecarStatus struct {
	InitContainers   []string `json:"initContainers"`
	Containers       []string `json:"containers"`
	Volumes          []string `json:"volumes"`
	ImagePullSecrets []string `json:"imagePullSecrets"`
	Revision         string   `json:"revision"`
}

// InjectionPatch returns the JSON patch that injects pod for the revision, and false when the pod is
// already injected. Like istiod it adds the istio-proxy container (or fills in the image of an
// existing istio-proxy container with image "auto", as the gateway template does), the
// sidecar.istio.io/status annotation naming the revision, the istio.io/rev annotation and the
// security.istio.io/tlsMode and canonical-service labels.
func InjectionPatch(pod *corev1.Pod, rc RevisionConfig) ([]byte, bool, error) {
	if _, done := pod.Annotations[AnnotationStatus]; done {
		return nil, false, nil
	}
	image := rc.ProxyImageFor(pod.Annotations)
	containers := append([]corev1.Container(nil), pod.Spec.Containers...)
	found := false
	for i := range containers {
		if containers[i].Name == ContainerProxy {
			found = true
			if containers[i].Image == "" || containers[i].Image == "auto" {
				containers[i].Image = image
			}
		}
	}
	if !found {
		containers = append(containers, corev1.Container{
			Name:  ContainerProxy,
			Image: image,
			Args:  []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"},
			Ports: []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}},
		})
	}

	status, err := json.Marshal(sidecarStatus{Containers: []string{ContainerProxy}, Revision: rc.Revision})
	if err != nil {
		return nil, false, err
	}
	annotations := copyMap(pod.Annotations)
	annotations[AnnotationStatus] = string(status)
	annotations[AnnotationRev] = rc.Revision
	if _, ok := annotations[AnnotationDefaultContainr]; !ok && len(pod.Spec.Containers) > 0 {
		annotations[AnnotationDefaultContainr] = pod.Spec.Containers[0].Name
	}

	labels := copyMap(pod.Labels)
	labels[LabelTLSMode] = "istio"
	if _, ok := labels[LabelCanonicalName]; !ok {
		labels[LabelCanonicalName] = canonicalName(pod)
	}
	if _, ok := labels[LabelCanonicalRevision]; !ok {
		labels[LabelCanonicalRevision] = firstNonEmpty(labels["app.kubernetes.io/version"], labels["version"], "latest")
	}
	if rc.EnableHBONE {
		labels[LabelTunnel] = "http"
	}

	// "add" on an existing member replaces it (RFC 6902), so whole maps and lists are written.
	patch := []map[string]any{
		{"op": "add", "path": "/metadata/annotations", "value": annotations},
		{"op": "add", "path": "/metadata/labels", "value": labels},
		{"op": "add", "path": "/spec/containers", "value": containers},
	}
	out, err := json.Marshal(patch)
	return out, true, err
}

func canonicalName(pod *corev1.Pod) string {
	l := pod.Labels
	if n := firstNonEmpty(l["app.kubernetes.io/name"], l["app"]); n != "" {
		return n
	}
	if pod.GenerateName != "" {
		// <deployment>-<hash>- for Deployments, <name>- otherwise.
		parts := strings.Split(strings.TrimSuffix(pod.GenerateName, "-"), "-")
		if len(parts) > 1 && pod.Labels["pod-template-hash"] == parts[len(parts)-1] {
			parts = parts[:len(parts)-1]
		}
		return strings.Join(parts, "-")
	}
	return pod.Name
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+4)
	for k, v := range m {
		out[k] = v
	}
	return out
}
