package observe

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// addNodePool keeps what a plan needs of a Karpenter NodePool (karpenter.sh/v1: the labels of
// spec.template.metadata.labels, which every node it launches carries, spec.template.spec.taints,
// and spec.limits, parsed as quantities where they parse).
func (b *builder) addNodePool(u *unstructured.Unstructured) {
	spec := mapOf(u.Object["spec"])
	p := mesh.NodePool{Name: u.GetName()}
	labels := map[string]string{}
	for k, v := range mapOf(mapOf(mapOf(spec["template"])["metadata"])["labels"]) {
		if s := strOf(v); s != "" {
			labels[k] = s
		}
	}
	p.Labels = copyMap(labels)
	limits := map[string]string{}
	for k, v := range mapOf(spec["limits"]) {
		switch x := v.(type) {
		case string:
			limits[k] = x
		case int64, float64, int:
			limits[k] = fmtNumber(x)
		}
	}
	p.Limits = copyMap(limits)
	parsed := corev1.ResourceList{}
	for k, v := range limits {
		if q, err := resource.ParseQuantity(v); err == nil {
			parsed[corev1.ResourceName(k)] = q
		}
	}
	p.Limit = resources(parsed)
	tmpl, _ := mapOf(mapOf(spec["template"])["spec"])["taints"].([]any)
	for _, t := range tmpl {
		m := mapOf(t)
		if key := strOf(m["key"]); key != "" {
			p.Taints = append(p.Taints, mesh.Taint{Key: key, Value: strOf(m["value"]), Effect: strOf(m["effect"])})
		}
	}
	b.nodePools = append(b.nodePools, p)
}

// fmtNumber writes a JSON number as Kubernetes quantities are written ("1000", "0.5").
func fmtNumber(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}
