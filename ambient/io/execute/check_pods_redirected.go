package execute

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podsRedirected: ambient pods (created since the step started, with since=step-start) that run carry
// ambient.istio.io/redirection=enabled. One LIST of namespaces, one (paged) LIST of pods.
func checkPodsRedirected(cp *checkPass, ctx context.Context, _ plan.Check, a plan.PodsRedirectedArgs) (bool, string, error) {
	e := cp.e
	var since time.Time
	if a.Since == "step-start" {
		if rec := cp.r.record(cp.st.ID); rec != nil {
			since = rec.Started
		}
	}
	var nss corev1.NamespaceList
	if err := e.list(ctx, "namespaces", &nss); err != nil {
		return false, "", err
	}
	ambientNS := map[string]bool{}
	for _, n := range nss.Items {
		ambientNS[n.Name] = n.Labels[mesh.LabelDataplaneMode] == "ambient"
	}
	var bad []string
	checked := 0
	err := e.eachPod(ctx, func(p *corev1.Pod) {
		if p.CreationTimestamp.Time.Before(since) || p.Status.Phase != corev1.PodRunning || p.Spec.HostNetwork || p.Namespace == "kube-system" {
			return
		}
		if _, sidecar := p.Annotations[mesh.AnnotationSidecarStatus]; sidecar {
			return
		}
		mode := p.Labels[mesh.LabelDataplaneMode]
		if mode == "none" || (mode != "ambient" && !ambientNS[p.Namespace]) {
			return
		}
		checked++
		if v := p.Annotations[mesh.AnnotationRedirection]; v != "enabled" {
			if v == "" {
				v = "absent"
			}
			bad = append(bad, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, v))
		}
	})
	if err != nil {
		return false, "", err
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return false, fmt.Sprintf("%d of %d ambient pods are not redirected: %s", len(bad), checked, plan.ListSome(bad, 8)), nil
	}
	return true, "", nil
}

// eachPod pages through every pod of the cluster (one LIST, in pages).
func (e *engine) eachPod(ctx context.Context, fn func(*corev1.Pod)) error {
	cont := ""
	for {
		var pods corev1.PodList
		opts := []client.ListOption{client.Limit(listPageSize)}
		if cont != "" {
			opts = append(opts, client.Continue(cont))
		}
		if err := e.list(ctx, "pods", &pods, opts...); err != nil {
			return err
		}
		for i := range pods.Items {
			fn(&pods.Items[i])
		}
		if cont = pods.Continue; cont == "" {
			return nil
		}
	}
}
