package observe

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// form is how a kind reaches the builder.
type form int

const (
	// typed: the client-go Go type (Pod, Deployment, ...).
	typed form = iota
	// metadataOnly: *metav1.PartialObjectMetadata; nothing but metadata is needed.
	metadataOnly
	// untyped: *unstructured.Unstructured, for custom resources.
	untyped
)

// kind is one kind the observer reads: how Live lists it and how the builder takes it in.
type kind struct {
	// plural names the kind in messages ("pods").
	plural string
	group  string
	kind   string
	// versions are tried in order by Live (the next one when the server does not serve a version).
	// Offline, typed and metadata kinds are read only in these versions; untyped ones in any version.
	versions []string
	form     form
	// optional kinds that the server does not serve are recorded in Observation.Skipped.
	optional bool
	// newList returns an empty typed list (typed kinds only).
	newList func() client.ObjectList
	// listOpts narrow the LIST; the builder applies the same filter itself, so offline input that
	// holds more objects gives the same snapshot.
	listOpts []client.ListOption
	// maxPage caps the page size (0: no cap).
	maxPage int64
	// perRelease kinds are not listed cluster-wide: Live lists them after every other kind, only in
	// the namespaces of Istio's Helm releases and only for those releases (listHelmRecords).
	perRelease bool
	// heavy kinds hold the most objects: when kinds are read in parallel they start first, so the
	// others are read while they stream.
	heavy bool
	// add hands one object to the builder.
	add func(b *builder, o runtime.Object) error
}

func (k kind) groupKind() schema.GroupKind { return schema.GroupKind{Group: k.group, Kind: k.kind} }

// label names the kind as Observation.Skipped and Ignored do: "group/Kind", "core/Kind" for the
// core group.
func (k kind) label() string { return groupKindLabel(k.groupKind()) }

func groupKindLabel(gk schema.GroupKind) string {
	g := gk.Group
	if g == "" {
		g = "core"
	}
	return g + "/" + gk.Kind
}

// as asserts the concrete type the kind table promises; a mismatch is a bug in the table, reported
// as an error rather than a panic.
func as[T any](o runtime.Object) (T, error) {
	t, ok := o.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("observe: got %T, want %T", o, zero)
	}
	return t, nil
}

func typedAdd[T any](f func(*builder, T)) func(*builder, runtime.Object) error {
	return func(b *builder, o runtime.Object) error {
		t, err := as[T](o)
		if err != nil {
			return err
		}
		f(b, t)
		return nil
	}
}

func typedAddErr[T any](f func(*builder, T) error) func(*builder, runtime.Object) error {
	return func(b *builder, o runtime.Object) error {
		t, err := as[T](o)
		if err != nil {
			return err
		}
		return f(b, t)
	}
}

// Well-known names the selectors below and the builder's filters share.
const (
	cniConfigMapName = "istio-cni-config"
	tagServicePrefix = "istiod-revision-tag-"
	helmOwnerLabel   = "owner"
)

