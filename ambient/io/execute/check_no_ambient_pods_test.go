package execute_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// The blue-green's blue uninstall waits on NoAmbientPods: a DaemonSet's ambient pod left on a blue
// node (drains leave DaemonSet pods) loses its traffic once blue is gone, so it must count.
func TestNoAmbientPodsCountsWhatDrainsLeave(t *testing.T) {
	blue := func(name string) *corev1.Node {
		n := node(name)
		n.Labels["ambientkit.io/ztunnel"] = "blue"
		return n
	}
	ambientNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "logging", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}}}
	logPod := func(node string) *corev1.Pod {
		p := dsPod(daemonSet("logging", "fluent-bit", "fluent-bit:3", false, map[string]string{"app": "fluent-bit"}), node, 0)
		p.Annotations = map[string]string{mesh.AnnotationRedirection: "enabled"}
		return p
	}
	check := plan.NewCheck(mesh.ObjectRef{}, plan.NoAmbientPodsArgs{Selector: "ambientkit.io/ztunnel!=green"}, "no ambient pod on a node that is not green")
	for _, tc := range []struct {
		name string
		objs []client.Object
		ok   bool
		why  string
	}{
		{name: "an ambient DaemonSet pod on a blue node counts", objs: []client.Object{ambientNS, blue("b1"), logPod("b1")},
			why: "1 ambient pod still run on nodes labelled ambientkit.io/ztunnel!=green: logging/fluent-bit-b1 on b1"},
		{name: "a finished pod does not count", ok: true, objs: []client.Object{ambientNS, blue("b1"),
			podWith(workloadPod("logging", "report", "b1", nil), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })}},
		{name: "the blue node gone, nothing is left", ok: true, objs: []client.Object{ambientNS, logPod("b1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.objs...)
			ok, why, err := w.Executor().Check(context.Background(), check)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || !strings.Contains(why, tc.why) {
				t.Errorf("Check = %v, %q; want %v, %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}
