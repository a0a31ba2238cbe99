package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/ambientkit/ambientkit/e2e/internal/kube"
	"github.com/ambientkit/ambientkit/e2e/internal/kwokstages"
)

// group is the demo's pods of one controller.
type group struct {
	ns, kind, name string // the pods' controller (ReplicaSet, StatefulSet, Job)
	pods           []corev1.Pod
}

func (g *group) nodes() []string {
	var out []string
	for _, p := range g.pods {
		out = append(out, p.Spec.NodeName)
	}
	return out
}

// podGroups returns the demo's pods by controller, leaving out the pods of charts (DaemonSets, the
// Deployments of Helm releases), in file order.
func (d *demoMesh) podGroups() ([]*group, error) {
	var out []*group
	byKey := map[string]*group{}
	for _, u := range d.ofKind("Pod") {
		var p corev1.Pod
		if err := fromUnstructured(u, &p); err != nil {
			return nil, err
		}
		ref := metav1.GetControllerOf(&p)
		if ref == nil {
			return nil, fmt.Errorf("demo Pod %s/%s has no controller; this program makes only controlled pods", p.Namespace, p.Name)
		}
		if ref.Kind == "DaemonSet" {
			continue
		}
		if ref.Kind == "ReplicaSet" {
			if dep := d.find("Deployment", p.Namespace, deploymentOf(ref.Name)); dep != nil && helmManaged(dep) {
				continue
			}
		}
		key := p.Namespace + "/" + ref.Kind + "/" + ref.Name
		g := byKey[key]
		if g == nil {
			g = &group{ns: p.Namespace, kind: ref.Kind, name: ref.Name}
			byKey[key] = g
			out = append(out, g)
		}
		g.pods = append(g.pods, p)
	}
	for _, g := range out {
		sort.Slice(g.pods, func(i, j int) bool { return g.pods[i].Name < g.pods[j].Name })
	}
	return out, nil
}

// deploymentOf names the Deployment of a ReplicaSet: its name without the pod-template hash.
func deploymentOf(rs string) string {
	if i := strings.LastIndex(rs, "-"); i > 0 {
		return rs[:i]
	}
	return rs
}

// Labels and annotations the API, the controllers, injection or the CNI put on a pod; a pod template
// must not carry them.
var (
	controllerLabels = []string{"pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name",
		"apps.kubernetes.io/pod-index", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name"}
	// Added by injection (istio.io/istio manifests/charts/istio-control/istio-discovery/files/injection-template.yaml).
	injectedLabels      = []string{"security.istio.io/tlsMode", "service.istio.io/canonical-name", "service.istio.io/canonical-revision", "networking.istio.io/tunnel"}
	injectedAnnotations = []string{"sidecar.istio.io/status", "istio.io/rev", "kubectl.kubernetes.io/default-container", "kubectl.kubernetes.io/default-logs-container"}
	cniAnnotations      = []string{"ambient.istio.io/redirection"}
)

// templateOf turns a demo pod back into the template it was made from: no node, no controller or
// injection labels, no injected containers and volumes (those the sidecar.istio.io/status annotation
// names), no capture annotation.
func templateOf(p corev1.Pod) (corev1.PodTemplateSpec, error) {
	labels := map[string]string{}
	for k, v := range p.Labels {
		labels[k] = v
	}
	ann := map[string]string{}
	for k, v := range p.Annotations {
		ann[k] = v
	}
	for _, k := range controllerLabels {
		delete(labels, k)
	}
	for _, k := range cniAnnotations {
		delete(ann, k)
	}
	spec := *p.Spec.DeepCopy()
	spec.NodeName = ""
	if status := p.Annotations["sidecar.istio.io/status"]; status != "" {
		var injected struct {
			InitContainers, Containers, Volumes []string
		}
		if err := json.Unmarshal([]byte(status), &injected); err != nil {
			return corev1.PodTemplateSpec{}, fmt.Errorf("demo Pod %s/%s: annotation sidecar.istio.io/status: %w", p.Namespace, p.Name, err)
		}
		for _, k := range injectedLabels {
			delete(labels, k)
		}
		for _, k := range injectedAnnotations {
			delete(ann, k)
		}
		spec.InitContainers = slices.DeleteFunc(spec.InitContainers, func(c corev1.Container) bool { return slices.Contains(injected.InitContainers, c.Name) })
		spec.Containers = slices.DeleteFunc(spec.Containers, func(c corev1.Container) bool { return slices.Contains(injected.Containers, c.Name) })
		spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return slices.Contains(injected.Volumes, v.Name) })
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann}, Spec: spec}, nil
}

