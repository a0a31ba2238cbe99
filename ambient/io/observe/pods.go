package observe

import (
	"encoding/json"
	"math"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Pod labels that differ between pods of one workload and so never belong to its common labels.
var podHashLabels = []string{"pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name"}

// Containers Istio adds to a pod; their volumes are not the application's local storage.
var istioContainers = map[string]bool{containerProxy: true, "istio-init": true, "istio-validation": true}

type workloadKey struct{ namespace, kind, name string }

// workloadAgg folds the pods of one workload into counters as they arrive.
type workloadAgg struct {
	labels        map[string]string // intersection so far; nil before the first pod
	pods, ready   int
	sidecar       bool // some pod has a sidecar
	ambient       bool // some pod carries a redirection annotation
	none          bool // some pod has neither
	sidecarRevs   map[string]int
	proxyVersions map[mesh.Version]bool
	redirection   map[string]int
	optedOut      int
	hostNetwork   int
	revLabel      string
	revMixed      bool
	nodes         map[string]bool
	localStorage  bool
	grace         int64
	preStop       bool
	preStopSleep  int64
	preStopUnread bool // a hook whose time cannot be read
	// deadline is the longest run-time bound of its Jobs' pods (activeDeadlineSeconds of the Job or
	// the pod, the shorter of both); unbounded is true when a pod has none.
	deadline  int64
	unbounded bool
	// podDeadline is the pods' own spec.activeDeadlineSeconds, the longest (0 when one sets none).
	podDeadline   int64
	podNoDeadline bool
	// scheduling is what places its pods (the first pod's constraints, the largest requests);
	// placed are its pods' places.
	scheduling *mesh.Scheduling
	placed     []placedPod
}

// namespaceAgg counts a namespace's pods. Whether a pod without a dataplane-mode label should be
// captured depends on the namespace label, which may arrive later, so those pods are kept apart.
type namespaceAgg struct {
	total          int
	sidecar        map[string]int
	enabled        int
	pending        int
	plain          int // no sidecar and no enabled/pending redirection
	missingByPod   int // plain, capturable, pod labelled ambient
	missingIfNSAmb int // plain, capturable, pod not labelled: missing when the namespace is ambient
}

// podOwner resolves the workload a pod belongs to: ReplicaSets to their Deployment (by the
// pod-template-hash suffix), otherwise the controlling owner, otherwise the pod itself. Jobs are
// resolved to CronJobs later, once all Jobs are known.
func podOwner(p *corev1.Pod) workloadKey {
	var kind, name string
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			kind, name = o.Kind, o.Name
			break
		}
		if kind == "" {
			kind, name = o.Kind, o.Name
		}
	}
	if kind == "" || name == "" {
		return workloadKey{p.Namespace, "Pod", p.Name}
	}
	if kind == "ReplicaSet" {
		if h := p.Labels["pod-template-hash"]; h != "" && len(name) > len(h)+1 && strings.HasSuffix(name, "-"+h) {
			return workloadKey{p.Namespace, "Deployment", strings.TrimSuffix(name, "-"+h)}
		}
	}
	return workloadKey{p.Namespace, kind, name}
}

// daemonSetOwner returns the name of the DaemonSet that owns the pod, or "".
func daemonSetOwner(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return o.Name
		}
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// proxyContainer returns the istio-proxy container (a regular container or a native sidecar).
func proxyContainer(p *corev1.Pod) *corev1.Container {
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == containerProxy {
				return &cs[i]
			}
		}
	}
	return nil
}

// sidecarOf reports whether the pod has an injected sidecar and the revision that injected it. Node
// proxies (ztunnel, whose container is also called istio-proxy) and generated gateway/waypoint
// pods are not sidecars unless injection says so.
func sidecarOf(p *corev1.Pod, ztunnel bool) (bool, string) {
	if status, ok := p.Annotations[mesh.AnnotationSidecarStatus]; ok {
		var s struct {
			Revision string `json:"revision"`
		}
		if json.Unmarshal([]byte(status), &s) != nil || s.Revision == "" {
			s.Revision = p.Annotations[labelRev]
		}
		return true, s.Revision
	}
	if ztunnel || p.Labels[labelGatewayName] != "" {
		return false, ""
	}
	if proxyContainer(p) != nil {
		return true, p.Annotations[labelRev]
	}
	return false, ""
}

