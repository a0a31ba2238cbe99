package executetest

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/internal/helmrecord"
)

// chart plays what an Istio chart change does to the cluster, keeps the release in Helm's storage,
// then calls OnChart.
func (w *World) chart(ctx context.Context, op string, rel execute.Release) error {
	if err := w.store(ctx, op, rel); err != nil {
		return err
	}
	switch rel.Chart {
	case "base":
		w.chartBase(ctx, rel)
	case "istiod":
		w.chartIstiod(ctx, op, rel)
	case "cni":
		w.chartNodeAgent(ctx, op, rel, "istio-cni-node", "docker.io/istio/install-cni:")
	case "ztunnel":
		name := "ztunnel"
		if rn, _ := rel.Values["resourceName"].(string); rn != "" {
			name = rn // the chart names the DaemonSet and its account so (templates/_helpers.tpl)
		}
		w.chartNodeAgent(ctx, op, rel, name, "docker.io/istio/ztunnel:")
	case "gateway":
		w.chartGateway(ctx, op, rel)
	}
	if rel.Chart == "istiod" || rel.Chart == "base" { // a new istiod version, or tags it renders
		w.reconcileWaypoints(ctx)
	}
	if w.OnChart != nil {
		w.OnChart(ctx, op, rel)
	}
	return nil
}

func releaseAnnotations(rel execute.Release) map[string]string {
	return map[string]string{"meta.helm.sh/release-name": rel.Name, "meta.helm.sh/release-namespace": rel.Namespace}
}

func (w *World) chartBase(ctx context.Context, rel execute.Release) {
	rev, ok := rel.Values["defaultRevision"].(string)
	if !ok {
		return
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := w.Base.Get(ctx, client.ObjectKey{Name: "istiod-default-validator"}, &vwc); err != nil {
		return
	}
	if vwc.Labels == nil {
		vwc.Labels = map[string]string{}
	}
	vwc.Labels[mesh.LabelRev] = rev
	_ = w.Base.Update(ctx, &vwc)
}

// chartIstiod installs, upgrades or removes an istiod revision: its Deployment (ready) and its own
// injector MutatingWebhookConfiguration.
func (w *World) chartIstiod(ctx context.Context, op string, rel execute.Release) {
	rev, _ := rel.Values["revision"].(string)
	name, injector, revLabel := "istiod", "istio-sidecar-injector", "default"
	if rev != "" {
		name, injector, revLabel = "istiod-"+rev, "istio-sidecar-injector-"+rev, rev
	}
	if rel.Namespace != "istio-system" {
		injector += "-" + rel.Namespace
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: rel.Namespace, Name: name}}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: injector}}
	if op == "uninstall" {
		_ = w.Base.Delete(ctx, d)
		_ = w.Base.Delete(ctx, mwc)
		w.collect(ctx, "Deployment", rel.Namespace, name)
		return
	}
	replicas := int32(1)
	if n, ok := rel.Values["replicaCount"].(float64); ok && n > 0 {
		replicas = int32(n)
	}
	trust := rel.Namespace + "/ztunnel"
	if env, ok := rel.Values["env"].(map[string]any); ok {
		if t, ok := env["CA_TRUSTED_NODE_ACCOUNTS"].(string); ok {
			trust = t
		}
	}
	labels := map[string]string{"app": "istiod", mesh.LabelRev: revLabel, "istio": "istiod"}
	exists := w.Base.Get(ctx, client.ObjectKeyFromObject(d), d) == nil
	d.Labels, d.Annotations = labels, releaseAnnotations(rel)
	d.Spec = appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "istiod", mesh.LabelRev: revLabel}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: "docker.io/istio/pilot:" + rel.ChartVersion + "-distroless",
				Env: []corev1.EnvVar{{Name: "PILOT_ENABLE_AMBIENT", Value: "true"}, {Name: "CA_TRUSTED_NODE_ACCOUNTS", Value: trust}, {Name: "REVISION", Value: revLabel}}}}}}}
	d.Status = appsv1.DeploymentStatus{Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas, ObservedGeneration: d.Generation}
	if exists {
		_ = w.Base.Update(ctx, d)
		d.Status.ObservedGeneration = d.Generation
		_ = w.Base.Status().Update(ctx, d)
	} else if err := w.Base.Create(ctx, d); err != nil {
		w.t.Errorf("executetest: create istiod %s: %v", name, err)
	}
	if w.Base.Get(ctx, client.ObjectKeyFromObject(mwc), mwc) == nil {
		return
	}
	mwc.Labels = map[string]string{mesh.LabelRev: revLabel, "app": "sidecar-injector"}
	mwc.Annotations = releaseAnnotations(rel)
	sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: mesh.LabelRev, Operator: metav1.LabelSelectorOpIn, Values: []string{revLabel}}}}
	mwc.Webhooks = []admissionregistrationv1.MutatingWebhook{{Name: "rev.namespace.sidecar-injector.istio.io", NamespaceSelector: sel,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: rel.Namespace, Name: name, Path: ptr.To("/inject")}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"}}}
	if err := w.Base.Create(ctx, mwc); err != nil {
		w.t.Errorf("executetest: create injector %s: %v", injector, err)
	}
}