// pin makes the scheduler put the replicas on the nodes the demo runs them on: only those nodes, and
// (for several replicas) one per node.
func pin(t *corev1.PodTemplateSpec, nodes []string, selector map[string]string) {
	nodes = slices.Compact(slices.Sorted(slices.Values(nodes)))
	if t.Spec.Affinity == nil {
		t.Spec.Affinity = &corev1.Affinity{}
	}
	t.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: nodes}}}}}}
	if len(nodes) > 1 {
		t.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}}}
	}
}

// workloads creates the controllers of the demo's pods, waits until their pods run, then cordons the
// nodes the demo has cordoned.
func (t *target) workloads(ctx context.Context, d *demoMesh) error {
	groups, err := d.podGroups()
	if err != nil {
		return err
	}
	var waits []func(context.Context) error
	for _, g := range groups {
		for _, p := range g.pods {
			if err := t.serviceAccount(ctx, p.Namespace, p.Spec.ServiceAccountName); err != nil {
				return err
			}
		}
		var w func(context.Context) error
		switch g.kind {
		case "ReplicaSet":
			w, err = t.deployment(ctx, d, g)
		case "StatefulSet":
			w, err = t.statefulSet(ctx, d, g)
		case "Job":
			w, err = t.job(ctx, d, g)
		default:
			err = fmt.Errorf("demo pods of %s %s/%s: this program makes no %s", g.kind, g.ns, g.name, g.kind)
		}
		if err != nil {
			return err
		}
		waits = append(waits, w)
	}
	for _, w := range waits {
		if err := w(ctx); err != nil {
			return err
		}
	}
	logf("workloads: %d controllers running", len(groups))
	for _, n := range t.cordon {
		if err := kube.Cordon(ctx, t.cs, n, true); err != nil {
			return fmt.Errorf("cordon node %s: %w", n, err)
		}
		logf("nodes: %s cordoned, as in the demo", n)
	}
	return nil
}

func (t *target) serviceAccount(ctx context.Context, ns, name string) error {
	if name == "" || name == "default" {
		return nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := t.cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/%s: %w", ns, name, err)
	}
	return nil
}

// deployment creates the Deployment of a ReplicaSet's pods: the demo's own where it has one (the
// waypoints', owned by their Gateway), else one made from the pods.
func (t *target) deployment(ctx context.Context, d *demoMesh, g *group) (func(context.Context) error, error) {
	name := deploymentOf(g.name)
	var dep appsv1.Deployment
	if u := d.find("Deployment", g.ns, name); u != nil {
		if err := fromUnstructured(clean(u), &dep); err != nil {
			return nil, err
		}
		refs, err := t.owners(ctx, g.ns, u)
		if err != nil {
			return nil, err
		}
		dep.OwnerReferences = refs
	} else {
		tmpl, err := templateOf(g.pods[0])
		if err != nil {
			return nil, err
		}
		dep = appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.ns, Labels: tmpl.Labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(len(g.pods))),
				Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
				Template: tmpl,
			},
		}
	}
	pin(&dep.Spec.Template, g.nodes(), dep.Spec.Selector.MatchLabels)
	if _, err := t.cs.AppsV1().Deployments(g.ns).Create(ctx, &dep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Deployment %s/%s: %w", g.ns, name, err)
	}
	return func(ctx context.Context) error { return kube.WaitDeployment(ctx, t.cs, g.ns, name, t.timeout) }, nil
}

// statefulSet creates the demo's StatefulSet with its pods' template, and for each claim of its pods a
// local PersistentVolume bound to it on the pod's node, so each ordinal lands where the demo has it.
func (t *target) statefulSet(ctx context.Context, d *demoMesh, g *group) (func(context.Context) error, error) {
	u := d.find("StatefulSet", g.ns, g.name)
	if u == nil {
		return nil, fmt.Errorf("demo pods of StatefulSet %s/%s, which the demo does not have", g.ns, g.name)
	}
	var sts appsv1.StatefulSet
	if err := fromUnstructured(clean(u), &sts); err != nil {
		return nil, err
	}
	tmpl, err := templateOf(g.pods[0])
	if err != nil {
		return nil, err
	}
	claims := map[string]bool{}
	for i := range sts.Spec.VolumeClaimTemplates {
		vct := &sts.Spec.VolumeClaimTemplates[i]
		claims[vct.Name] = true
		if len(vct.Spec.AccessModes) == 0 { // trimmed from the demo; the API requires one
			vct.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		}
	}
	tmpl.Spec.Volumes = slices.DeleteFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return claims[v.Name] })
	sts.Spec.Template = tmpl
	for _, p := range g.pods {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			for _, vct := range sts.Spec.VolumeClaimTemplates {
				if v.PersistentVolumeClaim.ClaimName == vct.Name+"-"+p.Name {
					if err := t.localVolume(ctx, p.Namespace, v.PersistentVolumeClaim.ClaimName, p.Spec.NodeName, vct); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	if _, err := t.cs.AppsV1().StatefulSets(g.ns).Create(ctx, &sts, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create StatefulSet %s/%s: %w", g.ns, g.name, err)
	}
	return func(ctx context.Context) error { return kube.WaitStatefulSet(ctx, t.cs, g.ns, g.name, t.timeout) }, nil
}

// localVolume creates the claim's StorageClass (no provisioner) and a local PersistentVolume pre-bound
// to the claim on the node.
func (t *target) localVolume(ctx context.Context, ns, claim, node string, vct corev1.PersistentVolumeClaim) error {
	class := ptr.Deref(vct.Spec.StorageClassName, "")
	if class != "" {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner",
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
		if _, err := t.cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create StorageClass %s: %w", class, err)
		}
	}
	size := vct.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   vct.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/demo/" + claim}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		},
	}
	if _, err := t.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolume %s: %w", pv.Name, err)
	}
	return nil
}

