package execute_test

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

const (
	fromV   = "1.30.3"
	toV     = "1.31.4"
	fromRev = "1-30-3"
	toRev   = "1-31-4"
)

// upgradeWorld is a small ambient mesh at 1.30.3 on the given number of nodes, matching
// meshtest.Healthy: istiod revision 1-30-3, tags prod and default, istio-cni and ztunnel on every
// node, an ambient namespace "shop" with a cart pod on every node and a database pod on the second
// node whose PodDisruptionBudget refuses its first two evictions, a sidecar namespace "legacy", and
// the four Helm releases.
func upgradeWorld(t *testing.T, nodes int) *world {
	t.Helper()
	snap := meshtest.Healthy(fromV, nodes)
	var names []string
	var objs []client.Object
	for _, n := range snap.Nodes {
		names = append(names, n.Name)
		objs = append(objs, node(n.Name))
	}
	objs = append(objs, nodeAgents(fromV, names, false)...)
	objs = append(objs,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Labels: map[string]string{mesh.LabelRev: "prod"}}},
		istiod("istio-system", fromRev, fromV),
		deployment("legacy", "billing", 2, map[string]string{"app": "billing"}, "billing:1"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old-config", Namespace: "legacy"}, Data: map[string]string{"k": "v"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "istio-revision-tag-prod",
			Labels: map[string]string{mesh.LabelRev: fromRev, mesh.LabelTag: "prod"}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "istiod-default-validator",
			Labels: map[string]string{mesh.LabelRev: fromRev}}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "authorizationpolicies.security.istio.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "security.istio.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "authorizationpolicies", Kind: "AuthorizationPolicy"}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 1, DesiredHealthy: 0}},
		// A pod that retried sandbox creation for 30s while the CNI rolled: transient, reported.
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "cart-0.sandbox", Namespace: "shop"}, Reason: "FailedCreatePodSandBox", Type: "Warning",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "cart-0"},
			Message:        `Failed to create pod sandbox: plugin type="istio-cni" name="istio-cni" failed (add): unable to push CNI event (status code 500): no ztunnel connection`,
			FirstTimestamp: metav1.NewTime(t0.Add(1e9)), LastTimestamp: metav1.NewTime(t0.Add(31e9)), Count: 4},
	)
	for i, n := range names {
		objs = append(objs, workloadPod("shop", fmt.Sprintf("cart-%d", i), n, map[string]string{"app": "cart"}))
	}
	if len(names) > 1 {
		objs = append(objs, workloadPod("shop", "db-0", names[1], map[string]string{"app": "db"}))
	}
	objs = append(objs, workloadPod("legacy", "billing-0", names[0], map[string]string{"app": "billing"}))
	w := newWorld(t, objs...)
	w.Model = snap
	w.OnChart = w.chartSnapshot
	w.RefuseEvictions("shop/db-0", 2)
	var rels []execute.Release
	for _, h := range snap.HelmReleases {
		if h.Chart == "gateway" {
			continue
		}
		rels = append(rels, execute.Release{Name: h.Name, Namespace: h.Namespace, Chart: h.Chart, ChartVersion: h.ChartVersion,
			AppVersion: h.AppVersion, Revision: h.Revision, Status: h.Status, Values: h.Values})
	}
	w.Helm = w.NewHelm(rels...)
	return w
}

func chart(name, version string) plan.ChartRef {
	return plan.ChartRef{Name: name, Repository: "https://istio-release.storage.googleapis.com/charts", Version: version}
}

func helmCheck(ns, name, version string) plan.Check {
	return plan.Check{Type: plan.CheckHelmReleaseVersion, Object: mesh.ObjectRef{Kind: "HelmRelease", Namespace: ns, Name: name},
		Params: map[string]string{"version": version}, Description: "release " + name + " at " + version}
}

func ztunnelRef() mesh.ObjectRef {
	return mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}
}

func tagMWC(rev string) map[string]any {
	return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]any{"name": "istio-revision-tag-prod", "labels": map[string]any{mesh.LabelRev: rev, mesh.LabelTag: "prod"}}}
}

