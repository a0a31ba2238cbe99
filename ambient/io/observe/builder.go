package observe

import (
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/io/internal/affinity"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Labels, annotations and names the builder reads (istio-facts §1–§2).
const (
	labelRev             = mesh.LabelRev
	labelTag             = mesh.LabelTag
	labelApp             = "app"
	labelK8sApp          = "k8s-app"
	labelInstance        = "app.kubernetes.io/instance"
	labelManagedBy       = "app.kubernetes.io/managed-by"
	labelGatewayName     = "gateway.networking.k8s.io/gateway-name"
	labelGatewayManaged  = "gateway.istio.io/managed"
	annotationRelease    = "meta.helm.sh/release-name"
	annotationTemplates  = "inject.istio.io/templates"
	cniDaemonSetName     = "istio-cni-node"
	defaultValidatorName = "istiod-default-validator"
	injectorSuffix       = "sidecar-injector.istio.io"
	labelNamespaceName   = "kubernetes.io/metadata.name"
	waypointClass        = "istio-waypoint"
	containerDiscovery   = "discovery"
	containerProxy       = "istio-proxy"
	containerInstallCNI  = "install-cni"
	envAmbient           = "PILOT_ENABLE_AMBIENT"
	envTrustedAccounts   = "CA_TRUSTED_NODE_ACCOUNTS"
	envXDSAddress        = "XDS_ADDRESS"
	envCAAddress         = "CA_ADDRESS"
	gatewayAPIGroup      = "gateway.networking.k8s.io"
	annotationBundle     = "gateway.networking.k8s.io/bundle-version"
	annotationChannel    = "gateway.networking.k8s.io/channel"
	defaultGracePeriod   = int64(30)
	defaultRevisionName  = "default"
	defaultSAName        = "default"
	updateRollingUpdate  = "RollingUpdate"
)

// builder collects what the snapshot needs from each object as it arrives, in any order, and
// assembles the snapshot in finish. It never keeps whole objects: pods in particular are folded into
// per-workload and per-namespace counters as they are added.
type builder struct {
	namespaces map[string]map[string]string // name → mesh labels; present once seen
	nodes      []mesh.Node
	nodePools  []mesh.NodePool
	kubelets   []string
	// kubectlVersion is the server version of kubectl version output (offline), read at
	// kubectlVersionAt ("" when there was none).
	kubectlVersion   mesh.Version
	kubectlVersionAt string

	revisions   []mesh.Revision
	gwDeploys   []mesh.Gateway
	apiGateways []mesh.Gateway
	cnis        []mesh.CNI
	ztunnels    []mesh.Ztunnel
	cniConfig   map[string]map[string]string // namespace → ambient keys of istio-cni-config

	tagWebhooks     []mesh.Tag
	tagServices     []mesh.Tag
	injectors       []mesh.Injector
	defaultRevision string

	pdbs     []mesh.PodDisruptionBudget
	policies []mesh.Policy
	crds     []mesh.CRD
	// customKinds are the CRDs (name → group) whose objects were seen, for CRDs missing from the input.
	customKinds map[string]string
	// complete is set when the input says which kinds it read (a live observation, a dump folder
	// that DumpCommands wrote): a CRD of mesh.ConfigGroups whose resource is not in read is then
	// unread (Observation.Unread), not empty. Other offline input is taken as complete.
	complete bool
	read     map[string]bool

	// releases are the Helm releases Istio's objects belong to; helmRecords are the Secrets labelled
	// owner=helm, read in finishHelm only when they are records of one of those releases.
	releases    map[releaseKey]*releaseRef
	helmRecords []helmRecord

	cronJobOf map[string]string // namespace/job → CronJob name
	// jobDeadline is each Job's spec.activeDeadlineSeconds (0: none), by namespace/name.
	jobDeadline map[string]int64
	workloads   map[workloadKey]*workloadAgg
	// claims and volumes are the PersistentVolumeClaims (namespace/name) and PersistentVolumes
	// (name) read, for where pods' volumes pin them; nodeRequested sums the requests of each
	// node's pods.
	claims        map[string]claimRef
	volumes       map[string]volumeRef
	nodeRequested map[string]mesh.Resources
	podNS         map[string]*namespaceAgg
	nodePods      map[string][]mesh.NodePod // namespace/daemonset → pods

	mig migrationParts // Services and telemetry for namespace migration (migration.go)
	net networkParts   // NetworkPolicies, routes, Istio config and more fields of read kinds (network.go)
}

func newBuilder() *builder {
	return &builder{
		namespaces:    map[string]map[string]string{},
		cniConfig:     map[string]map[string]string{},
		customKinds:   map[string]string{},
		read:          map[string]bool{},
		releases:      map[releaseKey]*releaseRef{},
		cronJobOf:     map[string]string{},
		jobDeadline:   map[string]int64{},
		workloads:     map[workloadKey]*workloadAgg{},
		claims:        map[string]claimRef{},
		volumes:       map[string]volumeRef{},
		nodeRequested: map[string]mesh.Resources{},
		podNS:         map[string]*namespaceAgg{},
		nodePods:      map[string][]mesh.NodePod{},
		net:           newNetworkParts(),
	}
}

// ---- small helpers ------------------------------------------------------------------------------

// copyMap copies m, returning nil for an empty map so that nil and {} compare equal everywhere.
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// imageName is the repository's last path element: "docker.io/istio/pilot:1.30.3" → "pilot".
func imageName(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, "/"); i >= 0 {
		image = image[i+1:]
	}
	if i := strings.Index(image, ":"); i >= 0 {
		image = image[:i]
	}
	return image
}

