package observe

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// addNodePool keeps what a plan needs of a Karpenter NodePool (karpenter.sh/v1: the labels of
// spec.template.metadata.labels, which every node it launches carries, and spec.limits).
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
