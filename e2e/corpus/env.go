//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fakecni"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// Names every state shares.
const (
	istioNS     = "istio-system"
	hub         = "docker.io/istio"
	appImage    = "registry.k8s.io/pause:3.10"
	corpusLabel = "corpus.ambientkit.io/state"
	timeout     = 2 * time.Minute
)

// baseNodes are the nodes every state starts with (pool general); states add more.
var baseNodes = 3

// Env is the cluster and the tools a state is made with.
type Env struct {
	kubeconfig, runDir, bin string
	cs                      kubernetes.Interface
	dyn                     dynamic.Interface
	ap                      *kube.Applier
	chartsDir               string
	fake                    *fakeistiod.Server
	cni                     *fakecni.Agent
	log                     func(string, ...any)
	kubeVersion             string

	// per state: the Helm releases installed (namespace/name), extra nodes, cluster-scoped objects
	releases []releaseRef
	nodes    []string
	cleanup  []*unstructured.Unstructured
}

type releaseRef struct{ namespace, name string }

func newEnv(ctx context.Context, kubeconfig, runDir, bin string, log func(string, ...any)) (*Env, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 200, 400
	e := &Env{kubeconfig: kubeconfig, runDir: runDir, bin: bin, log: log}
	if e.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if e.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	if e.ap, err = kube.NewApplier(rc, "ambientkit-corpus"); err != nil {
		return nil, err
	}
	v, err := e.cs.Discovery().ServerVersion()
	if err != nil {
		return nil, err
	}
	e.kubeVersion = v.GitVersion
	if _, err := charts.InstallGatewayAPICRDs(ctx, e.ap, timeout); err != nil {
		return nil, err
	}
	if e.chartsDir, err = charts.IstioChartsDir(ctx); err != nil {
		return nil, err
	}
	if err := e.apply(ctx, helperCRDs, helperCRDList); err != nil {
		return nil, fmt.Errorf("helper CRDs: %w", err)
	}
	if e.fake, err = fakeistiod.Start(ctx, fakeistiod.Options{Client: e.cs, IstioNamespace: istioNS, Logf: log}); err != nil {
		return nil, err
	}
	e.cni = fakecni.New(e.cs, time.Second)
	return e, nil
}

func (e *Env) stop() {
	if e.fake != nil {
		e.fake.Stop()
	}
}

// helm returns a Helm SDK runner whose charts are stamped with version, as Istio's release build
// stamps them.
func (e *Env) helm(version string) *charts.Helm {
	return &charts.Helm{Kubeconfig: e.kubeconfig, CacheDir: filepath.Join(e.runDir, "helm-cache"), ChartsDir: e.chartsDir,
		ReleaseVersion: version, Logf: e.log}
}

// install installs a chart release and remembers it for the teardown.
func (e *Env) install(ctx context.Context, version string, r charts.Release) error {
	e.releases = append(e.releases, releaseRef{r.Namespace, r.Name})
	if _, err := e.helm(version).Install(ctx, r); err != nil {
		return err
	}
	return e.syncFake(ctx)
}

// upgrade upgrades a release in place.
func (e *Env) upgrade(ctx context.Context, version string, r charts.Release) error {
	if _, err := e.helm(version).Upgrade(ctx, r); err != nil {
		return err
	}
	return e.syncFake(ctx)
}

func (e *Env) syncFake(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return e.fake.Sync(sctx)
}

// apply renders text as a Go template with data and server-side-applies every document. Objects
// without a namespace that are namespaced land in "default"; cluster-scoped ones are remembered for
// the teardown.
func (e *Env) apply(ctx context.Context, text string, data any) error {
	var b strings.Builder
	t, err := template.New("objects").Option("missingkey=error").Parse(text)
	if err != nil {
		return err
	}
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	objs, err := kube.DecodeYAML([]byte(b.String()))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetNamespace() == "" && clusterScoped(o.GetKind()) {
			e.cleanup = append(e.cleanup, o)
		}
	}
	return e.ap.Apply(ctx, objs...)
}

func clusterScoped(kind string) bool {
	switch kind {
	case "Namespace", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ClusterRole", "ClusterRoleBinding",
		"CustomResourceDefinition", "NodePool", "Node":
		return true
	}
	return false
}

// node creates a kwok node named name with labels and a kubelet version (the server's when empty).
func (e *Env) node(ctx context.Context, name string, labels map[string]string, kubelet string, taints ...corev1.Taint) error {
	if kubelet == "" {
		kubelet = e.kubeVersion
	}
	n := cluster.FakeNode("extra", 0, 100+len(e.nodes), kubelet)
	n.Name = name
	n.Labels["kubernetes.io/hostname"] = name
	delete(n.Labels, cluster.PoolLabel)
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = taints
	if _, err := e.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	e.nodes = append(e.nodes, name)
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := e.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// baseNodeSet creates the nodes every state starts with: general-0..2 in pool general.
func (e *Env) baseNodeSet(ctx context.Context) error {
	for i := 0; i < baseNodes; i++ {
		if err := e.node(ctx, fmt.Sprintf("general-%d", i), map[string]string{cluster.PoolLabel: "general"}, ""); err != nil {
			return err
		}
	}
	return nil
}

// patchStatus merges status into an object's status subresource (what a controller would write).
func (e *Env) patchStatus(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, status map[string]any) error {
	b, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := e.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
		return err == nil, nil
	})
}