// kinds is every kind the observer reads, in the order Live lists them.
var kinds = []kind{
	{plural: "namespaces", kind: "Namespace", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.NamespaceList{} },
		add: typedAdd((*builder).addNamespace)},
	{plural: "nodes", kind: "Node", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.NodeList{} },
		add: typedAdd((*builder).addNode)},
	{plural: "deployments", group: "apps", kind: "Deployment", versions: []string{"v1"}, newList: func() client.ObjectList { return &appsv1.DeploymentList{} },
		add: typedAdd((*builder).addDeployment)},
	{plural: "daemonsets", group: "apps", kind: "DaemonSet", versions: []string{"v1"}, newList: func() client.ObjectList { return &appsv1.DaemonSetList{} },
		add: typedAdd((*builder).addDaemonSet)},
	// Jobs: their CronJobs, and how long their pods may run (activeDeadlineSeconds), which bounds a
	// drain that waits for them.
	{plural: "jobs", group: "batch", kind: "Job", versions: []string{"v1"}, newList: func() client.ObjectList { return &batchv1.JobList{} },
		add: typedAdd((*builder).addJob)},
	{plural: "pods", kind: "Pod", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.PodList{} },
		heavy: true, add: typedAdd((*builder).addPod)},
	// Where evicted pods can go again: the node affinity of the volumes their claims are bound to.
	{plural: "persistentvolumeclaims", kind: "PersistentVolumeClaim", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} },
		add: typedAdd((*builder).addPersistentVolumeClaim)},
	{plural: "persistentvolumes", kind: "PersistentVolume", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.PersistentVolumeList{} },
		add: typedAdd((*builder).addPersistentVolume)},
	{plural: "configmaps", kind: "ConfigMap", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.ConfigMapList{} },
		listOpts: []client.ListOption{client.MatchingFields{"metadata.name": cniConfigMapName}},
		add:      typedAdd((*builder).addConfigMap)},
	// Every Service: tag Services for the upgrade, and the Services of mesh namespaces for migration.
	{plural: "services", kind: "Service", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.ServiceList{} },
		add: typedAdd((*builder).addServiceEverywhere)},
	{plural: "mutatingwebhookconfigurations", group: "admissionregistration.k8s.io", kind: "MutatingWebhookConfiguration", versions: []string{"v1"},
		newList: func() client.ObjectList { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		add:     typedAdd((*builder).addMutatingWebhookConfiguration)},
	{plural: "validatingwebhookconfigurations", group: "admissionregistration.k8s.io", kind: "ValidatingWebhookConfiguration", versions: []string{"v1"},
		newList: func() client.ObjectList { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		add:     typedAdd((*builder).addValidatingWebhookConfiguration)},
	{plural: "poddisruptionbudgets", group: "policy", kind: "PodDisruptionBudget", versions: []string{"v1"},
		newList: func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} },
		add:     typedAdd((*builder).addPodDisruptionBudget)},
	// Helm's release records: untyped, so that nothing of a record is decoded before the builder
	// knows it belongs to one of Istio's releases.
	{plural: "secrets", kind: "Secret", versions: []string{"v1"}, form: untyped, perRelease: true,
		listOpts: []client.ListOption{client.MatchingLabels{helmOwnerLabel: "helm"}}, maxPage: secretPageSize,
		add: helmRecordAdd},
	{plural: "customresourcedefinitions", group: "apiextensions.k8s.io", kind: "CustomResourceDefinition", versions: []string{"v1"}, form: metadataOnly,
		add: typedAdd((*builder).addCRD)},
	{plural: "authorizationpolicies", group: "security.istio.io", kind: "AuthorizationPolicy", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: policyAdd("AuthorizationPolicy")},
	{plural: "peerauthentications", group: "security.istio.io", kind: "PeerAuthentication", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: policyAdd("PeerAuthentication")},
	{plural: "requestauthentications", group: "security.istio.io", kind: "RequestAuthentication", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: policyAdd("RequestAuthentication")},
	{plural: "virtualservices", group: "networking.istio.io", kind: "VirtualService", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: policyAdd("VirtualService")},
	{plural: "destinationrules", group: "networking.istio.io", kind: "DestinationRule", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: policyAdd("DestinationRule")},
	{plural: "gateways", group: "gateway.networking.k8s.io", kind: "Gateway", versions: []string{"v1"}, form: untyped, optional: true,
		add: typedAdd((*builder).addGateway)},
	// NodePools: the labels Karpenter gives the nodes of each pool (blue-green ztunnel labels green
	// capacity through them); Observation.Skipped says when Karpenter is not installed.
	{plural: "nodepools", group: "karpenter.sh", kind: "NodePool", versions: []string{"v1"}, form: untyped, optional: true,
		add: typedAdd((*builder).addNodePool)},
	// Namespace migration: the observability configuration that a move to ambient can break.
	{plural: "configmaps", kind: "ConfigMap", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.ConfigMapList{} },
		listOpts: []client.ListOption{client.HasLabels{dashboardLabel}}, maxPage: dashboardPageSize,
		add: typedAdd((*builder).addDashboardConfigMap)},
	{plural: "prometheusrules", group: "monitoring.coreos.com", kind: "PrometheusRule", versions: []string{"v1"}, form: untyped, optional: true,
		add: typedAdd((*builder).addPrometheusRule)},
	{plural: "podmonitors", group: "monitoring.coreos.com", kind: "PodMonitor", versions: []string{"v1"}, form: untyped, optional: true,
		add: untypedAdd("PodMonitor", (*builder).addMonitor)},
	{plural: "servicemonitors", group: "monitoring.coreos.com", kind: "ServiceMonitor", versions: []string{"v1"}, form: untyped, optional: true,
		add: untypedAdd("ServiceMonitor", (*builder).addMonitor)},
	{plural: "grafanadashboards", group: "grafana.integreatly.org", kind: "GrafanaDashboard", versions: []string{"v1beta1"}, form: untyped, optional: true,
		add: typedAdd((*builder).addGrafanaDashboard)},
	{plural: "analysistemplates", group: "argoproj.io", kind: "AnalysisTemplate", versions: []string{"v1alpha1"}, form: untyped, optional: true,
		add: untypedAdd("AnalysisTemplate", (*builder).addAnalysisTemplate)},
	{plural: "clusteranalysistemplates", group: "argoproj.io", kind: "ClusterAnalysisTemplate", versions: []string{"v1alpha1"}, form: untyped, optional: true,
		add: untypedAdd("ClusterAnalysisTemplate", (*builder).addAnalysisTemplate)},
	{plural: "scaledobjects", group: "keda.sh", kind: "ScaledObject", versions: []string{"v1alpha1"}, form: untyped, optional: true,
		add: typedAdd((*builder).addScaledObject)},
	{plural: "metrictemplates", group: "flagger.app", kind: "MetricTemplate", versions: []string{"v1beta1"}, form: untyped, optional: true,
		add: typedAdd((*builder).addMetricTemplate)},
	// The network a mesh runs in (network.go): what ambient changes about NetworkPolicies, the
	// primary CNI, Gateway API routes and Istio configuration that sidecars applied.
	{plural: "networkpolicies", group: "networking.k8s.io", kind: "NetworkPolicy", versions: []string{"v1"},
		newList: func() client.ObjectList { return &networkingv1.NetworkPolicyList{} },
		add:     typedAdd((*builder).addNetworkPolicy)},
	{plural: "configmaps", kind: "ConfigMap", versions: []string{"v1"}, newList: func() client.ObjectList { return &corev1.ConfigMapList{} },
		listOpts: []client.ListOption{client.MatchingFields{"metadata.name": ciliumConfigMapName}},
		add:      typedAdd((*builder).addPrimaryCNIConfigMap)},
	{plural: "httproutes", group: "gateway.networking.k8s.io", kind: "HTTPRoute", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: untypedAdd("HTTPRoute", (*builder).addRoute)},
	{plural: "grpcroutes", group: "gateway.networking.k8s.io", kind: "GRPCRoute", versions: []string{"v1", "v1alpha2"}, form: untyped, optional: true,
		add: untypedAdd("GRPCRoute", (*builder).addRoute)},
	{plural: "sidecars", group: "networking.istio.io", kind: "Sidecar", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: typedAdd(istioConfigAdd("Sidecar"))},
	{plural: "serviceentries", group: "networking.istio.io", kind: "ServiceEntry", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: typedAdd(istioConfigAdd("ServiceEntry"))},
	{plural: "workloadentries", group: "networking.istio.io", kind: "WorkloadEntry", versions: []string{"v1", "v1beta1"}, form: untyped, optional: true,
		add: typedAdd(istioConfigAdd("WorkloadEntry"))},
	{plural: "wasmplugins", group: "extensions.istio.io", kind: "WasmPlugin", versions: []string{"v1alpha1"}, form: untyped, optional: true,
		add: typedAdd(istioConfigAdd("WasmPlugin"))},
}

