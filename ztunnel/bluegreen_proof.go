package ztunnel

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// DefaultProbeImage is the image of the pod that proves green captures traffic before any blue node
// is touched: the Kubernetes pause container, which does nothing and is on every node's runtime.
const DefaultProbeImage = "registry.k8s.io/pause:3.10"

// probeNamespace is the probe's own namespace.
func (x *bg) probeNamespace() string { return "ambientkit-probe-" + x.greenName }

const probeDeployment = "green-probe"

// probeDeploymentObject is the probe: one pause pod that may run on green nodes only, tolerating any
// taint they carry, in a namespace of its own labelled for ambient (and for every istiod's
// discoverySelectors), so that istio-cni captures it there. istio-cni fails a captured pod's sandbox
// until the node's ztunnel has acknowledged it (istio.io/istio@v0.0.0-20260827124520-eed52ebb66ad:
// cni/pkg/nodeagent/net_linux.go AddPodToMesh, sendPodToZtunnelAndWaitForAck; ztunnelserver_linux.go
// PodAdded, "no ztunnel connection"), so a ready probe proves green serves its node.
func (x *bg) probeDeploymentObject() map[string]any {
	image := steps.OrDefault(x.g.ProbeImage, DefaultProbeImage)
	labels := map[string]any{"app": probeDeployment}
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": probeDeployment, "namespace": x.probeNamespace()},
		"spec": map[string]any{"replicas": float64(1), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"nodeSelector":                  map[string]any{x.label: x.greenVal},
					"tolerations":                   []any{map[string]any{"operator": "Exists"}},
					"terminationGracePeriodSeconds": float64(1),
					// The restricted Pod Security profile's fields; pause runs as user 65535.
					"containers": []any{map[string]any{"name": "pause", "image": image,
						"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}},
							"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}}}}}}}
}

// startProbe creates the probe's namespace and Deployment, before the plan waits for green nodes:
// with Karpenter NodePools its pending pod is what makes Karpenter launch the first green node.
func (x *bg) startProbe() {
	if x.g.SkipProbe {
		return
	}
	ns := x.probeNamespace()
	labels := map[string]any{mesh.LabelDataplaneMode: "ambient"}
	for k, v := range x.namespaceLabels() {
		labels[k] = v
	}
	st := plan.Step{ID: x.base + "probe/namespace", Description: "create namespace " + ns + " for the pod that proves green, labelled for ambient", Risk: plan.RiskLow,
		ApplyObject: &plan.ApplyObject{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": labels}}}}
	if _, exists := x.s.Namespace(ns); !exists {
		st.Rollback = &plan.Step{ID: st.ID + "/undo", Description: "delete the probe's namespace", Risk: plan.RiskLow,
			DeleteObject: &plan.DeleteObject{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "Namespace", Name: ns}}}
	}
	x.b.Add(st)
	id := x.base + "probe/start"
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("start one probe pod (%s) on a green node", steps.OrDefault(x.g.ProbeImage, DefaultProbeImage)), Risk: plan.RiskLow,
		Reason:      "green is proven with a pod it captures before any blue node is cordoned; with NodePools, its pending pod makes Karpenter launch the first green node",
		ApplyObject: &plan.ApplyObject{Object: x.probeDeploymentObject()},
		Rollback: &plan.Step{ID: id + "/undo", Description: "delete the probe Deployment", Risk: plan.RiskLow,
			DeleteObject: &plan.DeleteObject{APIVersion: "apps/v1", Object: mesh.ObjectRef{Kind: "Deployment", Namespace: ns, Name: probeDeployment}}}})
}

// proveGreen proves green before any blue node is touched: a ready green ztunnel on every green
// node (there is at least one: capacity waited for it), and the probe pod ready and captured on a
// green node: istio-cni handed it to green's ztunnel, which accepted it.
func (x *bg) proveGreen() {
	sel := x.label + "=" + x.greenVal
	x.b.Add(plan.Step{ID: x.base + "green-ready", Description: fmt.Sprintf("wait until a ready green ztunnel %s runs on every green node", x.opts.Target), Risk: plan.RiskNone,
		Reason: fmt.Sprintf("workloads move only once green runs on every green node; no green pod at all points at a quota refusal of priority class system-node-critical (kubectl -n %s get events)", x.greenNS),
		WaitFor: &plan.WaitFor{TimeoutSeconds: 600, Check: plan.NewCheck(x.green, plan.NodeAgentReadyArgs{All: true, Version: x.opts.Target.String()},
			fmt.Sprintf("every node labelled %s runs a ready %s pod at %s", sel, x.greenName, x.opts.Target))}})
	if x.g.SkipProbe {
		return
	}
	ns := x.probeNamespace()
	x.b.Add(plan.Step{ID: x.base + "probe/captured", Description: "wait until the probe pod runs on a green node, captured by green's ztunnel", Risk: plan.RiskNone,
		Reason: "no blue node is cordoned before a pod has started on a green node through green's ztunnel: the CNI starts no ambient pod on a node whose ztunnel does not take it",
		Notes:  []string{"stuck in ContainerCreating: green's ztunnel does not serve the node (kubectl -n " + x.greenNS + " logs ds/" + x.greenName + "); in Pending: no green node takes it (capacity, taints)"},
		WaitFor: &plan.WaitFor{TimeoutSeconds: 900, Check: plan.NewCheck(mesh.ObjectRef{}, plan.WorkloadsReadyArgs{Workloads: []string{"Deployment/" + ns + "/" + probeDeployment}},
			"the probe Deployment's pod is ready")},
		Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{Kind: "Namespace", Name: ns}, plan.PodsCapturedArgs{},
			"the probe pod carries ambient.istio.io/redirection=enabled")}})
}

