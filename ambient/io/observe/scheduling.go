package observe

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ambientkit/ambientkit/ambient/io/internal/affinity"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// What decides where a pod can be placed again once a drain evicts it, read as the kube-scheduler's
// filters read it (k8s.io/kubernetes@v1.37.2 pkg/scheduler/framework/plugins: noderesources/fit.go,
// tainttoleration, nodeunschedulable, nodeaffinity, interpodaffinity, podtopologyspread,
// volumebinding, volumezone, nodeports).

// resources converts a resource list to the snapshot's units: cpu in millicores, the rest in units.
func resources(l corev1.ResourceList) mesh.Resources {
	if len(l) == 0 {
		return nil
	}
	out := mesh.Resources{}
	for name, q := range l {
		if name == corev1.ResourceCPU {
			out[string(name)] = q.MilliValue()
		} else {
			out[string(name)] = q.Value()
		}
	}
	return out
}

// maxInto raises each resource of into to at least r's.
func maxInto(into, r mesh.Resources) {
	for k, v := range r {
		if v > into[k] {
			into[k] = v
		}
	}
}

// podRequests is what the scheduler counts a pod as requesting (k8s.io/component-helpers@v0.37.2
// resource/helpers.go PodRequests): the containers summed with the native sidecars (init containers
// with restartPolicy Always); each plain init container with the sidecars declared before it; the
// larger of both per resource; pod-level requests (spec.resources) in place of the containers' for
// cpu, memory and hugepages; the pod overhead added. Requests that were left out where a limit is set
// are the limit already: the API server defaults them so (pkg/apis/core/v1/defaults.go).
func podRequests(spec *corev1.PodSpec) mesh.Resources {
	total := mesh.Resources{}
	for _, c := range spec.Containers {
		total = total.Add(resources(c.Resources.Requests))
	}
	sidecars, inits := mesh.Resources{}, mesh.Resources{}
	for _, c := range spec.InitContainers {
		r := resources(c.Resources.Requests)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars = sidecars.Add(r)
			maxInto(inits, sidecars)
			continue
		}
		maxInto(inits, sidecars.Add(r))
	}
	total = total.Add(sidecars)
	maxInto(total, inits)
	if spec.Resources != nil {
		for name, v := range resources(spec.Resources.Requests) {
			if name == mesh.ResourceCPU || name == mesh.ResourceMemory || strings.HasPrefix(name, "hugepages-") {
				total[name] = v
			}
		}
	}
	total = total.Add(resources(spec.Overhead))
	for k, v := range total {
		if v == 0 {
			delete(total, k)
		}
	}
	total[mesh.ResourcePods] = 1
	return total
}

// podScheduling reads the placement constraints of a pod (everything of mesh.Scheduling but the
// requests). matchLabelKeys and mismatchLabelKeys are already in the selectors: the API server
// folds them in when the pod is created (pkg/registry/core/pod/strategy.go); a topology spread
// constraint's matchLabelKeys are folded in here, as the scheduler does again.
func podScheduling(p *corev1.Pod) mesh.Scheduling {
	spec := &p.Spec
	sc := mesh.Scheduling{NodeSelector: copyMap(spec.NodeSelector), NodeAffinity: affinity.Required(spec.Affinity)}
	for _, t := range spec.Tolerations {
		sc.Tolerations = append(sc.Tolerations, mesh.Toleration{Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect)})
	}
	if a := spec.Affinity; a != nil {
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				sc.AntiAffinity = append(sc.AntiAffinity, affinityTerm(t))
			}
		}
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				sc.Affinity = append(sc.Affinity, affinityTerm(t))
			}
		}
	}
	for _, c := range spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		sel := labelSelector(c.LabelSelector)
		if sel != nil {
			for _, k := range c.MatchLabelKeys {
				if v, ok := p.Labels[k]; ok {
					sel.MatchExpressions = append(sel.MatchExpressions, mesh.SelectorTerm{Key: k, Operator: "In", Values: []string{v}})
				}
			}
		}
		sp := mesh.SpreadConstraint{MaxSkew: c.MaxSkew, TopologyKey: c.TopologyKey, Selector: sel}
		if c.MinDomains != nil {
			sp.MinDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			sp.NodeAffinityPolicy = string(*c.NodeAffinityPolicy)
		}
		if c.NodeTaintsPolicy != nil {
			sp.NodeTaintsPolicy = string(*c.NodeTaintsPolicy)
		}
		sc.Spread = append(sc.Spread, sp)
	}
	sc.HostPorts = hostPorts(spec)
	return sc
}

