package mesh

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Normalize sorts every list of the snapshot into its canonical order and fills apiVersion/kind, so
// that equal mesh states encode to equal bytes whatever order they were observed in.
func (s *Snapshot) Normalize() {
	s.APIVersion, s.Kind = APIVersion, SnapshotKind
	sort.Slice(s.Revisions, func(i, j int) bool {
		a, b := s.Revisions[i], s.Revisions[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	for i := range s.Revisions {
		sort.Strings(s.Revisions[i].TrustedZtunnelAccounts)
		sort.Strings(s.Revisions[i].UnknownSettings)
	}
	sort.Slice(s.Tags, func(i, j int) bool { return s.Tags[i].Name < s.Tags[j].Name })
	sort.Slice(s.Injectors, func(i, j int) bool { return s.Injectors[i].Name < s.Injectors[j].Name })
	for i := range s.Injectors {
		sort.Strings(s.Injectors[i].Webhooks)
		sort.Strings(s.Injectors[i].Selects)
		sort.Strings(s.Injectors[i].NamespacesByDefaultExcept)
	}
	if s.CNI != nil {
		sortNodePods(s.CNI.Pods)
	}
	sort.Slice(s.Ztunnels, func(i, j int) bool {
		return s.Ztunnels[i].Namespace+"/"+s.Ztunnels[i].Name < s.Ztunnels[j].Namespace+"/"+s.Ztunnels[j].Name
	})
	for i := range s.Ztunnels {
		sortNodePods(s.Ztunnels[i].Pods)
	}
	sort.Slice(s.Gateways, func(i, j int) bool { return s.Gateways[i].Ref().Less(s.Gateways[j].Ref()) })
	for i := range s.Gateways {
		sortVersions(s.Gateways[i].Versions)
		sort.Strings(s.Gateways[i].Owners)
	}
	sort.Slice(s.Namespaces, func(i, j int) bool { return s.Namespaces[i].Name < s.Namespaces[j].Name })
	sort.Slice(s.Workloads, func(i, j int) bool { return s.Workloads[i].Ref().Less(s.Workloads[j].Ref()) })
	for i := range s.Workloads {
		sort.Strings(s.Workloads[i].Nodes)
		sortVersions(s.Workloads[i].ProxyVersions)
		pl := s.Workloads[i].Placed
		sort.Slice(pl, func(a, b int) bool { return pl[a].Name < pl[b].Name })
	}
	sort.Slice(s.Nodes, func(i, j int) bool { return s.Nodes[i].Name < s.Nodes[j].Name })
	sort.Slice(s.NodePools, func(i, j int) bool { return s.NodePools[i].Name < s.NodePools[j].Name })
	for i := range s.Nodes {
		t := s.Nodes[i].Taints
		sort.Slice(t, func(a, b int) bool {
			return t[a].Key+"="+t[a].Value+":"+t[a].Effect < t[b].Key+"="+t[b].Value+":"+t[b].Effect
		})
	}
	sort.Slice(s.PodDisruptionBudgets, func(i, j int) bool {
		return s.PodDisruptionBudgets[i].Ref().Less(s.PodDisruptionBudgets[j].Ref())
	})
	sort.Slice(s.Policies, func(i, j int) bool { return s.Policies[i].Ref().Less(s.Policies[j].Ref()) })
	for i := range s.Policies {
		sort.Strings(s.Policies[i].L7)
		sort.Strings(s.Policies[i].PortModes)
		sort.Strings(s.Policies[i].Hosts)
	}
	sort.Slice(s.HelmReleases, func(i, j int) bool {
		return s.HelmReleases[i].Namespace+"/"+s.HelmReleases[i].Name < s.HelmReleases[j].Namespace+"/"+s.HelmReleases[j].Name
	})
	sort.Slice(s.CRDs, func(i, j int) bool { return s.CRDs[i].Name < s.CRDs[j].Name })
	sort.Strings(s.Observation.Skipped)
	s.normalizeNetwork()
}

func sortNodePods(p []NodePod) {
	sort.Slice(p, func(i, j int) bool {
		if p[i].Node != p[j].Node {
			return p[i].Node < p[j].Node
		}
		return p[i].Pod < p[j].Pod
	})
}

func sortVersions(v []Version) { sort.Slice(v, func(i, j int) bool { return v[i].Less(v[j]) }) }

// Less orders references by namespace, then kind, then name: the order of every sorted list of
// references in a snapshot and a plan.
func (r ObjectRef) Less(o ObjectRef) bool {
	if r.Namespace != o.Namespace {
		return r.Namespace < o.Namespace
	}
	if r.Kind != o.Kind {
		return r.Kind < o.Kind
	}
	return r.Name < o.Name
}

// fingerprintView is the part of a snapshot a plan depends on. Pod counts and readiness change all
// the time and are re-checked by the executor step by step; what is here must not change between
// planning and applying.
type fingerprintView struct {
	Kubernetes      string              `json:"k"`
	Revisions       []string            `json:"r"`
	Tags            []string            `json:"t"`
	DefaultRevision string              `json:"d"`
	CNI             string              `json:"c"`
	Ztunnels        []string            `json:"z"`
	Gateways        []string            `json:"g"`
	Namespaces      []string            `json:"n"`
	Releases        []string            `json:"h"`
	Trust           map[string][]string `json:"a"`
	// Added for namespace migration; empty lists are left out, so the fingerprint of a snapshot
	// without policies and Services is what it was before they were added.
	Policies []string `json:"p,omitempty"`
	Services []string `json:"s,omitempty"`
}

// Fingerprint returns a stable hash ("sha256:<hex>") of the parts of the snapshot a plan's safety is
// built on: Kubernetes version, revisions and their versions and trusted ztunnel accounts, tags, the
// default revision, CNI and ztunnel identities, versions and the node selectors and affinities that
// decide where they run, gateways and their owners (and a waypoint's istio.io/waypoint-for),
// namespace mesh labels, Helm release revisions, the spec (hashed), revision label and dry-run
// annotation of every Istio policy and route, and the waypoint labels and selector of every Service.
// Policy status (istiod's conditions) is left out: istiod rewrites it while a migration waits for it.
// Nodes are left out on purpose: Karpenter and cluster autoscalers add and remove them all the time,
// and a node-by-node or blue-green run takes hours under exactly that churn (the executor skips a
// node that went away and verifies the ztunnel of a node that came). A plan carries the fingerprint;
// the executor refuses to start a plan whose cluster no longer has the same one.
func (s *Snapshot) Fingerprint() string {
	c := s
	v := fingerprintView{Kubernetes: c.Cluster.KubernetesVersion.MinorString(), DefaultRevision: c.DefaultRevision, Trust: map[string][]string{}}
	for _, r := range c.Revisions {
		v.Revisions = append(v.Revisions, r.Namespace+"/"+r.Name+"@"+r.Version.String())
		v.Trust[r.Name] = r.TrustedZtunnelAccounts
	}
	for _, t := range c.Tags {
		e := t.Name + "->" + t.Revision
		if t.Split() { // only then, so that fingerprints of agreeing tags stay as they were
			w, _ := t.WebhookPointsAt()
			svc, _ := t.ServicePointsAt()
			e += " webhook=" + w + " service=" + svc
		}
		v.Tags = append(v.Tags, e)
	}
	if c.CNI != nil {
		v.CNI = c.CNI.Namespace + "/" + c.CNI.Name + "@" + c.CNI.Version.String()
	}
	for _, z := range c.Ztunnels {
		sel, _ := json.Marshal(z.NodeSelector)
		aff, _ := json.Marshal(z.NodeAffinity)
		v.Ztunnels = append(v.Ztunnels, z.Namespace+"/"+z.Name+"@"+z.Version.String()+" sa="+z.ServiceAccount+" rev="+z.Revision+
			" nodeSelector="+string(sel)+" affinity="+string(aff))
	}
	for _, g := range c.Gateways {
		line := g.Ref().String() + " rev=" + g.Revision
		if g.Waypoint && g.WaypointFor != "" {
			line += " for=" + g.WaypointFor
		}
		if len(g.Owners) > 1 {
			line += " owners=" + strings.Join(g.Owners, ",")
		}
		v.Gateways = append(v.Gateways, line)
	}
	for _, p := range c.Policies {
		spec, _ := json.Marshal(p.Spec)
		sum := sha256.Sum256(spec)
		line := p.Ref().String() + " rev=" + p.RevisionLabel + " spec=" + hex.EncodeToString(sum[:8])
		if d, ok := p.Annotations["istio.io/dry-run"]; ok {
			line += " dry-run=" + d
		}
		v.Policies = append(v.Policies, line)
	}
	for _, svc := range c.Services {
		labels, _ := json.Marshal(svc.Labels)
		sel, _ := json.Marshal(svc.Selector)
		v.Services = append(v.Services, svc.Ref().String()+" labels="+string(labels)+" selector="+string(sel))
	}
	for _, n := range c.Namespaces {
		b, _ := json.Marshal(n.Labels)
		v.Namespaces = append(v.Namespaces, n.Name+string(b))
	}
	for _, h := range c.HelmReleases {
		v.Releases = append(v.Releases, fmt.Sprintf("%s/%s %s-%s #%d", h.Namespace, h.Name, h.Chart, h.ChartVersion, h.Revision))
	}
	for _, l := range [][]string{v.Revisions, v.Tags, v.Ztunnels, v.Gateways, v.Namespaces, v.Releases, v.Policies, v.Services} {
		sort.Strings(l)
	}
	for k, l := range v.Trust {
		l = append([]string(nil), l...)
		sort.Strings(l)
		v.Trust[k] = l
	}
	b, err := json.Marshal(v)
	if err != nil { // cannot happen: the view holds only strings
		panic(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Normalized returns s when its lists are already in canonical order (as observation leaves them),
// and otherwise a normalized deep copy: planners call it so they never change the caller's snapshot,
// and two goroutines may plan from one snapshot at once. A snapshot built in code may hold Helm
// values decoded by a YAML v2 library (map[any]any): their keys are turned into strings. Values
// that are not data at all (functions, channels, NaN) give an error naming the release and the key;
// Normalized never panics.
func Normalized(s *Snapshot) (*Snapshot, error) {
	if s == nil {
		return nil, errors.New("the snapshot is nil; observe a cluster first (observe.Live, observe.Dir)")
	}
	if s.normalized() && valuesAreJSON(s) {
		return s, nil
	}
	c := *s
	c.HelmReleases = make([]HelmRelease, len(s.HelmReleases))
	for i, h := range s.HelmReleases {
		v, err := jsonValue(h.Values, "")
		if err != nil {
			return nil, fmt.Errorf("Helm release %s/%s: values%w", h.Namespace, h.Name, err)
		}
		h.Values, _ = v.(map[string]any)
		c.HelmReleases[i] = h
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("the snapshot does not encode as JSON: %w", err)
	}
	var out Snapshot
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("the snapshot does not read back from JSON: %w", err)
	}
	out.Normalize()
	return &out, nil
}

// MustNormalized is Normalized for snapshots known to be data (tests, the demo); it panics otherwise.
func MustNormalized(s *Snapshot) *Snapshot {
	out, err := Normalized(s)
	if err != nil {
		panic(err)
	}
	return out
}

// valuesAreJSON reports whether every Helm release's values hold only JSON types.
func valuesAreJSON(s *Snapshot) bool {
	for _, h := range s.HelmReleases {
		if _, err := json.Marshal(h.Values); err != nil {
			return false
		}
		if !onlyStringKeys(h.Values) {
			return false
		}
	}
	return true
}

func onlyStringKeys(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if !onlyStringKeys(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !onlyStringKeys(e) {
				return false
			}
		}
	case map[any]any:
		return false
	}
	return true
}

// jsonValue returns v with every map[any]any turned into a map[string]any (keys printed with %v,
// as YAML v2 decoders leave them), or an error naming the first key whose value JSON cannot hold,
// as " (at a.b[2]): ...".
func jsonValue(v any, at string) (any, error) {
	bad := func(err error) error {
		if at == "" {
			return fmt.Errorf(": %w", err)
		}
		return fmt.Errorf(" (at %s): %w", at, err)
	}
	key := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	switch x := v.(type) {
	case nil, string, bool, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, bad(fmt.Errorf("%v is not a JSON number", f))
		}
		if f, ok := v.(float32); ok && (math.IsNaN(float64(f)) || math.IsInf(float64(f), 0)) {
			return nil, bad(fmt.Errorf("%v is not a JSON number", f))
		}
		return v, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := jsonValue(e, key(k))
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks := fmt.Sprint(k)
			c, err := jsonValue(e, key(ks))
			if err != nil {
				return nil, err
			}
			out[ks] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonValue(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, nil
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonValue(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	if _, err := json.Marshal(v); err != nil {
		return nil, bad(fmt.Errorf("a %T is not data", v))
	}
	return v, nil
}

// normalized reports whether Normalize would change nothing.
func (s *Snapshot) normalized() bool {
	if s.APIVersion != APIVersion || s.Kind != SnapshotKind {
		return false
	}
	ok := sort.SliceIsSorted(s.Revisions, func(i, j int) bool {
		a, b := s.Revisions[i], s.Revisions[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	}) &&
		sort.SliceIsSorted(s.Tags, func(i, j int) bool { return s.Tags[i].Name < s.Tags[j].Name }) &&
		sort.SliceIsSorted(s.Injectors, func(i, j int) bool { return s.Injectors[i].Name < s.Injectors[j].Name }) &&
		sort.SliceIsSorted(s.Ztunnels, func(i, j int) bool {
			return s.Ztunnels[i].Namespace+"/"+s.Ztunnels[i].Name < s.Ztunnels[j].Namespace+"/"+s.Ztunnels[j].Name
		}) &&
		sort.SliceIsSorted(s.Gateways, func(i, j int) bool { return s.Gateways[i].Ref().Less(s.Gateways[j].Ref()) }) &&
		sort.SliceIsSorted(s.Namespaces, func(i, j int) bool { return s.Namespaces[i].Name < s.Namespaces[j].Name }) &&
		sort.SliceIsSorted(s.Workloads, func(i, j int) bool { return s.Workloads[i].Ref().Less(s.Workloads[j].Ref()) }) &&
		sort.SliceIsSorted(s.Nodes, func(i, j int) bool { return s.Nodes[i].Name < s.Nodes[j].Name }) &&
		sort.SliceIsSorted(s.NodePools, func(i, j int) bool { return s.NodePools[i].Name < s.NodePools[j].Name }) &&
		sort.SliceIsSorted(s.PodDisruptionBudgets, func(i, j int) bool {
			return s.PodDisruptionBudgets[i].Ref().Less(s.PodDisruptionBudgets[j].Ref())
		}) &&
		sort.SliceIsSorted(s.Policies, func(i, j int) bool { return s.Policies[i].Ref().Less(s.Policies[j].Ref()) }) &&
		sort.SliceIsSorted(s.HelmReleases, func(i, j int) bool {
			return s.HelmReleases[i].Namespace+"/"+s.HelmReleases[i].Name < s.HelmReleases[j].Namespace+"/"+s.HelmReleases[j].Name
		}) &&
		sort.SliceIsSorted(s.CRDs, func(i, j int) bool { return s.CRDs[i].Name < s.CRDs[j].Name }) &&
		sort.StringsAreSorted(s.Observation.Skipped) && s.networkNormalized()
	if !ok {
		return false
	}
	for _, r := range s.Revisions {
		if !sort.StringsAreSorted(r.TrustedZtunnelAccounts) {
			return false
		}
	}
	for _, in := range s.Injectors {
		if !sort.StringsAreSorted(in.Webhooks) || !sort.StringsAreSorted(in.Selects) || !sort.StringsAreSorted(in.NamespacesByDefaultExcept) {
			return false
		}
	}
	if s.CNI != nil && !nodePodsSorted(s.CNI.Pods) {
		return false
	}
	for _, z := range s.Ztunnels {
		if !nodePodsSorted(z.Pods) {
			return false
		}
	}
	for _, g := range s.Gateways {
		if !versionsSorted(g.Versions) {
			return false
		}
	}
	for _, w := range s.Workloads {
		if !sort.StringsAreSorted(w.Nodes) || !versionsSorted(w.ProxyVersions) ||
			!sort.SliceIsSorted(w.Placed, func(a, b int) bool { return w.Placed[a].Name < w.Placed[b].Name }) {
			return false
		}
	}
	for _, n := range s.Nodes {
		t := n.Taints
		if !sort.SliceIsSorted(t, func(a, b int) bool {
			return t[a].Key+"="+t[a].Value+":"+t[a].Effect < t[b].Key+"="+t[b].Value+":"+t[b].Effect
		}) {
			return false
		}
	}
	for _, p := range s.Policies {
		if !sort.StringsAreSorted(p.L7) || !sort.StringsAreSorted(p.PortModes) || !sort.StringsAreSorted(p.Hosts) {
			return false
		}
	}
	return true
}

func nodePodsSorted(p []NodePod) bool {
	return sort.SliceIsSorted(p, func(i, j int) bool {
		if p[i].Node != p[j].Node {
			return p[i].Node < p[j].Node
		}
		return p[i].Pod < p[j].Pod
	})
}

func versionsSorted(v []Version) bool {
	return sort.SliceIsSorted(v, func(i, j int) bool { return v[i].Less(v[j]) })
}

// ErrInvalidSnapshot is wrapped by errors from DecodeSnapshot.
var ErrInvalidSnapshot = errors.New("invalid snapshot")

// EncodeSnapshot writes the snapshot as YAML in canonical order.
// The snapshot is normalized in place first.
func EncodeSnapshot(s *Snapshot) ([]byte, error) {
	s.Normalize()
	return yaml.Marshal(s)
}

// DecodeSnapshot reads a snapshot written by EncodeSnapshot (YAML or JSON). Unknown fields are errors.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	var s Snapshot
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSnapshot, err)
	}
	if s.APIVersion != APIVersion || s.Kind != SnapshotKind {
		return nil, fmt.Errorf("%w: apiVersion/kind are %q/%q; want %q/%q", ErrInvalidSnapshot, s.APIVersion, s.Kind, APIVersion, SnapshotKind)
	}
	s.Normalize()
	return &s, nil
}