// Every other kind of mesh.ConfigGroups the code knows joins the table as configuration: the plans
// give each object a verdict, so observation reads them all (EnvoyFilter, ProxyConfig, Telemetry,
// Istio's Gateway, WorkloadGroup, the other Gateway API kinds).
func init() {
	for _, ck := range mesh.ConfigKinds {
		if kindFor(schema.GroupVersionKind{Group: ck.Group, Kind: ck.Kind, Version: ck.Versions[0]}) != nil {
			continue
		}
		kinds = append(kinds, kind{plural: ck.Plural, group: ck.Group, kind: ck.Kind, versions: ck.Versions, form: untyped, optional: true,
			add: typedAdd(istioConfigAdd(ck.Kind))})
	}
}

// configKind is the table entry for an object of mesh.ConfigGroups whose kind the code does not
// know (a CRD newer than it): read generically, as configuration the plans name as not assessed.
func configKind(gvk schema.GroupVersionKind) *kind {
	return &kind{plural: strings.ToLower(gvk.Kind), group: gvk.Group, kind: gvk.Kind, versions: []string{gvk.Version}, form: untyped, optional: true,
		add: typedAdd(istioConfigAdd(gvk.Kind))}
}

// untypedAdd hands a custom resource to a builder function that reads several kinds.
func untypedAdd(kind string, f func(*builder, string, *unstructured.Unstructured)) func(*builder, runtime.Object) error {
	return typedAdd(func(b *builder, u *unstructured.Unstructured) { f(b, kind, u) })
}

// kindFor finds the kind table entry for an offline object, or nil when the observer does not read it.
// A kind listed by several entries (ConfigMaps: the CNI's and dashboards) gets one entry whose add
// hands the object to each of them in table order, as Live's separate lists would.
func kindFor(gvk schema.GroupVersionKind) *kind {
	var found []*kind
	for i := range kinds {
		k := &kinds[i]
		if k.group != gvk.Group || k.kind != gvk.Kind || (len(found) > 0 && k.form != found[0].form) {
			continue
		}
		if k.form == untyped || containsString(k.versions, gvk.Version) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return nil
	case 1:
		return found[0]
	}
	all := *found[0]
	all.add = func(b *builder, o runtime.Object) error {
		for _, k := range found {
			if err := k.add(b, o); err != nil {
				return err
			}
		}
		return nil
	}
	return &all
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// helmRecordAdd hands a Secret to the builder, which keeps it only if Helm owns it.
func helmRecordAdd(b *builder, o runtime.Object) error {
	u, err := as[*unstructured.Unstructured](o)
	if err != nil {
		return err
	}
	b.addHelmRecord(u, "")
	return nil
}

// policyAdd hands an Istio policy of the given kind to the builder. The kind comes from the table
// because list items do not always carry their own apiVersion/kind.
func policyAdd(kind string) func(*builder, runtime.Object) error {
	return typedAdd(func(b *builder, u *unstructured.Unstructured) { b.addPolicy(kind, u) })
}