// settle waits until every pod is scheduled and Running (kwok plays them), marks ambient pods as the
// CNI agent would, and waits for every Deployment and DaemonSet to report its pods.
func (e *Env) settle(ctx context.Context, notReady map[string]bool) error {
	var why string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded && !notReady[p.Namespace+"/"+p.Name] {
				why = fmt.Sprintf("pod %s/%s is %s", p.Namespace, p.Name, p.Status.Phase)
				return false, nil
			}
		}
		if _, err := e.cni.Sync(ctx); err != nil {
			why = err.Error()
			return false, nil
		}
		deps, err := e.cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, d := range deps.Items {
			if ok, w := kube.DeploymentReady(&d); !ok {
				why = "Deployment " + d.Namespace + "/" + d.Name + ": " + w
				return false, nil
			}
		}
		dss, err := e.cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, d := range dss.Items {
			if d.Status.DesiredNumberScheduled == 0 && d.Status.ObservedGeneration >= d.Generation {
				continue // selects no node, and says so
			}
			if ok, w := kube.DaemonSetReady(&d); !ok {
				why = "DaemonSet " + d.Namespace + "/" + d.Name + ": " + w
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the cluster did not settle: %s: %w", why, err)
	}
	return nil
}

// teardown removes everything a state made: its Helm releases, its namespaces, the cluster-scoped
// objects it applied and Istio's webhook configurations, and its nodes.
func (e *Env) teardown(ctx context.Context) error {
	var errs []error
	for i := len(e.releases) - 1; i >= 0; i-- {
		r := e.releases[i]
		if err := e.helm("").Uninstall(ctx, r.name, r.namespace); err != nil {
			errs = append(errs, err)
		}
	}
	e.releases = nil
	for _, o := range e.cleanup {
		if o.GetKind() != "CustomResourceDefinition" {
			if err := e.ap.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	e.cleanup = nil
	ad := e.cs.AdmissionregistrationV1()
	if l, err := ad.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err == nil {
		for _, w := range l.Items {
			if fakeistiod.IsIstioInjector(w.Labels) {
				_ = ad.MutatingWebhookConfigurations().Delete(ctx, w.Name, metav1.DeleteOptions{})
			}
		}
	}
	if l, err := ad.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err == nil {
		for _, w := range l.Items {
			if fakeistiod.IsIstioValidator(w.Name, w.Labels) {
				_ = ad.ValidatingWebhookConfigurations().Delete(ctx, w.Name, metav1.DeleteOptions{})
			}
		}
	}
	nss, err := e.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nss.Items {
		if systemNamespace(n.Name) {
			continue
		}
		if err := e.cs.CoreV1().Namespaces().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	// Services and ConfigMaps a state made in kube-system (the primary CNI's) go too.
	for _, name := range []string{"cilium-config"} {
		_ = e.cs.CoreV1().ConfigMaps("kube-system").Delete(ctx, name, metav1.DeleteOptions{})
	}
	for _, n := range e.nodes {
		if err := e.cs.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	e.nodes = nil
	// kwok deletes pods one stage at a time; the namespaces go faster when their pods are gone.
	zero := int64(0)
	if pods, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			_ = e.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		nss, err := e.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, n := range nss.Items {
			if !systemNamespace(n.Name) {
				return false, nil
			}
		}
		pods, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("namespaces and pods did not go away: %w", err))
	}
	return errors.Join(errs...)
}

func systemNamespace(n string) bool {
	return n == "default" || n == "kube-system" || n == "kube-public" || n == "kube-node-lease"
}

// generate makes one state and writes its folder.
func (e *Env) generate(ctx context.Context, s *State, dir string) error {
	if !s.NoBaseNodes {
		if err := e.baseNodeSet(ctx); err != nil {
			return err
		}
	}
	ctx = context.WithValue(ctx, stateKey{}, s)
	if err := s.Setup(ctx, e); err != nil {
		_ = e.teardown(ctx)
		return fmt.Errorf("setup: %w", err)
	}
	if err := e.settle(ctx, s.notReady); err != nil {
		_ = e.teardown(ctx)
		return err
	}
	if s.After != nil {
		if err := s.After(ctx, e); err != nil {
			_ = e.teardown(ctx)
			return fmt.Errorf("after: %w", err)
		}
	}
	if err := e.dump(ctx, s, dir); err != nil {
		_ = e.teardown(ctx)
		return err
	}
	if err := writeState(s, dir); err != nil {
		_ = e.teardown(ctx)
		return err
	}
	return e.teardown(ctx)
}

type stateKey struct{}

// mkdirClean empties dir.
func mkdirClean(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}
