package execute_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func withStatus(d *appsv1.Deployment, f func(*appsv1.Deployment)) *appsv1.Deployment { f(d); return d }

func dsWith(f func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := daemonSet("istio-system", "ztunnel", "docker.io/istio/ztunnel:1.31.4-distroless", false, map[string]string{"app": "ztunnel"})
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberReady: 2, NumberAvailable: 2, UpdatedNumberScheduled: 2}
	f(ds)
	return ds
}

func podWith(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }

func crd(name, group string, established bool) *apiextensionsv1.CustomResourceDefinition {
	status := apiextensionsv1.ConditionFalse
	if established {
		status = apiextensionsv1.ConditionTrue
	}
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: status}}}}
}

func sandboxEvent(name, pod string, first, last time.Duration) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}, Reason: "FailedCreatePodSandBox",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: pod},
		Message:        `failed to setup network for sandbox "x": plugin type="istio-cni" name="istio-cni" failed (add): istio-cni cmdAdd failed to contact node Istio CNI agent`,
		FirstTimestamp: metav1.NewTime(t0.Add(first)), LastTimestamp: metav1.NewTime(t0.Add(last))}
}

var (
	ztRef  = mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}
	depRef = mesh.ObjectRef{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-1-31-4"}
)

func TestChecksReadRealReadiness(t *testing.T) {
	three := []string{"n1", "n2", "n3"}
	// ready has ztunnel (OnDelete) on three nodes at 1.31.4; its updated count lags at 0, as it does
	// after pods were replaced by hand.
	ready := func() []client.Object {
		objs := []client.Object{node("n1"), node("n2"), node("n3")}
		for _, o := range nodeAgents(toV, three, true) {
			if ds, ok := o.(*appsv1.DaemonSet); ok && ds.Name == "ztunnel" {
				ds.Status.UpdatedNumberScheduled = 0
			}
			objs = append(objs, o)
		}
		return objs
	}
	healthy := meshtest.Healthy(fromV, 3)
	canary := meshtest.Healthy(fromV, 3)
	canary.Revisions = append(canary.Revisions, mesh.Revision{Name: toRev, Namespace: "istio-system", Deployment: "istiod-" + toRev,
		Version: mesh.MustParseVersion(toV), Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, ObservedCurrent: true})
	cases := []struct {
		name  string
		objs  []client.Object
		snap  *mesh.Snapshot
		rels  []execute.Release
		check plan.Check
		ok    bool
		why   string
	}{
		{name: "a Deployment with every replica updated, ready and available is ready", ok: true,
			objs: []client.Object{istiod("istio-system", toRev, toV)}, check: plan.Check{Type: plan.CheckDeploymentReady, Object: depRef}},
		{name: "a Deployment whose controller has not seen the new generation is not ready", why: "has not seen generation 3",
			objs:  []client.Object{withStatus(istiod("istio-system", toRev, toV), func(d *appsv1.Deployment) { d.Generation, d.Status.ObservedGeneration = 3, 2 })},
			check: plan.Check{Type: plan.CheckDeploymentReady, Object: depRef}},
		{name: "a Deployment with old pods still running is not ready", why: "1/2 updated, 2 ready, 2 available, 3 pods in all",
			objs: []client.Object{withStatus(istiod("istio-system", toRev, toV), func(d *appsv1.Deployment) {
				d.Status.UpdatedReplicas, d.Status.Replicas = 1, 3
			})}, check: plan.Check{Type: plan.CheckDeploymentReady, Object: depRef}},
		{name: "a Deployment scaled to zero is not ready", why: "scaled to 0",
			objs:  []client.Object{withStatus(istiod("istio-system", toRev, toV), func(d *appsv1.Deployment) { *d.Spec.Replicas = 0; d.Status = appsv1.DeploymentStatus{} })},
			check: plan.Check{Type: plan.CheckDeploymentReady, Object: depRef}},
		{name: "a missing Deployment is not ready", why: "does not exist", check: plan.Check{Type: plan.CheckDeploymentReady, Object: depRef}},

		{name: "a DaemonSet with every pod updated and available is rolled out", ok: true, objs: []client.Object{dsWith(func(*appsv1.DaemonSet) {})},
			check: plan.Check{Type: plan.CheckDaemonSetRolledOut, Object: ztRef, Params: map[string]string{"version": toV}}},
		{name: "an OnDelete DaemonSet whose counts lag is rolled out when every pod runs the version", ok: true,
			objs:  ready(),
			check: plan.Check{Type: plan.CheckDaemonSetRolledOut, Object: ztRef, Params: map[string]string{"version": toV}}},
		{name: "an OnDelete DaemonSet with an old pod left is not rolled out", why: "2/3 pods ready at 1.31.4; not yet: ztunnel-n3 on n3 (1.30.3-distroless)",
			objs: append(ready()[:len(ready())-1], podWith(dsPod(dsWith(func(*appsv1.DaemonSet) {}), "n3", 0), func(p *corev1.Pod) {
				p.Spec.Containers = []corev1.Container{{Name: "c", Image: "docker.io/istio/ztunnel:1.30.3-distroless"}}
				p.OwnerReferences[0].UID = "uid-ds-ztunnel"
			})),
			check: plan.Check{Type: plan.CheckDaemonSetRolledOut, Object: ztRef, Params: map[string]string{"version": toV}}},
		{name: "a DaemonSet whose template runs another version is not rolled out", why: "its template runs docker.io/istio/ztunnel:1.31.4-distroless, want 1.32.0",
			objs: []client.Object{dsWith(func(*appsv1.DaemonSet) {})}, check: plan.Check{Type: plan.CheckDaemonSetRolledOut, Object: ztRef, Params: map[string]string{"version": "1.32.0"}}},
		{name: "a DaemonSet scheduled on no node is not rolled out", why: "no node is scheduled",
			objs:  []client.Object{dsWith(func(ds *appsv1.DaemonSet) { ds.Status = appsv1.DaemonSetStatus{} })},
			check: plan.Check{Type: plan.CheckDaemonSetRolledOut, Object: ztRef}},

		{name: "a ready node agent at the version on the node passes", ok: true, objs: ready(),
			check: plan.Check{Type: plan.CheckNodeAgentReady, Object: ztRef, Params: map[string]string{"node": "n2", "version": toV}}},
		{name: "a node agent at another version fails and says what runs", why: "ztunnel-n2 runs 1.31.4-distroless, ready=true", objs: ready(),
			check: plan.Check{Type: plan.CheckNodeAgentReady, Object: ztRef, Params: map[string]string{"node": "n2", "version": "1.32.0"}}},
		{name: "a terminating node agent does not count", why: "terminating=true",
			objs: append(ready(), podWith(dsPod(dsWith(func(*appsv1.DaemonSet) {}), "n2", 7), func(p *corev1.Pod) {
				now := metav1.NewTime(t0)
				p.DeletionTimestamp, p.Finalizers = &now, []string{"test"}
				p.Spec.Containers[0].Image = "docker.io/istio/ztunnel:1.32.0"
			})),
			check: plan.Check{Type: plan.CheckNodeAgentReady, Object: ztRef, Params: map[string]string{"node": "n2", "version": "1.32.0"}}},
		{name: "node agents on every node pass with all=true", ok: true, objs: ready(),
			check: plan.Check{Type: plan.CheckNodeAgentReady, Object: ztRef, Params: map[string]string{"all": "true", "version": toV}}},
		{name: "a node without a node agent fails all=true and is named", why: "1 of 4 nodes have no ready DaemonSet istio-system/ztunnel pod at 1.31.4: n4",
			objs:  append(ready(), node("n4")),
			check: plan.Check{Type: plan.CheckNodeAgentReady, Object: ztRef, Params: map[string]string{"all": "true", "version": toV}}},

		{name: "a tag whose webhook carries the revision points to it", ok: true,
			objs:  []client.Object{&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "istio-revision-tag-prod", Labels: map[string]string{mesh.LabelRev: toRev}}}},
			check: plan.Check{Type: plan.CheckTagPointsTo, Params: map[string]string{"tag": "prod", "revision": toRev}}},
		{name: "a tag pointing elsewhere fails", why: "is labelled istio.io/rev=1-30-3, want 1-31-4",
			objs:  []client.Object{&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "istio-revision-tag-prod", Labels: map[string]string{mesh.LabelRev: fromRev}}}},
			check: plan.Check{Type: plan.CheckTagPointsTo, Params: map[string]string{"tag": "prod", "revision": toRev}}},
		{name: "the default revision is read from istiod-default-validator", why: "istiod-default-validator is labelled istio.io/rev=1-30-3, want 1-31-4",
			objs:  []client.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "istiod-default-validator", Labels: map[string]string{mesh.LabelRev: fromRev}}}},
			check: plan.Check{Type: plan.CheckDefaultRevision, Params: map[string]string{"revision": toRev}}},
		{name: "a failed Helm release is not at its version", why: "Helm release istio-system/ztunnel is failed",
			rels:  []execute.Release{{Name: "ztunnel", Namespace: "istio-system", Chart: "ztunnel", ChartVersion: toV, Status: "failed"}},
			check: helmCheck("istio-system", "ztunnel", toV)},
		{name: "a deployed Helm release at the chart version passes", ok: true,
			rels:  []execute.Release{{Name: "ztunnel", Namespace: "istio-system", Chart: "ztunnel", ChartVersion: toV}},
			check: helmCheck("istio-system", "ztunnel", toV)},

		{name: "a node with only DaemonSet, mirror and finished pods is drained", ok: true,
			objs: append(ready(),
				podWith(workloadPod("kube-system", "kube-proxy-n1", "n1", nil), func(p *corev1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"} }),
				podWith(workloadPod("batch", "job-1", "n1", nil), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })),
			check: plan.Check{Type: plan.CheckNodeDrained, Object: mesh.ObjectRef{Kind: "Node", Name: "n1"}}},
		{name: "a node with a workload pod is not drained", why: "1 pod besides DaemonSet pods still on node n1: shop/cart-0",
			objs:  append(ready(), workloadPod("shop", "cart-0", "n1", nil)),
			check: plan.Check{Type: plan.CheckNodeDrained, Object: mesh.ObjectRef{Kind: "Node", Name: "n1"}}},
		{name: "a cordoned node is not schedulable", why: "node n1 is cordoned",
			objs:  []client.Object{func() *corev1.Node { n := node("n1"); n.Spec.Unschedulable = true; return n }()},
			check: plan.Check{Type: plan.CheckNodeSchedulable, Object: mesh.ObjectRef{Kind: "Node", Name: "n1"}}},
		{name: "a revision is ready when its istiod Deployment is", ok: true, objs: []client.Object{istiod("istio-system", toRev, toV)},
			check: plan.Check{Type: plan.CheckRevisionExistsAndReady, Params: map[string]string{"revision": toRev}}},

		{name: "Istio CRDs all established pass", ok: true,
			objs:  []client.Object{crd("authorizationpolicies.security.istio.io", "security.istio.io", true), crd("gateways.gateway.networking.k8s.io", "gateway.networking.k8s.io", false)},
			check: plan.Check{Type: plan.CheckCRDsEstablished, Params: map[string]string{"group": "istio.io"}}},
		{name: "an Istio CRD not established fails and is named", why: "1 of 2 CRDs of *.istio.io are not Established: telemetries.telemetry.istio.io",
			objs:  []client.Object{crd("authorizationpolicies.security.istio.io", "security.istio.io", true), crd("telemetries.telemetry.istio.io", "telemetry.istio.io", false)},
			check: plan.Check{Type: plan.CheckCRDsEstablished, Params: map[string]string{"group": "istio.io"}}},
		{name: "no Istio CRD at all fails", why: "no CustomResourceDefinition of group istio.io",
			check: plan.Check{Type: plan.CheckCRDsEstablished}},

		{name: "a revision that tags still point at has references", snap: healthy, why: `tag "default" points at it`,
			check: plan.Check{Type: plan.CheckNoReferences, Params: map[string]string{"revision": fromRev}}},
		{name: "a revision nothing refers to has no references", snap: canary, ok: true,
			check: plan.Check{Type: plan.CheckNoReferences, Params: map[string]string{"revision": toRev}}},
		{name: "a revision that still runs is not gone", snap: canary, why: "istiod Deployment istio-system/istiod-1-31-4 of revision 1-31-4 still runs",
			check: plan.Check{Type: plan.CheckNoReferences, Params: map[string]string{"revision": toRev, "gone": "true"}}},
		{name: "a healthy mesh has no findings that stop an upgrade", snap: healthy, ok: true,
			check: plan.Check{Type: plan.CheckFindingsClear, Params: map[string]string{"target": toV}}},
		{name: "the CNI precondition wants a ready control plane at the target minor", snap: healthy, why: "no ready control plane at 1.31 or newer",
			check: plan.Check{Type: plan.CheckFindingsClear, Params: map[string]string{"component": "control-plane", "version": toV}}},
		{name: "the CNI precondition holds once the canary is ready", snap: canary, ok: true,
			check: plan.Check{Type: plan.CheckFindingsClear, Params: map[string]string{"component": "control-plane", "version": toV}}},
		{name: "a gateway owned by the expected revision passes", snap: healthy, ok: true,
			check: plan.Check{Type: plan.CheckGatewayOwner, Object: mesh.ObjectRef{Kind: "Gateway", Namespace: "shop", Name: "shop-waypoint"}, Params: map[string]string{"revision": fromRev}}},
		{name: "a gateway owned by another revision fails", snap: healthy, why: `owned by revision "1-30-3", want "1-31-4"`,
			check: plan.Check{Type: plan.CheckGatewayOwner, Object: mesh.ObjectRef{Kind: "Gateway", Namespace: "shop", Name: "shop-waypoint"}, Params: map[string]string{"revision": toRev}}},
		{name: "sidecars still injected by the old revision fail WorkloadsOnRevision", snap: healthy, why: "Deployment legacy/billing: 0 of 2 pods injected by 1-31-4",
			check: plan.Check{Type: plan.CheckWorkloadsOnRevision, Params: map[string]string{"tag": "prod", "revision": toRev}}},
		{name: "every running ztunnel trusted passes", snap: healthy, ok: true, check: plan.Check{Type: plan.CheckTrustedAccounts}},
		{name: "a ztunnel account the control plane does not trust fails", snap: healthy, why: "revision 1-30-3 does not trust kube-system/ztunnel",
			check: plan.Check{Type: plan.CheckTrustedAccounts, Params: map[string]string{"accounts": "kube-system/ztunnel"}}},

		{name: "ambient pods with redirection enabled pass", ok: true,
			objs: []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}}},
				podWith(workloadPod("shop", "cart-0", "n1", nil), func(p *corev1.Pod) { p.Annotations = map[string]string{mesh.AnnotationRedirection: "enabled"} }),
				workloadPod("other", "x", "n1", nil)},
			check: plan.Check{Type: plan.CheckPodsRedirected}},
		{name: "an ambient pod left pending fails and is named", why: "1 of 2 ambient pods are not redirected: shop/cart-1 (pending)",
			objs: []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}}},
				podWith(workloadPod("shop", "cart-0", "n1", nil), func(p *corev1.Pod) { p.Annotations = map[string]string{mesh.AnnotationRedirection: "enabled"} }),
				podWith(workloadPod("shop", "cart-1", "n1", nil), func(p *corev1.Pod) { p.Annotations = map[string]string{mesh.AnnotationRedirection: "pending"} }),
				podWith(workloadPod("shop", "opted-out", "n1", map[string]string{mesh.LabelDataplaneMode: "none"}), func(*corev1.Pod) {})},
			check: plan.Check{Type: plan.CheckPodsRedirected}},
		{name: "sandbox retries that stopped within the window are transient", ok: true,
			objs:  []client.Object{sandboxEvent("a", "cart-0", 0, 30*time.Second)},
			check: plan.Check{Type: plan.CheckNoSandboxFailures, Params: map[string]string{"retryWindowSeconds": "120"}}},
		{name: "a pod failing sandbox creation beyond the window fails", why: "1 pod keep failing sandbox creation through istio-cni beyond 2m0s: shop/cart-1 (failing for 4m50s)",
			objs:  []client.Object{sandboxEvent("a", "cart-0", 0, 30*time.Second), sandboxEvent("b", "cart-1", 10*time.Second, 5*time.Minute)},
			check: plan.Check{Type: plan.CheckNoSandboxFailures, Params: map[string]string{"retryWindowSeconds": "120"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.objs...)
			w.Model = tc.snap
			w.Helm = w.NewHelm(tc.rels...)
			w.Clock.Advance(5*time.Minute + 30*time.Second)
			ok, why, err := w.Executor().Check(context.Background(), tc.check)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if ok != tc.ok || (!tc.ok && !strings.Contains(why, tc.why)) {
				t.Errorf("Check = %v, %q; want %v, %q", ok, why, tc.ok, tc.why)
			}
			if cluster, _ := w.CallCount(); cluster > 4 {
				t.Errorf("%d requests for one check: %v", cluster, w.Calls())
			}
		})
	}
}
