// Package kube holds the small Kubernetes helpers the e2e suites share: decoding manifests,
// server-side apply of arbitrary objects, and readiness waits that poll the API (never Helm's wait).
package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// DecodeYAML splits a multi-document YAML stream into objects, skipping empty documents.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// ReadYAMLDir decodes every *.yaml file of dir, in file name order.
func ReadYAMLDir(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml files in %s", dir)
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := DecodeYAML(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Applier applies objects with server-side apply, like `kubectl apply --server-side`.
type Applier struct {
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
	// FieldManager names the applier in managedFields.
	FieldManager string
}

// NewApplier makes an Applier for the cluster behind rc.
func NewApplier(rc *rest.Config, fieldManager string) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	return &Applier{dyn: dyn, mapper: mapper, FieldManager: fieldManager}, nil
}

// Apply server-side-applies each object in order (forcing ownership, as a re-apply by a user would).
// A kind the API does not know yet (a CRD just created) is retried after re-reading discovery.
func (a *Applier) Apply(ctx context.Context, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := a.applyOne(ctx, o); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), nsName(o.GetNamespace(), o.GetName()), err)
		}
	}
	return nil
}

func (a *Applier) applyOne(ctx context.Context, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			a.mapper.Reset()
			lastErr = err
			return false, nil
		}
		data, err := o.MarshalJSON()
		if err != nil {
			return false, err
		}
		var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := o.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = a.dyn.Resource(m.Resource).Namespace(ns)
		}
		force := true
		_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: a.FieldManager, Force: &force})
		if err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				a.mapper.Reset()
				lastErr = err
				return false, nil
			}
			return false, err
		}
		return true, nil
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("%w (last: %v)", err, lastErr)
	}
	return err
}

// Delete deletes an object named by its apiVersion, kind, namespace and name; a missing one is not
// an error.
func (a *Applier) Delete(ctx context.Context, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// WaitCRDsEstablished waits until every named CRD reports Established.
func (a *Applier) WaitCRDsEstablished(ctx context.Context, names []string, timeout time.Duration) error {
	dyn := a.dyn
	gvr := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	pending := append([]string(nil), names...)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var still []string
		for _, n := range pending {
			u, err := dyn.Resource(gvr).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				still = append(still, n)
				continue
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := runtimeFromUnstructured(u, &crd); err != nil {
				return false, err
			}
			ok := false
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					ok = true
				}
			}
			if !ok {
				still = append(still, n)
			}
		}
		pending = still
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("CRDs not established: %s: %w", strings.Join(pending, ", "), err)
	}
	return nil
}

// DeploymentReady reports whether a Deployment's rollout is complete, and why not.
func DeploymentReady(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, "status not observed yet"
	case s.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d/%d updated", s.UpdatedReplicas, want)
	case s.ReadyReplicas < want || s.AvailableReplicas < want:
		return false, fmt.Sprintf("%d/%d ready, %d available", s.ReadyReplicas, want, s.AvailableReplicas)
	case s.Replicas > want:
		return false, fmt.Sprintf("%d old replicas still terminating", s.Replicas-want)
	}
	return true, ""
}

// DaemonSetReady reports whether a DaemonSet's rollout is complete on at least one node, and why not.
func DaemonSetReady(d *appsv1.DaemonSet) (bool, string) {
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, "status not observed yet"
	case s.DesiredNumberScheduled == 0:
		return false, "no node selected"
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d/%d updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
	case s.NumberReady < s.DesiredNumberScheduled || s.NumberAvailable < s.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d/%d ready, %d available", s.NumberReady, s.DesiredNumberScheduled, s.NumberAvailable)
	}
	return true, ""
}

// WaitDeployment polls until the Deployment is rolled out.
func WaitDeployment(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) error {
	why := "not found"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		var ok bool
		ok, why = DeploymentReady(d)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("Deployment %s/%s not ready after %s: %s", ns, name, timeout, why)
	}
	return nil
}

// WaitDaemonSet polls until the DaemonSet is rolled out.
func WaitDaemonSet(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) error {
	why := "not found"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		var ok bool
		ok, why = DaemonSetReady(d)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("DaemonSet %s/%s not ready after %s: %s", ns, name, timeout, why)
	}
	return nil
}

// WaitStatefulSet polls until every replica of the StatefulSet is ready and current.
func WaitStatefulSet(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) error {
	why := "not found"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		want := int32(1)
		if s.Spec.Replicas != nil {
			want = *s.Spec.Replicas
		}
		if s.Status.ObservedGeneration < s.Generation || s.Status.ReadyReplicas < want || s.Status.CurrentReplicas < want {
			why = fmt.Sprintf("%d/%d ready, %d current", s.Status.ReadyReplicas, want, s.Status.CurrentReplicas)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("StatefulSet %s/%s not ready after %s: %s", ns, name, timeout, why)
	}
	return nil
}