// removeProbe deletes the probe's namespace once blue is gone (it kept a green node busy meanwhile, so
// the first wave's pods had somewhere to go).
func (x *bg) removeProbe() {
	if x.g.SkipProbe {
		return
	}
	ns := x.probeNamespace()
	id := x.base + "probe/"
	x.b.Add(plan.Step{ID: id + "backup", Description: "back up the probe's namespace and Deployment and read the backup back", Risk: plan.RiskNone,
		Backup: &plan.Backup{Objects: []plan.BackupObject{{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "Namespace", Name: ns}},
			{APIVersion: "apps/v1", Object: mesh.ObjectRef{Kind: "Deployment", Namespace: ns, Name: probeDeployment}}}},
		Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.BackupReadableArgs{}, "every backed-up object reads back equal")}})
	x.b.Add(plan.Step{ID: id + "remove", Description: "delete the probe's namespace " + ns + " (the plan made it)", Risk: plan.RiskLow,
		DeleteObject: &plan.DeleteObject{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "Namespace", Name: ns}, BackupStep: id + "backup"}})
}

// Green's pods run at priority class system-node-critical (istio.io/istio@v0.0.0-20260827124520-eed52ebb66ad:
// manifests/charts/ztunnel/templates/daemonset.yaml, priorityClassName). Some platforms admit that
// class outside kube-system only under a ResourceQuota that names it: the chart renders one in the
// release namespace with resourceQuotas.enabled (templates/resourcequota.yaml, scopeSelector
// PriorityClass In [system-node-critical], pods resourceQuotas.pods, default 5000 in values.yaml),
// and platform gke turns it on (files/profile-platform-gke.yaml); the istio-cni chart's README says
// the same of that chart outside kube-system.

// gkeNodeLabel marks the nodes of a GKE node pool.
const gkeNodeLabel = "cloud.google.com/gke-nodepool"

// priorityQuota decides whether green's values must turn the chart's ResourceQuota on, and says at
// plan time what the reviewer must know about it.
func (x *bg) priorityQuota(values map[string]any) bool {
	if quotaOn(values) {
		return false
	}
	gke := false
	for _, n := range x.s.Nodes {
		if _, ok := n.Labels[gkeNodeLabel]; ok || n.PoolLabel == gkeNodeLabel {
			gke = true
			break
		}
	}
	obj := mesh.ObjectRef{Kind: "Namespace", Name: x.greenNS}
	if gke {
		x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenPriorityClassQuota, Severity: plan.Info, Object: obj,
			Message: fmt.Sprintf("green's pods run at priority class system-node-critical in namespace %s; on GKE (the nodes carry %s) pods of that class are admitted outside kube-system only under a ResourceQuota for it, so the plan turns on the chart's (resourceQuotas.enabled=true)", x.greenNS, gkeNodeLabel),
			Remedy:  "nothing to do; set platform=gke in green's values to use the chart's whole GKE profile"})
		return true
	}
	where := "blue runs in " + x.blue.Namespace + " without the chart's quota, so this cluster admits the class there — unless a ResourceQuota made by hand allows it: then make one in " + x.greenNS + " too"
	if x.blue.Namespace == "kube-system" {
		where = "blue runs in kube-system, where every platform admits it, so nothing shows yet whether this one admits it elsewhere"
	}
	x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenPriorityClassQuota, Severity: plan.Info, Object: obj,
		Message: fmt.Sprintf("green's pods run at priority class system-node-critical in namespace %s, with no ResourceQuota for it (resourceQuotas.enabled is off); a platform that admits the class outside kube-system only under such a quota (GKE does) refuses them; %s", x.greenNS, where),
		Remedy:  fmt.Sprintf("if your platform needs it, give green resourceQuotas.enabled=true (Values[%q]) or its platform value; else the plan stops at green-capacity or green-ready, and the events of namespace %s name the quota", x.greenRel, x.greenNS)})
	return false
}

// quotaOn reports whether the values render the chart's ResourceQuota: resourceQuotas.enabled, or
// platform gke (global.platform too) whose profile turns it on.
func quotaOn(values map[string]any) bool {
	if rq, ok := values["resourceQuotas"].(map[string]any); ok {
		if on, set := rq["enabled"]; set {
			return on == true || on == "true"
		}
	}
	platform, _ := values["platform"].(string)
	if g, ok := values["global"].(map[string]any); ok && platform == "" {
		platform, _ = g["platform"].(string)
	}
	return strings.EqualFold(platform, "gke")
}