// mountsEmptyDir reports whether an application container mounts an emptyDir volume.
func mountsEmptyDir(p *corev1.Pod) bool {
	empty := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			empty[v.Name] = true
		}
	}
	if len(empty) == 0 {
		return false
	}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			if istioContainers[c.Name] {
				continue
			}
			for _, m := range c.VolumeMounts {
				if empty[m.Name] {
					return true
				}
			}
		}
	}
	return false
}

// isNodeAgentPod tells whether a DaemonSet pod may belong to the CNI or a ztunnel. The DaemonSet
// itself may not have been seen yet; the match by owner is made in finish.
func isNodeAgentPod(p *corev1.Pod, ds string) bool {
	return ds == cniDaemonSetName || p.Labels[labelK8sApp] == cniDaemonSetName || p.Labels[labelApp] == "ztunnel" ||
		anyImageNamed(p.Spec, "ztunnel") || anyImageNamed(p.Spec, "install-cni")
}

func (b *builder) addPod(p *corev1.Pod) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	ztunnel := p.Labels[labelApp] == "ztunnel" || anyImageNamed(p.Spec, "ztunnel")
	b.addNodeRequests(p)
	b.addNodeAgentPod(p, ztunnel)
	sidecar, sidecarRev := sidecarOf(p, ztunnel)
	b.addWorkloadPod(p, ztunnel, sidecar, sidecarRev)
	b.addNamespacePod(p, sidecar, sidecarRev)
}

// addNodeAgentPod records a ztunnel or istio-cni pod of a DaemonSet on its node.
func (b *builder) addNodeAgentPod(p *corev1.Pod, ztunnel bool) {
	ds := daemonSetOwner(p)
	if ds == "" || !isNodeAgentPod(p, ds) {
		return
	}
	np := mesh.NodePod{Node: p.Spec.NodeName, Pod: p.Name, Ready: podReady(p), Terminating: p.DeletionTimestamp != nil}
	c := pickContainer(p.Spec.Containers, "", "ztunnel")
	if !ztunnel {
		c = pickContainer(p.Spec.Containers, containerInstallCNI, "install-cni")
	}
	if c != nil {
		np.Version = versionOf(c.Image)
	}
	key := p.Namespace + "/" + ds
	b.nodePods[key] = append(b.nodePods[key], np)
}

// workloadOf returns the aggregate of the pod's owner, keeping only the labels all its pods share.
func (b *builder) workloadOf(p *corev1.Pod) *workloadAgg {
	key := podOwner(p)
	b.notePodExtras(key, p)
	w := b.workloads[key]
	if w == nil {
		w = &workloadAgg{nodes: map[string]bool{}, revLabel: p.Labels[labelRev], labels: map[string]string{}}
		b.workloads[key] = w
		for k, v := range p.Labels {
			w.labels[k] = v
		}
		for _, k := range podHashLabels {
			delete(w.labels, k)
		}
		return w
	}
	for k, v := range w.labels {
		if p.Labels[k] != v {
			delete(w.labels, k)
		}
	}
	if w.revLabel != p.Labels[labelRev] {
		w.revMixed = true
	}
	return w
}