// chartNodeAgent plays a CNI or ztunnel release: install creates the DaemonSet (with a pod on every
// node it places one on), uninstall removes it and its pods, and an upgrade moves it to the chart's
// image: under OnDelete only the template changes; otherwise the controller rolls every pod. The
// values' nodeSelector and affinity, when given, become the template's, and the controller then
// adds and removes pods as nodes match or stop matching, whatever the update strategy.
func (w *World) chartNodeAgent(ctx context.Context, op string, rel execute.Release, name, image string) {
	image += rel.ChartVersion + "-distroless"
	var ds appsv1.DaemonSet
	key := client.ObjectKey{Namespace: rel.Namespace, Name: name}
	exists := w.Base.Get(ctx, key, &ds) == nil
	switch {
	case op == "uninstall":
		if exists {
			_ = w.Base.Delete(ctx, &ds)
			w.collect(ctx, "DaemonSet", rel.Namespace, name)
		}
		return
	case !exists && op == "install":
		ds = newNodeAgent(rel, name, image)
		if err := w.Base.Create(ctx, &ds); err != nil {
			w.t.Errorf("executetest: create DaemonSet %s/%s: %v", rel.Namespace, name, err)
			return
		}
		w.reconcileDS(ctx, rel.Namespace, name)
		return
	case !exists:
		return
	}
	onDelete := false
	if us, ok := rel.Values["updateStrategy"].(map[string]any); ok && us["type"] == "OnDelete" {
		onDelete = true
	}
	ds.Spec.Template.Spec.Containers[0].Image = image
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}
	if onDelete {
		ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	}
	placement(&ds.Spec.Template.Spec, rel.Values)
	if rev, ok := rel.Values["revision"].(string); ok && rev != "" {
		if ds.Annotations == nil {
			ds.Annotations = map[string]string{}
		}
		ds.Annotations[mesh.LabelRev] = rev
	}
	if err := w.Base.Update(ctx, &ds); err != nil {
		w.t.Errorf("executetest: update DaemonSet %s: %v", name, err)
		return
	}
	if !onDelete {
		var pods corev1.PodList
		_ = w.Base.List(ctx, &pods, client.InNamespace(rel.Namespace))
		for i := range pods.Items {
			p := &pods.Items[i]
			if c := metav1.GetControllerOf(p); c != nil && c.Name == name && p.Spec.Containers[0].Image != image {
				_ = w.Base.Delete(ctx, p)
				w.podGone(ctx, p)
			}
		}
	}
	w.reconcileDS(ctx, rel.Namespace, name)
}

// newNodeAgent is the DaemonSet a CNI or ztunnel chart renders for the release: selector app=name's
// chart app, the chart's linux node selector, the values' placement, a service account named like it.
func newNodeAgent(rel execute.Release, name, image string) appsv1.DaemonSet {
	app := "ztunnel" // the ztunnel chart always selects app: ztunnel (templates/daemonset.yaml)
	if rel.Chart == "cni" {
		app = "istio-cni-node"
	}
	labels := map[string]string{"app": app}
	ds := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: rel.Namespace, Name: name, Labels: copyLabels(labels), Annotations: releaseAnnotations(rel)},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: copyLabels(labels)},
				Spec: corev1.PodSpec{ServiceAccountName: name, NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Containers: []corev1.Container{{Name: app, Image: image}}}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}}}
	if us, ok := rel.Values["updateStrategy"].(map[string]any); ok && us["type"] == "OnDelete" {
		ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	}
	if rev, ok := rel.Values["revision"].(string); ok && rev != "" {
		ds.Annotations[mesh.LabelRev] = rev
		ds.Spec.Template.Labels[mesh.LabelRev] = rev
	}
	placement(&ds.Spec.Template.Spec, rel.Values)
	return ds
}

