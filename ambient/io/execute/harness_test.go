package execute_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// t0 is when every test's clock starts.
var t0 = executetest.Start

// world is the exported test world (executetest.World) with this package's shortcuts.
type world struct {
	*executetest.World
	t *testing.T
}

func newWorld(t *testing.T, objs ...client.Object) *world {
	t.Helper()
	return &world{World: executetest.NewWorld(t, objs...), t: t}
}

// ---- objects ----

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "linux"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func daemonSet(ns, name, image string, onDelete bool, selector map[string]string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-ds-" + typesUID(name))},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Containers: []corev1.Container{{Name: "c", Image: image}}}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}}}
	if onDelete {
		ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	}
	return ds
}

func istiod(ns, rev, version string) *appsv1.Deployment {
	return deployment(ns, "istiod-"+rev, 2, map[string]string{"app": "istiod", mesh.LabelRev: rev}, "docker.io/istio/pilot:"+version+"-distroless")
}

func deployment(ns, name string, replicas int32, labels map[string]string, image string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}},
		Status: appsv1.DeploymentStatus{Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas}}
}

// workloadPod is a ready pod of a ReplicaSet on the node.
func workloadPod(ns, name, nodeName string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, UID: types.UID("uid-" + typesUID(ns+"-"+name)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs", UID: "rs", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// nodeAgents returns istio-cni and ztunnel DaemonSets at the version with a pod on every node.
func nodeAgents(version string, nodes []string, ztunnelOnDelete bool) []client.Object {
	cni := daemonSet("istio-system", "istio-cni-node", "docker.io/istio/install-cni:"+version+"-distroless", false, map[string]string{"k8s-app": "istio-cni-node"})
	zt := daemonSet("istio-system", "ztunnel", "docker.io/istio/ztunnel:"+version+"-distroless", ztunnelOnDelete, map[string]string{"app": "ztunnel"})
	objs := []client.Object{}
	n := int32(len(nodes))
	for _, ds := range []*appsv1.DaemonSet{cni, zt} {
		ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: n, CurrentNumberScheduled: n, NumberReady: n, NumberAvailable: n, UpdatedNumberScheduled: n}
		objs = append(objs, ds)
		for _, nd := range nodes {
			objs = append(objs, executetest.DaemonSetPod(ds, nd, ds.Name+"-"+nd))
		}
	}
	return objs
}

func typesUID(s string) string { return strings.ReplaceAll(s, ".", "-") }

// dsPod is a ready pod of the DaemonSet on the node (gen > 0: a later generation's name).
func dsPod(ds *appsv1.DaemonSet, node string, gen int) *corev1.Pod {
	name := ds.Name + "-" + node
	if gen > 0 {
		name = fmt.Sprintf("%s-%s-%d", ds.Name, node, gen)
	}
	return executetest.DaemonSetPod(ds, node, name)
}

var _ = time.Second