// addWorkloadPod counts the pod in its owner's aggregate: dataplane, proxy versions, nodes, storage.
func (b *builder) addWorkloadPod(p *corev1.Pod, ztunnel, sidecar bool, sidecarRev string) {
	redirection := p.Annotations[mesh.AnnotationRedirection]
	w := b.workloadOf(p)
	w.pods++
	if podReady(p) {
		w.ready++
	}
	switch {
	case sidecar:
		w.sidecar = true
		if w.sidecarRevs == nil {
			w.sidecarRevs = map[string]int{}
		}
		w.sidecarRevs[sidecarRev]++
	case redirection != "":
		w.ambient = true
	default:
		w.none = true
	}
	if c := proxyContainer(p); c != nil && !ztunnel {
		if v := versionOf(c.Image); !v.IsZero() {
			if w.proxyVersions == nil {
				w.proxyVersions = map[mesh.Version]bool{}
			}
			w.proxyVersions[v] = true
		}
	}
	if redirection != "" {
		if w.redirection == nil {
			w.redirection = map[string]int{}
		}
		w.redirection[redirection]++
	}
	if p.Labels[mesh.LabelDataplaneMode] == "none" {
		w.optedOut++
	}
	if p.Spec.HostNetwork {
		w.hostNetwork++
	}
	if p.Spec.NodeName != "" {
		w.nodes[p.Spec.NodeName] = true
	}
	if mountsEmptyDir(p) {
		w.localStorage = true
	}
	w.addPlacement(p)
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g > w.grace {
		w.grace = *g
	}
	if d := p.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		w.podDeadline = max(w.podDeadline, *d)
	} else {
		w.podNoDeadline = true
	}
	// Every container that runs until the pod stops: the main ones and the native sidecars (init
	// containers with restartPolicy Always), Istio's proxy among them.
	running := append([]corev1.Container(nil), p.Spec.Containers...)
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			running = append(running, c)
		}
	}
	for _, c := range running {
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
			continue
		}
		w.preStop = true
		if s := preStopSleep(c.Lifecycle.PreStop); s > 0 {
			w.preStopSleep = max(w.preStopSleep, s)
		} else {
			w.preStopUnread = true
		}
	}
}

// preStopSleep reads how long a preStop hook sleeps: a sleep action, or an exec of sleep N, directly
// or as the whole script of sh -c (or bash -c); 0 when it cannot be read.
func preStopSleep(h *corev1.LifecycleHandler) int64 {
	if h.Sleep != nil {
		return h.Sleep.Seconds
	}
	if h.Exec == nil {
		return 0
	}
	cmd := h.Exec.Command
	if len(cmd) == 3 && (path.Base(cmd[0]) == "sh" || path.Base(cmd[0]) == "bash") && cmd[1] == "-c" {
		cmd = strings.Fields(cmd[2])
	}
	if len(cmd) != 2 || path.Base(cmd[0]) != "sleep" {
		return 0
	}
	n, err := strconv.ParseFloat(strings.TrimSuffix(cmd[1], "s"), 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) || n > math.MaxInt32 { // sleep infinity: no bound
		return 0
	}
	return int64(math.Ceil(n))
}

// addNamespacePod counts the pod in its namespace's summary.
func (b *builder) addNamespacePod(p *corev1.Pod, sidecar bool, sidecarRev string) {
	redirection := p.Annotations[mesh.AnnotationRedirection]
	captured := redirection == "enabled" || redirection == "pending"
	podMode := p.Labels[mesh.LabelDataplaneMode]
	n := b.podNS[p.Namespace]
	if n == nil {
		n = &namespaceAgg{}
		b.podNS[p.Namespace] = n
	}
	n.total++
	switch {
	case sidecar:
		if n.sidecar == nil {
			n.sidecar = map[string]int{}
		}
		n.sidecar[sidecarRev]++
	case redirection == "enabled":
		n.enabled++
	case redirection == "pending":
		n.pending++
	}
	if sidecar || captured {
		return
	}
	n.plain++
	if !p.Spec.HostNetwork && podMode != "none" {
		if podMode == "ambient" {
			n.missingByPod++
		} else {
			n.missingIfNSAmb++
		}
	}
}