// upgradePlan is a complete small upgrade of upgradeWorld, shaped like ambient.PlanUpgrade's: CRDs,
// a canary istiod, the CNI, ztunnel node by node (OnDelete, cordon, drain, replace, wait, uncordon,
// health gate), a tag move with a restart, a namespace label, the default revision, and the removal
// of the old revision after an approval and a backup.
func upgradePlan(w *world) *plan.Plan { return upgradePlanBatch(w, 0) }

// upgradePlanBatch is upgradePlan with the world's nodes in waves of batch nodes (plan.Step.Wave),
// as the planner shapes them; 0 gives upgradePlan's steps, one node after another without waves.
func upgradePlanBatch(w *world, batch int) *plan.Plan {
	p := plan.New(plan.Metadata{Name: "upgrade Istio 1.30.3 → 1.31.4", Operation: "upgrade", Fingerprint: w.Model.Fingerprint(),
		From: mesh.MustParseVersion(fromV), To: mesh.MustParseVersion(toV)})
	last := ""
	add := func(st plan.Step) {
		if last != "" && len(st.DependsOn) == 0 {
			st.DependsOn = []string{last}
		}
		if st.Risk == "" {
			st.Risk = plan.RiskLow
		}
		p.Steps = append(p.Steps, st)
		last = st.ID
	}
	add(plan.Step{ID: "prechecks", Description: "re-run the compatibility checks", Verify: &plan.Verification{Checks: []plan.Check{
		{Type: plan.CheckFindingsClear, Params: map[string]string{"target": toV, "strategy": "revision"}, Description: "nothing stops the upgrade"}}}})
	add(plan.Step{ID: "base/upgrade", Description: "upgrade the CRDs",
		HelmUpgrade: &plan.HelmRelease{Release: "istio-base", Namespace: "istio-system", Chart: chart("base", toV),
			Values: map[string]any{"defaultRevision": fromRev}, PreviousRevision: 1},
		Postconditions: []plan.Check{helmCheck("istio-system", "istio-base", toV),
			{Type: plan.CheckCRDsEstablished, Params: map[string]string{"group": "istio.io"}, Description: "CRDs established"}},
		Rollback: &plan.Step{ID: "base/upgrade/undo", Description: "roll base back", Risk: plan.RiskLow,
			HelmRollback: &plan.HelmRollback{Release: "istio-base", Namespace: "istio-system", Revision: 1}}})
	add(plan.Step{ID: "istiod/" + toRev + "/install", Description: "install the canary",
		HelmInstall: &plan.HelmRelease{Release: "istiod-" + toRev, Namespace: "istio-system", Chart: chart("istiod", toV),
			Values: map[string]any{"revision": toRev, "profile": "ambient"}},
		Postconditions: []plan.Check{
			{Type: plan.CheckDeploymentReady, Object: mesh.ObjectRef{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-" + toRev}, Description: "istiod ready"},
			{Type: plan.CheckRevisionExistsAndReady, Params: map[string]string{"revision": toRev}, Description: "revision ready"}},
		Rollback: &plan.Step{ID: "istiod/" + toRev + "/install/undo", Description: "uninstall the canary", Risk: plan.RiskLow,
			HelmUninstall: &plan.HelmUninstall{Release: "istiod-" + toRev, Namespace: "istio-system"}}})
	add(plan.Step{ID: "cni/upgrade", Description: "upgrade istio-cni", Risk: plan.RiskMedium,
		Preconditions: []plan.Check{{Type: plan.CheckFindingsClear, Params: map[string]string{"component": "control-plane", "version": toV}, Description: "a 1.31 control plane is ready"}},
		HelmUpgrade:   &plan.HelmRelease{Release: "istio-cni", Namespace: "istio-system", Chart: chart("cni", toV), Values: map[string]any{"profile": "ambient"}, PreviousRevision: 1},
		Postconditions: []plan.Check{helmCheck("istio-system", "istio-cni", toV),
			{Type: plan.CheckDaemonSetRolledOut, Object: mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "istio-cni-node"}, Params: map[string]string{"version": toV}, Description: "cni rolled out"},
			{Type: plan.CheckPodsRedirected, Params: map[string]string{"since": "step-start"}, Description: "new ambient pods redirected"},
			{Type: plan.CheckNoSandboxFailures, Params: map[string]string{"retryWindowSeconds": "120", "plugin": "istio-cni"}, Description: "no lasting sandbox failures"}},
		Rollback: &plan.Step{ID: "cni/upgrade/undo", Description: "roll cni back", Risk: plan.RiskMedium,
			HelmRollback: &plan.HelmRollback{Release: "istio-cni", Namespace: "istio-system", Revision: 1}}})
	add(plan.Step{ID: "cni/health", Description: "health gate after the CNI", Risk: plan.RiskNone,
		HealthGate: &plan.HealthGate{Probe: "mesh-health", Scope: "istio-cni", SettleSeconds: 60}})
	add(plan.Step{ID: "ztunnel/ztunnel/on-delete", Description: "ztunnel to OnDelete",
		HelmUpgrade: &plan.HelmRelease{Release: "ztunnel", Namespace: "istio-system", Chart: chart("ztunnel", toV), PreviousRevision: 1,
			Values: map[string]any{"revision": toRev, "updateStrategy": map[string]any{"type": "OnDelete", "rollingUpdate": nil}}},
		Postconditions: []plan.Check{helmCheck("istio-system", "ztunnel", toV),
			{Type: plan.CheckNodeAgentReady, Object: ztunnelRef(), Params: map[string]string{"version": fromV, "all": "true"}, Description: "no ztunnel restarted"}},
		Rollback: &plan.Step{ID: "ztunnel/ztunnel/on-delete/undo", Description: "roll ztunnel back", Risk: plan.RiskLow,
			HelmRollback: &plan.HelmRollback{Release: "ztunnel", Namespace: "istio-system", Revision: 1}}})
	if batch == 0 {
		for i, n := range w.Model.Nodes {
			addNodeSteps(add, n.Name, i+1)
		}
	} else {
		before := last
		for i := 0; i < len(w.Model.Nodes); i += batch {
			var nodes []string
			for _, n := range w.Model.Nodes[i:min(i+batch, len(w.Model.Nodes))] {
				nodes = append(nodes, n.Name)
			}
			before = addWaveSteps(add, before, nodes, i/batch+1)
		}
	}
	add(plan.Step{ID: "ztunnel/ztunnel/rolling-update", Description: "ztunnel back to rolling updates",
		HelmUpgrade: &plan.HelmRelease{Release: "ztunnel", Namespace: "istio-system", Chart: chart("ztunnel", toV), PreviousRevision: 2,
			Values: map[string]any{"revision": toRev}},
		Postconditions: []plan.Check{helmCheck("istio-system", "ztunnel", toV),
			{Type: plan.CheckDaemonSetRolledOut, Object: ztunnelRef(), Params: map[string]string{"version": toV}, Description: "ztunnel at 1.31.4 everywhere"}}})
	add(plan.Step{ID: "tags/prod/move", Description: "point tag prod at 1-31-4", Risk: plan.RiskHigh,
		Preconditions: []plan.Check{{Type: plan.CheckRevisionExistsAndReady, Object: mesh.ObjectRef{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-" + toRev},
			Params: map[string]string{"revision": toRev}, Description: "1-31-4 ready"}},
		MoveTag: &plan.TagMove{Tag: "prod", From: fromRev, To: toRev, Namespace: "istio-system", Objects: []map[string]any{tagMWC(toRev)}},
		Postconditions: []plan.Check{{Type: plan.CheckTagPointsTo, Object: mesh.ObjectRef{Kind: "MutatingWebhookConfiguration", Name: "istio-revision-tag-prod"},
			Params: map[string]string{"tag": "prod", "revision": toRev}, Description: "prod points at 1-31-4"}},
		Rollback: &plan.Step{ID: "tags/prod/move/undo", Description: "point prod back", Risk: plan.RiskHigh,
			MoveTag: &plan.TagMove{Tag: "prod", From: toRev, To: fromRev, Namespace: "istio-system", Objects: []map[string]any{tagMWC(fromRev)}}}})
	add(plan.Step{ID: "tags/prod/restart", Description: "restart workloads on tag prod",
		Restart:        &plan.Restart{Workloads: []mesh.ObjectRef{{Kind: "Deployment", Namespace: "legacy", Name: "billing"}}, BatchSize: 1},
		Postconditions: []plan.Check{{Type: plan.CheckDeploymentReady, Object: mesh.ObjectRef{Kind: "Deployment", Namespace: "legacy", Name: "billing"}, Description: "billing ready"}}})
	add(plan.Step{ID: "tags/prod/health", Description: "health gate after tag prod", Risk: plan.RiskNone,
		HealthGate: &plan.HealthGate{Probe: "mesh-health", Scope: "tag prod", SettleSeconds: 60}})
	add(plan.Step{ID: "namespaces/shop/waypoint", Description: "use the waypoint in shop",
		PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "Namespace", Name: "shop"}, Set: map[string]string{mesh.LabelUseWaypoint: "shop-waypoint"}}})
	add(plan.Step{ID: "base/default-revision", Description: "make 1-31-4 the default revision",
		HelmUpgrade: &plan.HelmRelease{Release: "istio-base", Namespace: "istio-system", Chart: chart("base", toV), PreviousRevision: 2,
			Values: map[string]any{"defaultRevision": toRev}},
		Postconditions: []plan.Check{{Type: plan.CheckDefaultRevision, Params: map[string]string{"revision": toRev}, Description: "default is 1-31-4"}}})
	add(plan.Step{ID: "istiod/" + fromRev + "/approve", Description: "approve removing 1-30-3", Risk: plan.RiskNone,
		Approval: &plan.Approval{Message: "remove revision 1-30-3"}})
	add(plan.Step{ID: "istiod/" + fromRev + "/backup", Description: "back up 1-30-3", Risk: plan.RiskNone,
		Backup: &plan.Backup{Objects: []plan.BackupObject{
			{HelmRelease: "istiod-" + fromRev, Object: mesh.ObjectRef{Kind: "HelmRelease", Namespace: "istio-system", Name: "istiod-" + fromRev}},
			{APIVersion: "apps/v1", Object: mesh.ObjectRef{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-" + fromRev}},
			{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "ConfigMap", Namespace: "legacy", Name: "old-config"}}}},
		Postconditions: []plan.Check{{Type: plan.CheckBackupReadable, Params: map[string]string{"revision": fromRev}, Description: "backup reads back"}}})
	add(plan.Step{ID: "istiod/" + fromRev + "/remove", Description: "remove 1-30-3", Risk: plan.RiskMedium,
		HelmUninstall: &plan.HelmUninstall{Release: "istiod-" + fromRev, Namespace: "istio-system", BackupStep: "istiod/" + fromRev + "/backup"}})
	add(plan.Step{ID: "legacy/old-config/delete", Description: "delete the old config",
		DeleteObject: &plan.DeleteObject{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "ConfigMap", Namespace: "legacy", Name: "old-config"}, BackupStep: "istiod/" + fromRev + "/backup"}})
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return p
}