// versionOf reads an Istio version from an image; tags that name no release give the zero Version.
func versionOf(image string) mesh.Version {
	v, err := mesh.VersionFromImageTag(image)
	if err != nil {
		return mesh.Version{}
	}
	return v
}

// pickContainer returns the first container named name, else the first whose image is called
// image, else the first container; nil when there are none.
func pickContainer(cs []corev1.Container, name, image string) *corev1.Container {
	for i := range cs {
		if name != "" && cs[i].Name == name {
			return &cs[i]
		}
	}
	for i := range cs {
		if image != "" && imageName(cs[i].Image) == image {
			return &cs[i]
		}
	}
	if len(cs) > 0 {
		return &cs[0]
	}
	return nil
}

// knownEnv is a container variable's value when it is set and known (see env), else "".
func knownEnv(c *corev1.Container, name string) string {
	if v, found := env(c, name); found && v.known {
		return v.value
	}
	return ""
}

// helmReleaseOf names the Helm release that installed an object: Helm's own annotation, else the
// standard app.kubernetes.io/instance label the Istio charts write.
func helmReleaseOf(o metav1.Object) string {
	if r := o.GetAnnotations()[annotationRelease]; r != "" {
		return r
	}
	return o.GetLabels()[labelInstance]
}

// firstValue reads a key from the first map (labels or annotations) that has it.
func firstValue(key string, maps ...map[string]string) string {
	for _, m := range maps {
		if v := m[key]; v != "" {
			return v
		}
	}
	return ""
}

func intOrString(v *intstr.IntOrString) string {
	if v == nil {
		return ""
	}
	return v.String()
}

func gracePeriod(p *int64) int64 {
	if p == nil {
		return defaultGracePeriod
	}
	return *p
}

func anyImageNamed(spec corev1.PodSpec, name string) bool {
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range cs {
			if imageName(c.Image) == name {
				return true
			}
		}
	}
	return false
}

// ---- namespaces and nodes -----------------------------------------------------------------------

func (b *builder) addNamespace(n *corev1.Namespace) {
	labels := map[string]string{}
	for _, k := range mesh.NamespaceLabels {
		if v, ok := n.Labels[k]; ok {
			labels[k] = v
		}
	}
	b.namespaces[n.Name] = copyMap(labels)
}

