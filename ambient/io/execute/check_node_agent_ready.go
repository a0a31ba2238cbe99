package execute

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/io/internal/affinity"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeAgentReady: a ready, non-terminating pod of the DaemonSet runs the version on the node (one LIST
// of the namespace's pods on that node, or none when the watch event that woke the wait shows such a
// pod), or with all=true on every ready node the DaemonSet selects.
func checkNodeAgentReady(cp *checkPass, ctx context.Context, c plan.Check, a plan.NodeAgentReadyArgs) (bool, string, error) {
	e := cp.e
	ns, name, version := c.Object.Namespace, c.Object.Name, a.Version
	id := "DaemonSet " + ns + "/" + name
	ours := func(p *corev1.Pod) bool {
		ctl := metav1.GetControllerOf(p)
		return ctl != nil && ctl.Kind == "DaemonSet" && ctl.Name == name && p.DeletionTimestamp == nil &&
			podReady(p) && (version == "" || tagMatches(podTag(p), version))
	}
	if !a.All {
		node := a.Node
		if node == "" {
			return false, "", errors.New("NodeAgentReady needs params.node or params.all=true; fix the plan")
		}
		// The watch event that woke the wait shows the pod ready: that is what this LIST would say.
		if p, ok := cp.r.proof.(*corev1.Pod); ok && p.Namespace == ns && p.Spec.NodeName == node && ours(p) {
			return true, "", nil
		}
		var pods corev1.PodList
		if err := e.list(ctx, "pods of "+id+" on "+node, &pods, client.InNamespace(ns), client.MatchingFields{"spec.nodeName": node}); err != nil {
			return false, "", err
		}
		var seen []string
		for i := range pods.Items {
			p := &pods.Items[i]
			if ours(p) {
				return true, "", nil
			}
			if ctl := metav1.GetControllerOf(p); ctl != nil && ctl.Kind == "DaemonSet" && ctl.Name == name {
				seen = append(seen, fmt.Sprintf("%s runs %s, ready=%v, terminating=%v", p.Name, podTag(p), podReady(p), p.DeletionTimestamp != nil))
			}
		}
		if len(seen) == 0 {
			if gone, err := e.nodeGone(ctx, cp.r, cp.st, node); err != nil || gone {
				return err == nil, "", err // a node that went away needs no ztunnel
			}
			return false, fmt.Sprintf("no pod of %s runs on node %s", id, node), nil
		}
		return false, fmt.Sprintf("no ready %s pod at %s on node %s (%s)", id, orAny(version), node, strings.Join(seen, "; ")), nil
	}
	var ds appsv1.DaemonSet
	found, err := e.get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds)
	if err != nil || !found {
		return false, id + " does not exist", err
	}
	var nodes corev1.NodeList
	if err := e.list(ctx, "nodes", &nodes); err != nil {
		return false, "", err
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return false, "", fmt.Errorf("%s has an invalid selector: %w", id, err)
	}
	var pods corev1.PodList
	if err := e.list(ctx, "pods of "+id, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, "", err
	}
	good := map[string]bool{}
	for i := range pods.Items {
		if ours(&pods.Items[i]) {
			good[pods.Items[i].Spec.NodeName] = true
		}
	}
	var missing []string
	eligible := 0
	for _, n := range nodes.Items {
		if !affinity.SchedulesOn(&ds.Spec.Template.Spec, &n) || !nodeReady(&n) {
			continue
		}
		eligible++
		if !good[n.Name] {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return false, fmt.Sprintf("%d of %d nodes have no ready %s pod at %s: %s", len(missing), eligible, id, orAny(version), plan.ListSome(missing, 8)), nil
	}
	return true, "", nil
}

func orAny(v string) string {
	if v == "" {
		return "any version"
	}
	return v
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
