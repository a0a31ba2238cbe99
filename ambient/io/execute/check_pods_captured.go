package execute

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkPodsCaptured: the namespace is labelled for ambient and every running pod of it that
// istio-cni captures carries ambient.istio.io/redirection=enabled. Pods with sidecars are never
// captured (the CNI leaves pods with sidecar.istio.io/status alone), so they are only counted. One
// GET and one LIST of the namespace's pods.
func checkPodsCaptured(cp *checkPass, ctx context.Context, c plan.Check, _ plan.PodsCapturedArgs) (bool, string, error) {
	ns := c.Object.Name
	var n corev1.Namespace
	found, err := cp.e.get(ctx, client.ObjectKey{Name: ns}, &n)
	if err != nil {
		return false, "", err
	}
	if !found {
		return false, fmt.Sprintf("namespace %s does not exist", ns), nil
	}
	if n.Labels[mesh.LabelDataplaneMode] != "ambient" {
		return false, fmt.Sprintf("namespace %s is not labelled %s=ambient", ns, mesh.LabelDataplaneMode), nil
	}
	pods, err := cp.e.namespacePods(ctx, ns)
	if err != nil {
		return false, "", err
	}
	var bad []string
	captured, sidecars := 0, 0
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Spec.HostNetwork || p.Labels[mesh.LabelDataplaneMode] == "none" {
			continue
		}
		if hasSidecar(p) {
			sidecars++
			continue
		}
		if v := p.Annotations[mesh.AnnotationRedirection]; v != "enabled" {
			if v == "" {
				v = "absent"
			}
			bad = append(bad, fmt.Sprintf("%s (redirection %s)", p.Name, v))
			continue
		}
		captured++
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return false, fmt.Sprintf("%d of %d pods of namespace %s that ambient captures are not captured: %s", len(bad), len(bad)+captured, ns, plan.ListSome(bad, 8)), nil
	}
	return true, fmt.Sprintf("%d pods captured; %d pods with sidecars are left to the restart", captured, sidecars), nil
}