// addNodeSteps adds the node-by-node ztunnel replacement of one node, as the planner shapes it.
func addNodeSteps(add func(plan.Step), n string, batch int) {
	id := "ztunnel/node/" + n + "/"
	nodeRef := mesh.ObjectRef{Kind: "Node", Name: n}
	add(plan.Step{ID: id + "cordon", Description: "cordon " + n, Cordon: &plan.NodeRef{Node: n},
		Rollback: &plan.Step{ID: id + "cordon/undo", Description: "uncordon " + n, Risk: plan.RiskLow, Uncordon: &plan.NodeRef{Node: n}}})
	add(plan.Step{ID: id + "drain", Description: "drain " + n, Risk: plan.RiskHigh,
		Drain:          &plan.NodeDrain{Node: n, TimeoutSeconds: 600, IgnoreDaemonSets: true, DeleteEmptyDirData: true},
		Postconditions: []plan.Check{{Type: plan.CheckNodeDrained, Object: nodeRef, Description: "only DaemonSet pods left"}},
		Rollback:       &plan.Step{ID: id + "drain/undo", Description: "uncordon " + n, Risk: plan.RiskLow, Uncordon: &plan.NodeRef{Node: n}}})
	add(plan.Step{ID: id + "replace", Description: "replace ztunnel on " + n, Risk: plan.RiskMedium,
		DeletePod: &plan.PodSelection{Namespace: "istio-system", Selector: map[string]string{"app": "ztunnel"}, Node: n}})
	add(plan.Step{ID: id + "wait", Description: "wait for ztunnel on " + n, Risk: plan.RiskNone,
		WaitFor: &plan.WaitFor{TimeoutSeconds: 300, Check: plan.Check{Type: plan.CheckNodeAgentReady, Object: ztunnelRef(),
			Params: map[string]string{"node": n, "version": toV}, Description: "ztunnel 1.31.4 ready on " + n}}})
	add(plan.Step{ID: id + "uncordon", Description: "uncordon " + n, Uncordon: &plan.NodeRef{Node: n},
		Postconditions: []plan.Check{{Type: plan.CheckNodeSchedulable, Object: nodeRef, Description: n + " schedulable"}}})
	add(plan.Step{ID: fmt.Sprintf("ztunnel/batch/%d/health", batch), Description: "health gate", Risk: plan.RiskNone,
		HealthGate: &plan.HealthGate{Probe: "mesh-health", Scope: "ztunnel batch", SettleSeconds: 30}})
}

