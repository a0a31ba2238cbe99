package mesh

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Resource names of Resources (the scheduler's names; any other name is an extended resource or
// hugepages, counted in its own units).
const (
	ResourceCPU              = "cpu"
	ResourceMemory           = "memory"
	ResourceEphemeralStorage = "ephemeral-storage"
	ResourcePods             = "pods"
)

// Resources are amounts by resource name in the scheduler's units: cpu in millicores, memory and
// ephemeral-storage in bytes, pods in pods, any other resource in its own units.
type Resources map[string]int64

// Add returns r plus o, a new map.
func (r Resources) Add(o Resources) Resources {
	out := maps.Clone(r)
	if out == nil {
		out = Resources{}
	}
	for k, v := range o {
		out[k] += v
	}
	return out
}

// Short returns the resources of need that free lacks (need greater than free, a resource free does
// not list counting as none), sorted by name, and how much of each is missing.
func (r Resources) Short(free Resources) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(r)) {
		if r[k] > 0 && r[k] > free[k] {
			out = append(out, k)
		}
	}
	return out
}

// FirstShort returns the first resource by name of r that free lacks (as Short, without building
// the list: it is called once per pod and node when placing), "" when free has room for all of r.
func (r Resources) FirstShort(free Resources) string {
	first := ""
	for k, v := range r {
		if v > 0 && v > free[k] && (first == "" || k < first) {
			first = k
		}
	}
	return first
}

