package plan_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestNoDaemonSetCheckAsksRolloutStatus: kubectl refuses `rollout status` on a DaemonSet whose
// updateStrategy is OnDelete ("only available for RollingUpdate"), the strategy node-by-node and
// blue-green upgrades set; no printed check of a DaemonSet may ask it.
func TestNoDaemonSetCheckAsksRolloutStatus(t *testing.T) {
	ds := mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}
	for _, c := range []plan.Check{
		plan.NewCheck(ds, plan.DaemonSetRolledOutArgs{}, "rolled out"),
		plan.NewCheck(ds, plan.NodeAgentReadyArgs{}, "ready"),
		plan.NewCheck(ds, plan.NodeAgentReadyArgs{Node: "n1", Version: "1.31.4"}, "ready on n1"),
		plan.NewCheck(ds, plan.NodeAgentAbsentArgs{Node: "n1"}, "gone from n1"),
	} {
		cmd := plan.CheckCommand(c)
		if cmd == "" || strings.Contains(cmd, "rollout status daemonset") {
			t.Errorf("%s: %q, want a command that works under OnDelete", c.Type, cmd)
		}
	}
}

func pod(name, owner string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: owner, Name: "x"}}
	}
	return p
}

// TestTheDrainedCheckFailsOnAPodLeftOnTheNode runs the printed check over the pods of a node: it
// exits 0 when only DaemonSet and mirror pods are left, and non-zero naming any other pod.
func TestTheDrainedCheckFailsOnAPodLeftOnTheNode(t *testing.T) {
	c := plan.NewCheck(mesh.ObjectRef{Kind: "Node", Name: "n1"}, plan.NodeDrainedArgs{}, "drained")
	tests := []struct {
		name string
		pods []corev1.Pod
		pass bool
	}{
		{"daemonset and mirror pods may stay", []corev1.Pod{pod("ztunnel-a", "DaemonSet"), pod("kube-proxy", "Node")}, true},
		{"a ReplicaSet's pod fails the check", []corev1.Pod{pod("ztunnel-a", "DaemonSet"), pod("web-1", "ReplicaSet")}, false},
		{"a bare pod fails the check", []corev1.Pod{pod("debug", "")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := runCheck(t, plan.CheckCommand(c), tc.pods...)
			if ok != tc.pass {
				t.Errorf("exit 0 = %v, want %v; it printed %q", ok, tc.pass, out)
			}
			if !tc.pass && !strings.Contains(out, "still on n1: shop/") {
				t.Errorf("the check does not name the pod left: %q", out)
			}
		})
	}
}
