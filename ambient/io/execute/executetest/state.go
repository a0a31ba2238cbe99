package executetest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// State is what a run leaves in the world, in a form two runs can be compared by (go-cmp): crash and
// fault tests compare a disturbed run's State with a clean run's.
type State struct {
	// Nodes maps each node to whether it is cordoned.
	Nodes map[string]bool
	// Pods maps "namespace/name" to the image of the first container and the sidecar revision, and
	// the node for DaemonSet and bare pods (where the scheduler puts a controller's replacement
	// depends on the order evictions happened in, which retries change).
	Pods map[string]string
	// Labels holds the labels of namespaces, webhook configurations and ConfigMaps, and the pod
	// template annotations of Deployments (restart stamps read "<clock>").
	Labels map[string]string
	// Releases lists every Helm release: "namespace/name chart-version #revision status values".
	Releases []string
}

// stampRE matches restartedAt stamps, which are the clock's time and so differ between runs that
// waited differently.
var stampRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// State reads the world's state.
func (w *World) State() State {
	ctx := context.Background()
	s := State{Nodes: map[string]bool{}, Pods: map[string]string{}, Labels: map[string]string{}}
	var nodes corev1.NodeList
	_ = w.Base.List(ctx, &nodes)
	for _, n := range nodes.Items {
		s.Nodes[n.Name] = n.Spec.Unschedulable
	}
	var pods corev1.PodList
	_ = w.Base.List(ctx, &pods)
	for _, p := range pods.Items {
		img := ""
		if len(p.Spec.Containers) > 0 {
			img = p.Spec.Containers[0].Image
		}
		node := p.Spec.NodeName
		if o := ownerOf(&p); o.kind != "" && o.kind != "DaemonSet" {
			node = "-"
		}
		s.Pods[p.Namespace+"/"+p.Name] = strings.TrimSpace(node + " " + img + " " + p.Annotations["istio.io/rev"])
	}
	var nss corev1.NamespaceList
	_ = w.Base.List(ctx, &nss)
	for _, n := range nss.Items {
		s.Labels["Namespace "+n.Name] = fmt.Sprint(n.Labels)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("admissionregistration.k8s.io/v1")
		l.SetKind(kind + "List")
		_ = w.Base.List(ctx, l)
		for _, o := range l.Items {
			s.Labels[kind+" "+o.GetName()] = fmt.Sprint(o.GetLabels())
		}
	}
	var cms corev1.ConfigMapList
	_ = w.Base.List(ctx, &cms)
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, "ambientkit-") {
			s.Labels["ConfigMap "+cm.Namespace+"/"+cm.Name] = fmt.Sprint(cm.Labels)
		}
	}
	var deps appsv1.DeploymentList
	_ = w.Base.List(ctx, &deps)
	for _, d := range deps.Items {
		s.Labels["Deployment "+d.Namespace+"/"+d.Name] = stampRE.ReplaceAllString(fmt.Sprint(d.Spec.Template.Annotations), "<clock>")
	}
	for _, r := range w.Helm.Releases() {
		b, _ := json.Marshal(r.Values)
		s.Releases = append(s.Releases, fmt.Sprintf("%s/%s %s-%s #%d %s %s", r.Namespace, r.Name, r.Chart, r.ChartVersion, r.Revision, r.Status, b))
	}
	sort.Strings(s.Releases)
	return s
}