// placement sets the pod spec's node selector (the chart's kubernetes.io/os: linux plus the
// values') and affinity from the values that name them.
func placement(spec *corev1.PodSpec, values map[string]any) {
	if sel, ok := values["nodeSelector"].(map[string]any); ok {
		spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
		for k, v := range sel {
			if s, ok := v.(string); ok {
				spec.NodeSelector[k] = s
			}
		}
	}
	if a, ok := values["affinity"]; ok {
		spec.Affinity = nil
		if b, err := json.Marshal(a); err == nil {
			var aff corev1.Affinity
			if json.Unmarshal(b, &aff) == nil {
				spec.Affinity = &aff
			}
		}
	}
}

// chartGateway restarts the gateway Deployments of the release: their pods are injected again.
func (w *World) chartGateway(ctx context.Context, op string, rel execute.Release) {
	if op == "uninstall" {
		return
	}
	var deps appsv1.DeploymentList
	_ = w.Base.List(ctx, &deps, client.InNamespace(rel.Namespace))
	for _, d := range deps.Items {
		if d.Annotations["meta.helm.sh/release-name"] == rel.Name || d.Labels["app.kubernetes.io/instance"] == rel.Name {
			w.rollWorkload(ctx, "Deployment", d.Namespace, d.Name)
		}
	}
}

// ---- Helm's release storage ----

// storedRelease is the part of Helm's release record the world writes and reads.
type storedRelease = helmrecord.Record

func storageName(name string, rev int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, rev)
}

// store writes the release as Helm's storage driver does: a Secret per revision, labelled owner=helm,
// name, status and version, holding base64 of gzipped JSON; older revisions are marked superseded;
// an uninstall removes them all.
func (w *World) store(ctx context.Context, op string, rel execute.Release) error {
	var secs corev1.SecretList
	if err := w.Base.List(ctx, &secs, client.InNamespace(rel.Namespace), client.MatchingLabels{"owner": "helm", "name": rel.Name}); err != nil {
		return err
	}
	for i := range secs.Items {
		s := &secs.Items[i]
		if op == "uninstall" {
			_ = w.Base.Delete(ctx, s)
			continue
		}
		if s.Labels["status"] == "deployed" {
			s.Labels["status"] = "superseded"
			_ = w.Base.Update(ctx, s)
		}
	}
	if op == "uninstall" {
		return nil
	}
	var r storedRelease
	r.Name, r.Namespace, r.Version, r.Info.Status = rel.Name, rel.Namespace, rel.Revision, rel.Status
	r.Chart.Metadata.Name, r.Chart.Metadata.Version, r.Chart.Metadata.AppVersion = rel.Chart, rel.ChartVersion, rel.AppVersion
	r.Config = rel.Values
	data, err := helmrecord.Encode(&r, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rel.Namespace, Name: storageName(rel.Name, rel.Revision),
		Labels: map[string]string{"owner": "helm", "name": rel.Name, "status": rel.Status, "version": strconv.Itoa(rel.Revision)}},
		Type: "helm.sh/release.v1", Data: map[string][]byte{"release": data}}
	if err := w.Base.Create(ctx, sec); err != nil {
		var cur corev1.Secret
		if w.Base.Get(ctx, client.ObjectKeyFromObject(sec), &cur) != nil {
			return err
		}
		cur.Labels, cur.Data = sec.Labels, sec.Data
		return w.Base.Update(ctx, &cur)
	}
	return nil
}

// storedReleases reads the newest revision of every release in Helm's storage Secrets.
func storedReleases(ctx context.Context, c client.Client) ([]execute.Release, error) {
	var secs corev1.SecretList
	if err := c.List(ctx, &secs, client.MatchingLabels{"owner": "helm"}); err != nil {
		return nil, err
	}
	newest := map[string]execute.Release{}
	for _, s := range secs.Items {
		r, err := decodeStored(s.Data["release"])
		if err != nil {
			return nil, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		k := s.Namespace + "/" + r.Name
		if old, ok := newest[k]; ok && old.Revision >= r.Version {
			continue
		}
		status := r.Info.Status
		if status == "" {
			status = s.Labels["status"]
		}
		newest[k] = execute.Release{Name: r.Name, Namespace: s.Namespace, Chart: r.Chart.Metadata.Name, ChartVersion: r.Chart.Metadata.Version,
			AppVersion: r.Chart.Metadata.AppVersion, Revision: r.Version, Status: status, Values: r.Config}
	}
	var out []execute.Release
	for _, k := range sortedKeys(newest) {
		out = append(out, newest[k])
	}
	return out, nil
}

func decodeStored(data []byte) (*storedRelease, error) { return helmrecord.Decode(data) }