// hostPorts lists the host ports a pod binds (containers and native sidecars; with hostNetwork the
// container ports, which the API server defaults hostPort from), as "TCP/8080" or "TCP/ip:8080".
func hostPorts(spec *corev1.PodSpec) []string {
	cs := append([]corev1.Container(nil), spec.Containers...)
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			cs = append(cs, c)
		}
	}
	var out []string
	for _, c := range cs {
		for _, port := range c.Ports {
			hp := port.HostPort
			if hp == 0 && spec.HostNetwork {
				hp = port.ContainerPort
			}
			if hp <= 0 {
				continue
			}
			proto := string(port.Protocol)
			if proto == "" {
				proto = "TCP"
			}
			addr := strconv.Itoa(int(hp))
			if port.HostIP != "" && port.HostIP != "0.0.0.0" {
				addr = port.HostIP + ":" + addr
			}
			out = append(out, proto+"/"+addr)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func affinityTerm(t corev1.PodAffinityTerm) mesh.PodAffinityTerm {
	out := mesh.PodAffinityTerm{TopologyKey: t.TopologyKey, Selector: labelSelector(t.LabelSelector),
		Namespaces: append([]string(nil), t.Namespaces...), AnyNamespace: t.NamespaceSelector != nil}
	sort.Strings(out.Namespaces)
	return out
}

// labelSelector converts a label selector; nil stays nil (it matches nothing).
func labelSelector(sel *metav1.LabelSelector) *mesh.LabelSelector {
	if sel == nil {
		return nil
	}
	out := &mesh.LabelSelector{MatchLabels: copyMap(sel.MatchLabels)}
	for _, e := range sel.MatchExpressions {
		t := mesh.SelectorTerm{Key: e.Key, Operator: string(e.Operator)}
		if len(e.Values) > 0 {
			t.Values = append([]string(nil), e.Values...)
		}
		out.MatchExpressions = append(out.MatchExpressions, t)
	}
	return out
}

// sameScheduling reports whether two pods' constraints are equal (requests aside).
func sameScheduling(a, b mesh.Scheduling) bool {
	a.Requests, b.Requests, a.Varies, b.Varies = nil, nil, false, false
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// podClaims names the PersistentVolumeClaims a pod mounts: its persistentVolumeClaim volumes and
// its generic ephemeral volumes (whose claim is named <pod>-<volume>).
func podClaims(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, p.Name+"-"+v.Name)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// claimRef is what a PersistentVolumeClaim says of its volume.
type claimRef struct {
	volume string // spec.volumeName, empty when not bound
}

// volumeRef is what placement needs of a PersistentVolume.
type volumeRef struct {
	terms []mesh.NodeSelectorTerm
	local bool
}

func (b *builder) addPersistentVolumeClaim(c *corev1.PersistentVolumeClaim) {
	if c.Status.Phase == corev1.ClaimBound || c.Spec.VolumeName != "" {
		b.claims[c.Namespace+"/"+c.Name] = claimRef{volume: c.Spec.VolumeName}
		return
	}
	b.claims[c.Namespace+"/"+c.Name] = claimRef{}
}

// zoneLabels are the PersistentVolume labels the VolumeZone filter holds a node to
// (k8s.io/kubernetes@v1.37.2 pkg/scheduler/framework/plugins/volumezone/volume_zone.go); a value
// may list several zones joined by "__".
var zoneLabels = []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/region",
	"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"}

func (b *builder) addPersistentVolume(v *corev1.PersistentVolume) {
	ref := volumeRef{local: v.Spec.Local != nil || v.Spec.HostPath != nil}
	if v.Spec.NodeAffinity != nil {
		ref.terms = affinity.Terms(v.Spec.NodeAffinity.Required)
	}
	// The zone labels: every node must carry one of the values (of the GA key or its beta twin).
	for _, k := range zoneLabels[:2] {
		beta := strings.Replace(k, "topology.kubernetes.io", "failure-domain.beta.kubernetes.io", 1)
		val := v.Labels[k]
		if val == "" {
			val = v.Labels[beta]
		}
		if val == "" {
			continue
		}
		req := mesh.NodeRequirement{Key: k, Operator: "In", Values: strings.Split(val, "__")}
		if ref.terms == nil {
			ref.terms = []mesh.NodeSelectorTerm{{}}
		}
		for i := range ref.terms {
			ref.terms[i].MatchExpressions = append(ref.terms[i].MatchExpressions, req)
		}
	}
	b.volumes[v.Name] = ref
}

// addPlacement records a pod of a workload: its node and, once claims and volumes are all read
// (finishPlacement), what its volumes pin it to.
func (w *workloadAgg) addPlacement(p *corev1.Pod) {
	sc := podScheduling(p)
	req := podRequests(&p.Spec)
	switch {
	case w.scheduling == nil:
		sc.Requests = req
		w.scheduling = &sc
	default:
		if !sameScheduling(*w.scheduling, sc) {
			w.scheduling.Varies = true
		}
		maxInto(w.scheduling.Requests, req)
	}
	w.placed = append(w.placed, placedPod{place: mesh.PodPlace{Name: p.Name, Node: p.Spec.NodeName}, namespace: p.Namespace, claims: podClaims(p)})
}

// placedPod is a pod's place before its claims are resolved.
type placedPod struct {
	place     mesh.PodPlace
	namespace string
	claims    []string
}

// addNodeRequests counts a pod bound to a node in the node's requested resources (the scheduler
// counts every pod with spec.nodeName that has not finished, terminating ones too).
func (b *builder) addNodeRequests(p *corev1.Pod) {
	if p.Spec.NodeName == "" {
		return
	}
	b.nodeRequested[p.Spec.NodeName] = b.nodeRequested[p.Spec.NodeName].Add(podRequests(&p.Spec))
}

// finishPlacement resolves the pods' claims to their volumes' node affinity and gives each node the
// requests of its pods.
func (b *builder) finishPlacement(pods []placedPod) []mesh.PodPlace {
	out := make([]mesh.PodPlace, 0, len(pods))
	for _, pp := range pods {
		place := pp.place
		for _, c := range pp.claims {
			claim, ok := b.claims[pp.namespace+"/"+c]
			if !ok || claim.volume == "" {
				place.Unread = append(place.Unread, c)
				continue
			}
			v, ok := b.volumes[claim.volume]
			if !ok {
				place.Unread = append(place.Unread, c)
				continue
			}
			if v.terms != nil || v.local {
				place.Volumes = append(place.Volumes, mesh.VolumePin{Claim: c, Volume: claim.volume, Terms: v.terms, Local: v.local})
			}
		}
		out = append(out, place)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