// workload turns the counters into a mesh.Workload.
func (w *workloadAgg) workload(k workloadKey) mesh.Workload {
	out := mesh.Workload{
		Namespace:    k.namespace,
		Kind:         k.kind,
		Name:         k.name,
		Labels:       copyMap(w.labels),
		Pods:         w.pods,
		Ready:        w.ready,
		OptedOut:     w.optedOut,
		HostNetwork:  w.hostNetwork,
		LocalStorage: w.localStorage,
		GatewayName:  w.labels[labelGatewayName],

		TerminationGracePeriodSeconds: w.grace,
		PreStopHook:                   w.preStop,
	}
	if !w.preStopUnread {
		out.PreStopSleepSeconds = w.preStopSleep
	}
	if (k.kind == "Job" || k.kind == "CronJob") && !w.unbounded {
		out.ActiveDeadlineSeconds = w.deadline
	}
	if len(w.sidecarRevs) > 0 {
		out.SidecarRevisions = map[string]int{}
		for r, c := range w.sidecarRevs {
			out.SidecarRevisions[r] = c
		}
	}
	if len(w.redirection) > 0 {
		out.Redirection = map[string]int{}
		for r, c := range w.redirection {
			out.Redirection[r] = c
		}
	}
	for v := range w.proxyVersions {
		out.ProxyVersions = append(out.ProxyVersions, v)
	}
	for n := range w.nodes {
		out.Nodes = append(out.Nodes, n)
	}
	if !w.revMixed {
		out.PodRevisionLabel = w.revLabel
	}
	modes := 0
	for _, m := range []bool{w.sidecar, w.ambient, w.none} {
		if m {
			modes++
		}
	}
	switch {
	case modes > 1:
		out.Mode = mesh.ModeMixed
	case w.sidecar:
		out.Mode = mesh.ModeSidecar
	case w.ambient:
		out.Mode = mesh.ModeAmbient
	default:
		out.Mode = mesh.ModeNone
	}
	return out
}

// merge folds another workload's counters into w (Jobs of one CronJob).
func (w *workloadAgg) merge(o *workloadAgg) {
	for k, v := range w.labels {
		if o.labels[k] != v {
			delete(w.labels, k)
		}
	}
	w.pods += o.pods
	w.ready += o.ready
	w.sidecar = w.sidecar || o.sidecar
	w.ambient = w.ambient || o.ambient
	w.none = w.none || o.none
	for r, c := range o.sidecarRevs {
		if w.sidecarRevs == nil {
			w.sidecarRevs = map[string]int{}
		}
		w.sidecarRevs[r] += c
	}
	for v := range o.proxyVersions {
		if w.proxyVersions == nil {
			w.proxyVersions = map[mesh.Version]bool{}
		}
		w.proxyVersions[v] = true
	}
	for r, c := range o.redirection {
		if w.redirection == nil {
			w.redirection = map[string]int{}
		}
		w.redirection[r] += c
	}
	w.optedOut += o.optedOut
	w.hostNetwork += o.hostNetwork
	if o.revMixed || o.revLabel != w.revLabel {
		w.revMixed = true
	}
	for n := range o.nodes {
		w.nodes[n] = true
	}
	w.localStorage = w.localStorage || o.localStorage
	w.grace = max(w.grace, o.grace)
	w.preStop = w.preStop || o.preStop
	w.preStopSleep = max(w.preStopSleep, o.preStopSleep)
	w.preStopUnread = w.preStopUnread || o.preStopUnread
	w.unbounded = w.unbounded || o.unbounded
	w.deadline = max(w.deadline, o.deadline)
	switch {
	case w.scheduling == nil:
		w.scheduling = o.scheduling
	case o.scheduling != nil:
		if o.scheduling.Varies || !sameScheduling(*w.scheduling, *o.scheduling) {
			w.scheduling.Varies = true
		}
		maxInto(w.scheduling.Requests, o.scheduling.Requests)
	}
	w.placed = append(w.placed, o.placed...)
}

// summary turns a namespace's counters into a PodSummary, now that its labels are known.
func (n *namespaceAgg) summary(ambientNamespace bool) mesh.PodSummary {
	s := mesh.PodSummary{Total: n.total, AmbientEnabled: n.enabled, AmbientPending: n.pending, AmbientMissing: n.missingByPod}
	if ambientNamespace {
		s.AmbientMissing += n.missingIfNSAmb
	}
	s.None = n.plain - s.AmbientMissing
	if len(n.sidecar) > 0 {
		s.Sidecar = map[string]int{}
		for r, c := range n.sidecar {
			s.Sidecar[r] = c
		}
	}
	return s
}