// Format writes the amounts as "cpu 250m, memory 512Mi", names sorted, zero amounts left out.
func (r Resources) Format() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r)) {
		if r[k] != 0 {
			parts = append(parts, k+" "+FormatAmount(k, r[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// FormatAmount writes one amount of the named resource as a person reads it: millicores as "250m"
// or "2", bytes in the largest binary unit that divides them (Ki, Mi, Gi, Ti), others as integers.
func FormatAmount(name string, v int64) string {
	switch {
	case name == ResourceCPU:
		if v%1000 == 0 {
			return strconv.FormatInt(v/1000, 10)
		}
		return strconv.FormatInt(v, 10) + "m"
	case name == ResourceMemory || name == ResourceEphemeralStorage || strings.HasPrefix(name, "hugepages-"):
		for _, u := range []struct {
			suffix string
			size   int64
		}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
			if v != 0 && v%u.size == 0 {
				return strconv.FormatInt(v/u.size, 10) + u.suffix
			}
		}
	}
	return strconv.FormatInt(v, 10)
}

// Toleration is one entry of a pod's spec.tolerations.
type Toleration struct {
	Key string `json:"key,omitempty"`
	// Operator is Equal (also when empty) or Exists.
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	// Effect is NoSchedule, PreferNoSchedule or NoExecute; empty matches every effect.
	Effect string `json:"effect,omitempty"`
}

// Tolerates reports whether the toleration matches the taint, as the API's Toleration.ToleratesTaint
// decides it (k8s.io/api@v0.37.2 core/v1/toleration.go): the effect, when set, must be the taint's;
// the key, when set, must be the taint's (an empty key matches every key); Exists matches any value,
// Equal (the default) the same value. Lt and Gt match nothing: they stand behind an alpha feature
// gate (TaintTolerationComparisonOperators), off by default in Kubernetes 1.37.
func (t Toleration) Tolerates(x Taint) bool {
	if t.Effect != "" && t.Effect != x.Effect {
		return false
	}
	if t.Key != "" && t.Key != x.Key {
		return false
	}
	switch t.Operator {
	case "Exists":
		return true
	case "", "Equal":
		return t.Value == x.Value
	}
	return false
}

// Tolerated reports whether some toleration matches the taint.
func Tolerated(ts []Toleration, x Taint) bool {
	return slices.ContainsFunc(ts, func(t Toleration) bool { return t.Tolerates(x) })
}

// PodAffinityTerm is one required pod (anti-)affinity term: the pods its Selector matches in its
// namespaces, within one domain of TopologyKey.
type PodAffinityTerm struct {
	TopologyKey string `json:"topologyKey"`
	// Selector matches the pods the term is about; nil matches none. The term's matchLabelKeys and
	// mismatchLabelKeys are folded into it with the pod's own values when observed.
	Selector *LabelSelector `json:"selector,omitempty"`
	// Namespaces the term's pods are in; empty (with AnyNamespace false) means the pod's own.
	Namespaces []string `json:"namespaces,omitempty"`
	// AnyNamespace is true for a term with a namespaceSelector. An empty selector means every
	// namespace; a non-empty one is taken to mean every namespace too (the snapshot does not keep
	// every namespace label), which can only find more conflicts than the scheduler.
	AnyNamespace bool `json:"anyNamespace,omitempty"`
}

// AppliesTo reports whether the term covers pods of namespace ns with the labels, for a term of a
// pod in namespace own.
func (t PodAffinityTerm) AppliesTo(own, ns string, labels map[string]string) bool {
	switch {
	case t.AnyNamespace:
	case len(t.Namespaces) == 0:
		if ns != own {
			return false
		}
	case !slices.Contains(t.Namespaces, ns):
		return false
	}
	return t.Selector.Matches(labels)
}

// SpreadConstraint is one topology spread constraint with whenUnsatisfiable DoNotSchedule (those
// with ScheduleAnyway only weigh the choice and are not kept).
type SpreadConstraint struct {
	MaxSkew     int32  `json:"maxSkew"`
	TopologyKey string `json:"topologyKey"`
	// Selector matches the pods counted (in the pod's namespace); matchLabelKeys are folded into it.
	Selector *LabelSelector `json:"selector,omitempty"`
	// MinDomains, when more domains are eligible than it, is ignored; when fewer, the smallest count
	// is taken as 0.
	MinDomains int32 `json:"minDomains,omitempty"`
	// NodeAffinityPolicy is Honor (the default: only nodes the pod's node selector and affinity
	// allow count) or Ignore; NodeTaintsPolicy is Ignore (the default) or Honor (only nodes whose
	// taints the pod tolerates count).
	NodeAffinityPolicy string `json:"nodeAffinityPolicy,omitempty"`
	NodeTaintsPolicy   string `json:"nodeTaintsPolicy,omitempty"`
}

// Scheduling is what decides where a workload's pods may be placed again once evicted: what the
// kube-scheduler's filters read. It describes one pod; where its pods differ (Varies), the first
// pod's by name is kept, with the largest request of each resource over all its pods.
type Scheduling struct {
	// Requests of one pod as the scheduler counts them (containers summed, init containers and
	// native sidecars as they overlap, pod overhead added), plus "pods": 1.
	Requests Resources `json:"requests,omitempty"`
	// NodeSelector and NodeAffinity (required terms, ORed; nil when none) as for a DaemonSet.
	NodeSelector map[string]string  `json:"nodeSelector,omitempty"`
	NodeAffinity []NodeSelectorTerm `json:"nodeAffinity,omitempty"`
	Tolerations  []Toleration       `json:"tolerations,omitempty"`
	// AntiAffinity are the required pod anti-affinity terms, Affinity the required pod affinity
	// terms (a pod needs a matching pod in the domain).
	AntiAffinity []PodAffinityTerm `json:"antiAffinity,omitempty"`
	Affinity     []PodAffinityTerm `json:"affinity,omitempty"`
	// Spread are the DoNotSchedule topology spread constraints.
	Spread []SpreadConstraint `json:"spread,omitempty"`
	// HostPorts are the host ports its containers bind, as "TCP/8080" (with the host IP when set:
	// "TCP/10.0.0.1:8080"), sorted.
	HostPorts []string `json:"hostPorts,omitempty"`
	// Varies is true when its pods differ in any of the above but Requests.
	Varies bool `json:"varies,omitempty"`
}

// PodPlace is one pod of a workload: where it runs and what its volumes pin it to.
type PodPlace struct {
	Name string `json:"name"`
	Node string `json:"node,omitempty"`
	// Volumes are the PersistentVolumes of its claims that carry a required node affinity.
	Volumes []VolumePin `json:"volumes,omitempty"`
	// Unread names the claims whose volume the observation does not hold (no PersistentVolumeClaim
	// or PersistentVolume in the input, or a claim not bound): where such a pod can go is not known.
	Unread []string `json:"unread,omitempty"`
}

// VolumePin is a volume's required node affinity: a pod using it runs only on nodes it matches.
type VolumePin struct {
	Claim  string `json:"claim"`
	Volume string `json:"volume"`
	// Terms are the PersistentVolume's spec.nodeAffinity.required terms (ORed).
	Terms []NodeSelectorTerm `json:"terms"`
	// Local is true for a local or hostPath volume: it exists on one node only.
	Local bool `json:"local,omitempty"`
}

// Matches reports whether a node with the labels is one the volume can be used on. The terms'
// field expressions (metadata.name) are taken to match unless the node's name is given.
func (v VolumePin) Matches(labels map[string]string) bool { return Places(nil, v.Terms, labels) }

// Moves reports whether the workload's pods are placed again when evicted: not a DaemonSet's (its
// pods do not move) nor a bare pod's (eviction deletes it for good).
func (w Workload) Moves() bool { return w.Kind != "DaemonSet" && w.Kind != "Pod" }