func (b *builder) addNode(n *corev1.Node) {
	node := mesh.Node{
		Name:           n.Name,
		Labels:         copyMap(n.Labels),
		Unschedulable:  n.Spec.Unschedulable,
		KubeletVersion: n.Status.NodeInfo.KubeletVersion,
		Allocatable:    resources(n.Status.Allocatable),
		Capacity:       resources(n.Status.Capacity),
	}
	for _, l := range mesh.PoolLabels {
		if v := n.Labels[l]; v != "" {
			node.Pool, node.PoolLabel = v, l
			break
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			node.Ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, t := range n.Spec.Taints {
		node.Taints = append(node.Taints, mesh.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	b.nodes = append(b.nodes, node)
	if node.KubeletVersion != "" {
		b.kubelets = append(b.kubelets, node.KubeletVersion)
	}
}

// ---- Deployments: istiod and gateway-chart gateways ---------------------------------------------

func (b *builder) addDeployment(d *appsv1.Deployment) {
	tpl := d.Spec.Template
	if isIstiod(tpl) {
		b.addIstiod(d)
		b.noteRelease(d, "istiod")
		return
	}
	if isGatewayChart(tpl) && !generatedForGateway(d) {
		b.noteRelease(d, "gateway")
		b.gwDeploys = append(b.gwDeploys, mesh.Gateway{
			Kind:          mesh.GatewayKindDeployment,
			Namespace:     d.Namespace,
			Name:          d.Name,
			RevisionLabel: firstValue(labelRev, tpl.Labels, d.Labels),
			ManagedBy:     d.Labels[labelManagedBy],
			HelmRelease:   helmReleaseOf(d),
		})
	}
}

// isIstiod: pod label app=istiod, or a container named discovery running the pilot image.
func isIstiod(tpl corev1.PodTemplateSpec) bool {
	if tpl.Labels[labelApp] == "istiod" {
		return true
	}
	for _, c := range tpl.Spec.Containers {
		if c.Name == containerDiscovery && imageName(c.Image) == "pilot" {
			return true
		}
	}
	return false
}

// generatedForGateway reports whether istiod's gateway controller made the Deployment for a Gateway
// API object; such Deployments also request the gateway injection template, but the Gateway itself
// is what the snapshot lists.
func generatedForGateway(d *appsv1.Deployment) bool {
	for _, o := range d.OwnerReferences {
		if o.Kind == "Gateway" {
			return true
		}
	}
	return d.Labels[labelGatewayManaged] != "" || d.Spec.Template.Labels[labelGatewayName] != ""
}

// isGatewayChart: the gateway chart's pod template asks for the gateway injection template, or
// asks for injection with the placeholder image "auto".
func isGatewayChart(tpl corev1.PodTemplateSpec) bool {
	if tpl.Annotations[annotationTemplates] == "gateway" {
		return true
	}
	if tpl.Labels[mesh.LabelSidecarInject] != "true" {
		return false
	}
	for _, c := range tpl.Spec.Containers {
		if c.Image == "auto" {
			return true
		}
	}
	return false
}

func (b *builder) addIstiod(d *appsv1.Deployment) {
	tpl := d.Spec.Template
	c := pickContainer(tpl.Spec.Containers, containerDiscovery, "pilot")
	r := mesh.Revision{
		Name:            firstValue(labelRev, tpl.Labels, d.Labels),
		Namespace:       d.Namespace,
		Deployment:      d.Name,
		Replicas:        1,
		ReadyReplicas:   d.Status.ReadyReplicas,
		UpdatedReplicas: d.Status.UpdatedReplicas,
		ObservedCurrent: d.Status.ObservedGeneration >= d.Generation,
		HelmRelease:     helmReleaseOf(d),
	}
	if r.Name == "" {
		r.Name = defaultRevisionName
	}
	if d.Spec.Replicas != nil {
		r.Replicas = *d.Spec.Replicas
	}
	if c != nil {
		r.Image = c.Image
		r.Version = versionOf(c.Image)
	}
	if knownEnv(c, envAmbient) == "true" {
		r.Ambient = true
	}
	// The kubelet decides what istiod sees (last entry of a name wins, valueFrom unreadable here);
	// istiod decides how it parses it (parseTrustedAccounts). An unknown list is never guessed.
	if v, found := env(c, envTrustedAccounts); found {
		if v.known {
			r.TrustedZtunnelAccounts = parseTrustedAccounts(v.value)
		} else {
			r.TrustedAccountsUnknown = true
		}
	}
	for _, name := range mesh.IstiodSettings {
		v, found := env(c, name)
		switch {
		case !found:
		case v.known:
			if r.Settings == nil {
				r.Settings = map[string]string{}
			}
			r.Settings[name] = v.value
		default:
			r.UnknownSettings = append(r.UnknownSettings, name)
		}
	}
	b.revisions = append(b.revisions, r)
}

// ---- DaemonSets: istio-cni and ztunnel ----------------------------------------------------------

func rollout(ds *appsv1.DaemonSet) mesh.DaemonSetRollout {
	st := ds.Status
	return mesh.DaemonSetRollout{
		Desired:         st.DesiredNumberScheduled,
		Current:         st.CurrentNumberScheduled,
		Ready:           st.NumberReady,
		Updated:         st.UpdatedNumberScheduled,
		Available:       st.NumberAvailable,
		ObservedCurrent: st.ObservedGeneration >= ds.Generation,
	}
}

func updateStrategy(ds *appsv1.DaemonSet) mesh.UpdateStrategy {
	s := mesh.UpdateStrategy{Type: string(ds.Spec.UpdateStrategy.Type)}
	if s.Type == "" {
		s.Type = updateRollingUpdate // the API server's default
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		s.MaxUnavailable = intOrString(ru.MaxUnavailable)
		s.MaxSurge = intOrString(ru.MaxSurge)
	}
	return s
}

func isCNI(ds *appsv1.DaemonSet) bool {
	return ds.Name == cniDaemonSetName || ds.Spec.Template.Labels[labelK8sApp] == cniDaemonSetName
}

func isZtunnel(tpl corev1.PodTemplateSpec) bool {
	return tpl.Labels[labelApp] == "ztunnel" || anyImageNamed(tpl.Spec, "ztunnel")
}

func (b *builder) addDaemonSet(ds *appsv1.DaemonSet) {
	tpl := ds.Spec.Template
	switch {
	case isCNI(ds):
		c := pickContainer(tpl.Spec.Containers, containerInstallCNI, "install-cni")
		cni := mesh.CNI{
			Namespace:                     ds.Namespace,
			Name:                          ds.Name,
			Revision:                      firstValue(labelRev, ds.Labels, tpl.Labels),
			Rollout:                       rollout(ds),
			UpdateStrategy:                updateStrategy(ds),
			TerminationGracePeriodSeconds: gracePeriod(tpl.Spec.TerminationGracePeriodSeconds),
			HelmRelease:                   helmReleaseOf(ds),
		}
		if c != nil {
			cni.Image, cni.Version = c.Image, versionOf(c.Image)
		}
		b.cnis = append(b.cnis, cni)
		b.noteCNIDaemonSet(ds)
		b.noteRelease(ds, "cni")
	case isZtunnel(tpl):
		c := pickContainer(tpl.Spec.Containers, "", "ztunnel")
		z := mesh.Ztunnel{
			Namespace:                     ds.Namespace,
			Name:                          ds.Name,
			ServiceAccount:                tpl.Spec.ServiceAccountName,
			NodeSelector:                  copyMap(tpl.Spec.NodeSelector),
			NodeAffinity:                  affinity.Required(tpl.Spec.Affinity),
			UpdateStrategy:                updateStrategy(ds),
			TerminationGracePeriodSeconds: gracePeriod(tpl.Spec.TerminationGracePeriodSeconds),
			Rollout:                       rollout(ds),
			Revision:                      firstValue(labelRev, ds.Annotations, tpl.Annotations),
			HelmRelease:                   helmReleaseOf(ds),
		}
		if z.ServiceAccount == "" {
			z.ServiceAccount = defaultSAName
		}
		if ds.Spec.Selector != nil {
			z.Selector = copyMap(ds.Spec.Selector.MatchLabels)
		}
		if c != nil {
			z.Image, z.Version = c.Image, versionOf(c.Image)
			z.XDSAddress = knownEnv(c, envXDSAddress)
			z.CAAddress = knownEnv(c, envCAAddress)
		}
		b.ztunnels = append(b.ztunnels, z)
		b.noteRelease(ds, "ztunnel")
	}
}

func (b *builder) addConfigMap(cm *corev1.ConfigMap) {
	if cm.Name != cniConfigMapName {
		return
	}
	b.noteRelease(cm, "")
	b.noteCNIConfigKeys(cm)
	cfg := map[string]string{}
	for k, v := range cm.Data {
		if strings.HasPrefix(k, "AMBIENT_") || k == "CURRENT_AGENT_VERSION" {
			cfg[k] = v
		}
	}
	b.cniConfig[cm.Namespace] = copyMap(cfg)
}

// ---- tags, injectors, default revision ----------------------------------------------------------

func webhookTarget(cc admissionregistrationv1.WebhookClientConfig) string {
	if cc.Service != nil {
		return cc.Service.Namespace + "/" + cc.Service.Name
	}
	if cc.URL != nil {
		return *cc.URL
	}
	return ""
}

func (b *builder) addMutatingWebhookConfiguration(m *admissionregistrationv1.MutatingWebhookConfiguration) {
	target := ""
	if len(m.Webhooks) > 0 {
		target = webhookTarget(m.Webhooks[0].ClientConfig)
	}
	if tag, ok := m.Labels[labelTag]; ok && tag != "" {
		b.tagWebhooks = append(b.tagWebhooks, mesh.Tag{Name: tag, Revision: m.Labels[labelRev], WebhookRevision: m.Labels[labelRev], Webhook: m.Name, TargetService: target,
			WebhookRelease: owningRelease(m)})
		b.noteRelease(m, "") // tags rendered through an istiod release's revisionTags belong to it
	}
	injector := false
	for _, w := range m.Webhooks {
		if strings.HasSuffix(w.Name, injectorSuffix) {
			injector = true
		}
	}
	if !injector {
		return
	}
	b.noteRelease(m, "")
	in := mesh.Injector{Name: m.Name, Revision: m.Labels[labelRev], Tag: m.Labels[labelTag], TargetService: target}
	seen := map[string]bool{}
	for _, w := range m.Webhooks {
		in.Webhooks = append(in.Webhooks, w.Name)
		if except, ok := injectsUnlabelled(w); ok && strings.HasSuffix(w.Name, injectorSuffix) {
			in.NamespacesByDefault = true
			in.NamespacesByDefaultExcept = append(in.NamespacesByDefaultExcept, except...)
		}
		for _, s := range webhookSelects(w) {
			if !seen[s] {
				seen[s] = true
				in.Selects = append(in.Selects, s)
			}
		}
	}
	b.injectors = append(b.injectors, in)
}

// injectsUnlabelled reports whether an injector webhook injects pods of a namespace with neither
// istio-injection nor istio.io/rev and pods with neither sidecar.istio.io/inject nor istio.io/rev:
// the shape of the auto.sidecar-injector.istio.io webhook (enableNamespacesByDefault) in the istiod
// chart (istio/istio@1.30.3 and @release-1.31:
// manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml). It is read from the
// selectors, not the name: every namespace term must hold for an unlabelled namespace and every
// object term for an unlabelled pod. except lists the namespaces left out by
// kubernetes.io/metadata.name NotIn.
func injectsUnlabelled(w admissionregistrationv1.MutatingWebhook) (except []string, ok bool) {
	holds := func(sel *metav1.LabelSelector, namespace bool) bool {
		if sel == nil {
			return true
		}
		if len(sel.MatchLabels) > 0 {
			return false
		}
		for _, e := range sel.MatchExpressions {
			switch {
			case e.Operator == metav1.LabelSelectorOpDoesNotExist:
			case e.Operator == metav1.LabelSelectorOpNotIn && namespace && e.Key == labelNamespaceName:
				except = append(except, e.Values...)
			case e.Operator == metav1.LabelSelectorOpNotIn && e.Key != labelNamespaceName:
			default:
				return false
			}
		}
		return true
	}
	if !holds(w.NamespaceSelector, true) || !holds(w.ObjectSelector, false) {
		return nil, false
	}
	sort.Strings(except)
	return except, true
}

// webhookSelects lists the label values that make a webhook select a pod: istio.io/rev values of In
// terms and matchLabels, and the legacy istio-injection=enabled / sidecar.istio.io/inject=true.
func webhookSelects(w admissionregistrationv1.MutatingWebhook) []string {
	var out []string
	consider := func(key string, values []string) {
		for _, v := range values {
			switch {
			case key == labelRev:
				out = append(out, labelRev+"="+v)
			case key == mesh.LabelInjection && v == "enabled":
				out = append(out, mesh.LabelInjection+"=enabled")
			case key == mesh.LabelSidecarInject && v == "true":
				out = append(out, mesh.LabelSidecarInject+"=true")
			}
		}
	}
	for _, sel := range []*metav1.LabelSelector{w.NamespaceSelector, w.ObjectSelector} {
		if sel == nil {
			continue
		}
		keys := make([]string, 0, len(sel.MatchLabels))
		for k := range sel.MatchLabels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			consider(k, []string{sel.MatchLabels[k]})
		}
		for _, e := range sel.MatchExpressions {
			if e.Operator == metav1.LabelSelectorOpIn {
				consider(e.Key, e.Values)
			}
		}
	}
	return out
}

func (b *builder) addValidatingWebhookConfiguration(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
	if v.Name == defaultValidatorName {
		b.defaultRevision = v.Labels[labelRev]
		b.noteRelease(v, "")
	}
}

func (b *builder) addService(s *corev1.Service) {
	tag, ok := s.Labels[labelTag]
	if !ok || !strings.HasPrefix(s.Name, tagServicePrefix) {
		return
	}
	if tag == "" {
		tag = strings.TrimPrefix(s.Name, tagServicePrefix)
	}
	b.noteRelease(s, "")
	b.tagServices = append(b.tagServices, mesh.Tag{Name: tag, Revision: s.Labels[labelRev], ServiceRevision: s.Labels[labelRev], Service: s.Name, ServiceNamespace: s.Namespace,
		ServiceRelease: owningRelease(s)})
}

// owningRelease is the Helm release that owns an object: the annotations Helm writes on every
// object it installs (helm.sh/helm/v3@v3.22.0: pkg/action/validate.go, setMetadataVisitor), and
// which it checks before adopting one. The app.kubernetes.io/instance label alone proves nothing:
// helm template renders it too, and the docs apply tag objects that way. The release namespace
// defaults to the object's own (a cluster-scoped object has none, so the owner is then unknown).
func owningRelease(o metav1.Object) *mesh.ReleaseRef {
	ann := o.GetAnnotations()
	name := ann[annotationRelease]
	ns := ann[annotationReleaseNamespace]
	if ns == "" {
		ns = o.GetNamespace()
	}
	if name == "" || ns == "" {
		return nil
	}
	return &mesh.ReleaseRef{Namespace: ns, Name: name}
}

// ---- PodDisruptionBudgets -----------------------------------------------------------------------

func (b *builder) addPodDisruptionBudget(p *policyv1.PodDisruptionBudget) {
	pdb := mesh.PodDisruptionBudget{
		Namespace:          p.Namespace,
		Name:               p.Name,
		MinAvailable:       intOrString(p.Spec.MinAvailable),
		MaxUnavailable:     intOrString(p.Spec.MaxUnavailable),
		DisruptionsAllowed: p.Status.DisruptionsAllowed,
		CurrentHealthy:     p.Status.CurrentHealthy,
		DesiredHealthy:     p.Status.DesiredHealthy,
		ExpectedPods:       p.Status.ExpectedPods,
	}
	if u := p.Spec.UnhealthyPodEvictionPolicy; u != nil {
		pdb.UnhealthyPodEvictionPolicy = string(*u)
	}
	pdb.Selector = labelSelector(p.Spec.Selector)
	b.pdbs = append(b.pdbs, pdb)
}

// ---- CRDs (metadata only) and Jobs -------------------------------------------------------------

// crdKeptPrefixes are the label and annotation prefixes a mesh.CRD keeps.
var crdKeptPrefixes = []string{"app.kubernetes.io/", "helm.sh/", "meta.helm.sh/", "gateway.networking.k8s.io/"}

func keepPrefixed(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		for _, p := range crdKeptPrefixes {
			if strings.HasPrefix(k, p) {
				out[k] = v
				break
			}
		}
	}
	return copyMap(out)
}

// isIstioGroup: istio.io and its subgroups.
func isIstioGroup(group string) bool {
	return group == "istio.io" || strings.HasSuffix(group, ".istio.io")
}

// crdKept: the snapshot keeps the CRDs of Istio and the Gateway API.
func crdKept(group string) bool { return group == gatewayAPIGroup || isIstioGroup(group) }

func (b *builder) addCRD(m *metav1.PartialObjectMetadata) {
	_, group, ok := strings.Cut(m.Name, ".")
	if !ok || !crdKept(group) {
		return
	}
	if isIstioGroup(group) { // the base chart's; the Gateway API CRDs are not Istio's release
		b.noteRelease(m, "")
	}
	b.crds = append(b.crds, mesh.CRD{
		Name:        m.Name,
		Group:       group,
		Labels:      keepPrefixed(m.Labels),
		Annotations: keepPrefixed(m.Annotations),
	})
}

// addObject hands an object of kind k to the builder, and remembers that a custom resource of the
// kind exists: its CRD is then installed even when the input lacks the CRD object (finishCRDs).
func (b *builder) addObject(k *kind, o runtime.Object) error {
	if k.form == untyped && k.group != "" && crdKept(k.group) {
		b.customKinds[k.plural+"."+k.group] = k.group
	}
	return k.add(b, o)
}

// addJob remembers Jobs a CronJob created (named <cronjob>-<digits>), so their pods are summarised
// under the CronJob.
func (b *builder) addJob(m *batchv1.Job) {
	d := int64(0)
	if m.Spec.ActiveDeadlineSeconds != nil {
		d = *m.Spec.ActiveDeadlineSeconds
	}
	b.jobDeadline[m.Namespace+"/"+m.Name] = d
	for _, o := range m.OwnerReferences {
		if o.Kind != "CronJob" {
			continue
		}
		suffix, ok := strings.CutPrefix(m.Name, o.Name+"-")
		if ok && suffix != "" && strings.Trim(suffix, "0123456789") == "" {
			b.cronJobOf[m.Namespace+"/"+m.Name] = o.Name
		}
	}
}