// job creates the demo's Job with its pod's template, kept running (kwok never completes a pod
// annotated run-forever); a Job of a CronJob gets the CronJob first, its job template the same.
func (t *target) job(ctx context.Context, d *demoMesh, g *group) (func(context.Context) error, error) {
	u := d.find("Job", g.ns, g.name)
	if u == nil {
		return nil, fmt.Errorf("demo pods of Job %s/%s, which the demo does not have", g.ns, g.name)
	}
	var job batchv1.Job
	if err := fromUnstructured(clean(u), &job); err != nil {
		return nil, err
	}
	for _, k := range controllerLabels {
		delete(job.Labels, k)
	}
	tmpl, err := templateOf(g.pods[0])
	if err != nil {
		return nil, err
	}
	tmpl.Annotations[kwokstages.AnnotationRunForever] = "true"
	pin(&tmpl, g.nodes(), nil)
	job.Spec.Template = tmpl
	for _, ref := range u.GetOwnerReferences() {
		if ref.Kind != "CronJob" {
			continue
		}
		cu := d.find("CronJob", g.ns, ref.Name)
		if cu == nil {
			return nil, fmt.Errorf("demo Job %s/%s is owned by CronJob %s, which the demo does not have", g.ns, g.name, ref.Name)
		}
		var cj batchv1.CronJob
		if err := fromUnstructured(clean(cu), &cj); err != nil {
			return nil, err
		}
		cj.Spec.JobTemplate = batchv1.JobTemplateSpec{Spec: *job.Spec.DeepCopy()}
		if _, err := t.cs.BatchV1().CronJobs(g.ns).Create(ctx, &cj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create CronJob %s/%s: %w", g.ns, cj.Name, err)
		}
	}
	refs, err := t.owners(ctx, g.ns, u)
	if err != nil {
		return nil, err
	}
	job.OwnerReferences = refs
	if _, err := t.cs.BatchV1().Jobs(g.ns).Create(ctx, &job, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Job %s/%s: %w", g.ns, g.name, err)
	}
	pods := len(g.pods)
	return func(ctx context.Context) error { return t.waitJob(ctx, g.ns, g.name, pods) }, nil
}

func (t *target) waitJob(ctx context.Context, ns, name string, pods int) error {
	why := "not found"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, t.timeout, true, func(ctx context.Context) (bool, error) {
		j, err := t.cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ready := int(ptr.Deref(j.Status.Ready, 0))
		why = fmt.Sprintf("%d/%d pods ready", ready, pods)
		return ready >= pods, nil
	})
	if err != nil {
		return fmt.Errorf("Job %s/%s not running after %s: %s: %w", ns, name, t.timeout, why, err)
	}
	return nil
}

// owners resolves the demo object's owner references (which carry no uid) against the live objects.
func (t *target) owners(ctx context.Context, ns string, u interface {
	GetOwnerReferences() []metav1.OwnerReference
}) ([]metav1.OwnerReference, error) {
	var out []metav1.OwnerReference
	for _, ref := range u.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("owner %s %s: %w", ref.Kind, ref.Name, err)
		}
		var resource string
		switch ref.Kind {
		case "Gateway":
			resource = "gateways"
		case "CronJob":
			resource = "cronjobs"
		default:
			return nil, fmt.Errorf("owner %s %s/%s: this program resolves only Gateway and CronJob owners", ref.Kind, ns, ref.Name)
		}
		o, err := t.dyn.Resource(gv.WithResource(resource)).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("owner %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
		}
		ref.UID = o.GetUID()
		out = append(out, ref)
	}
	return out, nil
}
