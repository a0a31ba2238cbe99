package main

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// target is the cluster the demo is installed on.
type target struct {
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	ap      *kube.Applier
	timeout time.Duration
	// sync waits until the fake istiod serves every Istio webhook configuration.
	sync func(ctx context.Context) error
	// cordon lists the nodes the demo has cordoned; they are cordoned once the workloads run.
	cordon []string
}

func connect(kubeconfig string, timeout time.Duration) (*target, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	rc.QPS, rc.Burst = 200, 400
	t := &target{timeout: timeout}
	if t.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if t.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	if t.ap, err = kube.NewApplier(rc, "ambientkit-demo-mesh"); err != nil {
		return nil, err
	}
	return t, nil
}

// checkLoopback refuses a cluster whose Services are not on the loopback: the fake istiod listens on
// the istiod Service's ClusterIP, and the API server must dial nothing else.
func (t *target) checkLoopback(ctx context.Context) error {
	svc, err := t.cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Service default/kubernetes: %w", err)
	}
	if !fakeistiod.IsLoopbackHost(svc.Spec.ClusterIP) {
		return fmt.Errorf("Service default/kubernetes has ClusterIP %s, not a loopback address: start the cluster with hack/e2e-cluster.sh (service-cluster-ip-range=127.96.0.0/16)", svc.Spec.ClusterIP)
	}
	return nil
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// nodes creates the demo's nodes as kwok nodes (loopback addresses, the demo's names, labels, taints
// and kubelet version), its NodePools, and waits until kwok reports every node Ready.
func (t *target) nodes(ctx context.Context, d *demoMesh) error {
	var names []string
	for i, u := range d.ofKind("Node") {
		var dn corev1.Node
		if err := fromUnstructured(u, &dn); err != nil {
			return err
		}
		pool := dn.Labels[cluster.PoolLabel]
		n := cluster.FakeNode(pool, i, i, dn.Status.NodeInfo.KubeletVersion)
		n.Name = dn.Name
		maps.Copy(n.Labels, dn.Labels)
		n.Labels["kubernetes.io/hostname"] = dn.Name
		n.Status.Addresses = []corev1.NodeAddress{n.Status.Addresses[0], {Type: corev1.NodeHostName, Address: dn.Name}}
		if len(dn.Status.Capacity) > 0 {
			n.Status.Capacity, n.Status.Allocatable = dn.Status.Capacity, dn.Status.Capacity
			if len(dn.Status.Allocatable) > 0 {
				n.Status.Allocatable = dn.Status.Allocatable
			}
		}
		for _, taint := range dn.Spec.Taints {
			if taint.Key != corev1.TaintNodeUnschedulable {
				n.Spec.Taints = append(n.Spec.Taints, taint)
			}
		}
		if dn.Spec.Unschedulable {
			t.cordon = append(t.cordon, dn.Name)
		}
		if _, err := t.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		names = append(names, n.Name)
	}
	notReady := ""
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, t.timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := t.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !nodeReady(n) {
				notReady = name
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready after %s (e.g. %s): %w", t.timeout, notReady, err)
	}
	logf("nodes: %d Ready", len(names))

	// Karpenter's NodePool CRD, served from a schema that keeps every field (as the blue-green e2e does).
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "nodepools.karpenter.sh"},
		"spec": map[string]any{
			"group": "karpenter.sh", "scope": "Cluster",
			"names": map[string]any{"kind": "NodePool", "listKind": "NodePoolList", "plural": "nodepools", "singular": "nodepool"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}
	if err := t.ap.Apply(ctx, crd); err != nil {
		return err
	}
	if err := t.ap.WaitCRDsEstablished(ctx, []string{"nodepools.karpenter.sh"}, t.timeout); err != nil {
		return err
	}
	for _, p := range d.ofKind("NodePool") {
		if err := t.ap.Apply(ctx, clean(p)); err != nil {
			return err
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// namespaces creates the demo's namespaces with their labels.
func (t *target) namespaces(ctx context.Context, d *demoMesh) error {
	for _, ns := range d.ofKind("Namespace") {
		if err := t.ap.Apply(ctx, clean(ns)); err != nil {
			return err
		}
	}
	return nil
}

// istio installs the demo's Helm releases, each through the revisions its records name, and its
// revision tags after istiod, waiting for each workload and for the fake istiod to serve every webhook.
func (t *target) istio(ctx context.Context, h *charts.Helm, d *demoMesh) error {
	rels, err := d.helmReleases()
	if err != nil {
		return err
	}
	tags := d.tagsByRevision()
	for _, r := range rels {
		if r.chartVersion != demoVersion {
			return fmt.Errorf("demo release %s/%s records chart %s %s; this program installs %s", r.namespace, r.name, r.chart, r.chartVersion, demoVersion)
		}
		folder, ok := charts.ChartFolders[r.chart]
		if !ok {
			return fmt.Errorf("demo release %s/%s: no chart folder for chart %q", r.namespace, r.name, r.chart)
		}
		t0 := time.Now()
		for i, values := range r.steps() {
			rel := charts.Release{Name: r.name, Namespace: r.namespace, Chart: folder, Values: imageValues(r.chart, values)}
			if i == 0 {
				_, err = h.Install(ctx, rel)
			} else {
				_, err = h.Upgrade(ctx, rel)
			}
			if err != nil {
				return err
			}
		}
		revision, _ := r.history[len(r.steps())].Config["revision"].(string)
		switch r.chart {
		case "base":
			err = t.ap.WaitCRDsEstablished(ctx, charts.IstioCRDs, t.timeout)
		case "istiod":
			err = kube.WaitDeployment(ctx, t.cs, r.namespace, "istiod-"+revision, t.timeout)
		case "cni":
			err = kube.WaitDaemonSet(ctx, t.cs, r.namespace, charts.DaemonSetCNI, t.timeout)
		case "ztunnel":
			err = kube.WaitDaemonSet(ctx, t.cs, r.namespace, charts.DaemonSetZtun, t.timeout)
		case "gateway":
			err = kube.WaitDeployment(ctx, t.cs, r.namespace, r.name, t.timeout)
		}
		if err != nil {
			return fmt.Errorf("release %s/%s: %w", r.namespace, r.name, err)
		}
		if r.chart == "istiod" && len(tags[revision]) > 0 {
			ist := charts.Istio{Namespace: r.namespace, Revision: revision, Version: demoVersion, Hub: istioHub, Timeout: t.timeout}
			if err := charts.ApplyTags(ctx, h, t.ap, ist, tags[revision]); err != nil {
				return fmt.Errorf("revision tags %v: %w", tags[revision], err)
			}
			logf("istio: tags %v → %s", tags[revision], revision)
		}
		if err := t.sync(ctx); err != nil {
			return fmt.Errorf("after release %s/%s: %w", r.namespace, r.name, err)
		}
		logf("istio: %s (%s %s, Helm revision %d) done in %s", r.name, r.chart, demoVersion, len(r.steps()), time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// imageValues adds to a release's recorded values the hub and tag a release's charts default to
// (the source charts name a dev registry): global.hub/tag, and top-level hub/tag for ztunnel, whose
// chart flattens globals (as e2e/internal/charts.Istio does). The base and gateway charts render no
// image (the gateway's is "auto", filled by injection: manifests/charts/{base,gateway}/templates of
// istio.io/istio@v0.0.0-20260827124520-eed52ebb66ad), so their values stay as the demo records them.
func imageValues(chart string, recorded map[string]any) map[string]any {
	v := runtime.DeepCopyJSON(recorded)
	if v == nil {
		v = map[string]any{}
	}
	if chart == "base" || chart == "gateway" {
		return v
	}
	global, _ := v["global"].(map[string]any)
	if global == nil {
		global = map[string]any{}
	}
	if _, ok := global["hub"]; !ok {
		global["hub"] = istioHub
	}
	if _, ok := global["tag"]; !ok {
		global["tag"] = demoVersion
	}
	v["global"] = global
	if chart == "ztunnel" {
		if _, ok := v["hub"]; !ok {
			v["hub"] = istioHub
		}
		if _, ok := v["tag"]; !ok {
			v["tag"] = demoVersion
		}
	}
	return v
}

// rest applies the demo's objects no chart, controller or other step makes: GatewayClasses, Gateways,
// PodDisruptionBudgets, Istio policies and routes, the CA Secret.
func (t *target) rest(ctx context.Context, d *demoMesh) error {
	n := 0
	for _, o := range d.objs {
		switch o.GetKind() {
		case "Node", "NodePool", "CustomResourceDefinition", "Namespace", "Pod", "ReplicaSet",
			"Deployment", "StatefulSet", "Job", "CronJob":
			continue
		}
		if helmManaged(o) || o.GetLabels()["istio.io/tag"] != "" {
			continue
		}
		if typ, _, _ := unstructured.NestedString(o.Object, "type"); o.GetKind() == "Secret" && typ == "helm.sh/release.v1" {
			continue
		}
		if err := t.ap.Apply(ctx, clean(o)); err != nil {
			return err
		}
		n++
	}
	logf("objects: %d applied (classes, gateways, budgets, policies)", n)
	return nil
}