// addWaveSteps adds one wave of the node-by-node ztunnel replacement: each node's steps (as
// addNodeSteps) in a unit of its own, the first depending on before, then the batch's health gate
// after every unit. It returns the gate's ID.
func addWaveSteps(add func(plan.Step), before string, nodes []string, batch int) string {
	wave := fmt.Sprintf("ztunnel/batch/%d", batch)
	var ends []string
	for _, n := range nodes {
		unit := &plan.WaveUnit{ID: wave, Node: n}
		prev := before
		addNodeSteps(func(st plan.Step) {
			if st.HealthGate != nil {
				return
			}
			st.Wave, st.DependsOn = unit, nil
			if prev != "" {
				st.DependsOn = []string{prev}
			}
			add(st)
			prev = st.ID
		}, n, batch)
		ends = append(ends, prev)
	}
	add(plan.Step{ID: wave + "/health", Description: "health gate", Risk: plan.RiskNone, DependsOn: ends,
		HealthGate: &plan.HealthGate{Probe: "mesh-health", Scope: "ztunnel batch", SettleSeconds: 30}})
	return wave + "/health"
}

// chartSnapshot keeps the world's snapshot in step with istiod installs and removals, so checks on
// a fresh snapshot see the canary.
func (w *world) chartSnapshot(ctx context.Context, op string, rel execute.Release) {
	if rel.Chart != "istiod" {
		return
	}
	rev, _ := rel.Values["revision"].(string)
	var keep []mesh.Revision
	for _, r := range w.Model.Revisions {
		if r.Name != rev {
			keep = append(keep, r)
		}
	}
	if op != "uninstall" {
		v := mesh.MustParseVersion(rel.ChartVersion)
		keep = append(keep, mesh.Revision{Name: rev, Namespace: rel.Namespace, Deployment: "istiod-" + rev, Version: v, Replicas: 2, ReadyReplicas: 2,
			UpdatedReplicas: 2, ObservedCurrent: true, Ambient: true, TrustedZtunnelAccounts: []string{"istio-system/ztunnel"}, HelmRelease: rel.Name})
	}
	w.Model.Revisions = keep
}
