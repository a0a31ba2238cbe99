package rbac

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Permission is one thing the API server authorizes: a verb on a resource (API group, resource,
// subresource), in one namespace or cluster-wide, optionally on one named object. It is exactly what
// a SelfSubjectAccessReview asks.
type Permission struct {
	// Verb is the RBAC verb: get, list, create, update, patch, delete, escalate, bind.
	Verb string `json:"verb"`
	// Group is the API group, "" for the core group.
	Group string `json:"group,omitempty"`
	// Resource is the plural resource ("pods", "customresourcedefinitions"), "*" for every resource
	// of the group; Subresource is "eviction" for pods/eviction.
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	// Namespace is where the request goes; "" means a cluster-scoped resource, or every namespace.
	Namespace string `json:"namespace,omitempty"`
	// Name, when set, is the one object the request is about.
	Name string `json:"name,omitempty"`
}

// ResourcePath is the resource as RBAC rules name it: "pods", "pods/eviction".
func (p Permission) ResourcePath() string {
	if p.Subresource == "" {
		return p.Resource
	}
	return p.Resource + "/" + p.Subresource
}

// String prints "create pods/eviction (cluster-wide)", "patch nodes node-1 (cluster-wide)",
// "list secrets.v1 in namespace istio-system": the verb, the resource with its group, the name, and
// where.
func (p Permission) String() string {
	res := p.ResourcePath()
	if p.Group != "" {
		res = p.Resource + "." + p.Group
		if p.Subresource != "" {
			res += "/" + p.Subresource
		}
	}
	s := p.Verb + " " + res
	if p.Name != "" {
		s += " " + p.Name
	}
	if p.Namespace == "" {
		return s + " (cluster-wide)"
	}
	return s + " in namespace " + p.Namespace
}

func (p Permission) less(q Permission) bool {
	a := []string{p.Namespace, p.Group, p.Resource, p.Subresource, p.Name, p.Verb}
	b := []string{q.Namespace, q.Group, q.Resource, q.Subresource, q.Name, q.Verb}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Need is a permission and what needs it.
type Need struct {
	Permission
	// By names what needs it, sorted: step IDs ("ztunnel/node/n1/drain"), or parts of the executor
	// and its helpers ("executor: lock Lease", "observe.Live").
	By []string `json:"by"`
	// Sources cite the upstream facts the need rests on (a chart template at its Istio version, a
	// Helm or Kubernetes source file at its module version), sorted.
	Sources []string `json:"sources,omitempty"`
}

// Permissions is a set of needs, one per permission. The zero value is empty and ready to use.
type Permissions struct {
	needs   map[Permission]*Need
	unknown map[string]bool
}

// Add records that by needs perm, because of the cited sources.
func (ps *Permissions) Add(perm Permission, by string, sources ...string) {
	if ps.needs == nil {
		ps.needs = map[Permission]*Need{}
	}
	n, ok := ps.needs[perm]
	if !ok {
		n = &Need{Permission: perm}
		ps.needs[perm] = n
	}
	n.By = addSorted(n.By, by)
	for _, s := range sources {
		n.Sources = addSorted(n.Sources, s)
	}
}

// AddUnknown records something the derivation could not turn into permissions (the objects of a
// chart that is not one of Istio's), for the reader: nobody can check what is not known.
func (ps *Permissions) AddUnknown(what string) {
	if ps.unknown == nil {
		ps.unknown = map[string]bool{}
	}
	ps.unknown[what] = true
}

// Merge adds every need and unknown of o (nil is nothing).
func (ps *Permissions) Merge(o *Permissions) {
	if o == nil {
		return
	}
	for _, n := range o.Needs() {
		for _, by := range n.By {
			ps.Add(n.Permission, by, n.Sources...)
		}
	}
	for _, u := range o.Unknown() {
		ps.AddUnknown(u)
	}
}

// Needs returns every need, sorted by namespace, group, resource, name and verb.
func (ps *Permissions) Needs() []Need {
	if ps == nil {
		return nil
	}
	out := make([]Need, 0, len(ps.needs))
	for _, n := range ps.needs {
		c := *n
		c.By = append([]string(nil), n.By...)
		c.Sources = append([]string(nil), n.Sources...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j].Permission) })
	return out
}

// Unknown returns what the derivation could not cover, sorted.
func (ps *Permissions) Unknown() []string {
	if ps == nil {
		return nil
	}
	return sortedKeys(ps.unknown)
}

// Namespaces lists, sorted, the namespaces in which any permission is needed.
func (ps *Permissions) Namespaces() []string {
	var out []string
	for _, n := range ps.Needs() {
		if n.Permission.Namespace != "" {
			out = addSorted(out, n.Permission.Namespace)
		}
	}
	return out
}

// Len is the number of needs.
func (ps *Permissions) Len() int {
	if ps == nil {
		return 0
	}
	return len(ps.needs)
}

func addSorted(list []string, s string) []string {
	i := sort.SearchStrings(list, s)
	if i < len(list) && list[i] == s {
		return list
	}
	list = append(list, "")
	copy(list[i+1:], list[i:])
	list[i] = s
	return list
}

// Rule is one RBAC policy rule (rbac.authorization.k8s.io/v1 PolicyRule) with where it applies:
// Namespace "" for a ClusterRole rule (bound cluster-wide), else a Role rule in that namespace.
type Rule struct {
	Namespace     string   `json:"-"`
	APIGroups     []string `json:"apiGroups"`
	Resources     []string `json:"resources"`
	ResourceNames []string `json:"resourceNames,omitempty"`
	Verbs         []string `json:"verbs"`
	// By and Sources are those of the needs the rule grants, for comments beside it.
	By      []string `json:"-"`
	Sources []string `json:"-"`
}

// Allows reports whether the rule grants the permission, as the RBAC authorizer decides it
// (k8s.io/kubernetes@v1.37.2: plugin/pkg/auth/authorizer/rbac/rbac.go, RuleAllows): a ClusterRole
// rule applies in every namespace, "*" matches any group, resource or verb, and resource names
// match only requests that name one object.
func (r Rule) Allows(p Permission) bool {
	if r.Namespace != "" && r.Namespace != p.Namespace {
		return false
	}
	if !hasOrStar(r.APIGroups, p.Group) || !hasOrStar(r.Verbs, p.Verb) || !hasOrStar(r.Resources, p.ResourcePath()) {
		return false
	}
	if len(r.ResourceNames) == 0 {
		return true
	}
	return p.Name != "" && slices.Contains(r.ResourceNames, p.Name)
}

// Allowed reports whether some rule grants the permission.
func Allowed(rules []Rule, p Permission) bool {
	for _, r := range rules {
		if r.Allows(p) {
			return true
		}
	}
	return false
}

// NotGranted returns the needs no rule grants, sorted: what a preflight refuses when rules are all
// the client holds.
func (ps *Permissions) NotGranted(rules []Rule) []Need {
	var out []Need
	for _, n := range ps.Needs() {
		if !Allowed(rules, n.Permission) {
			out = append(out, n)
		}
	}
	return out
}

func hasOrStar(list []string, s string) bool {
	return slices.Contains(list, s) || slices.Contains(list, "*")
}

// Rules returns the fewest plain rules that grant every need and nothing else: a need another one
// covers (a named get under an unnamed get, a namespace's list under a cluster-wide list) is
// granted by the broader rule; verbs are merged per resource and object names, resources per group
// and verbs. Cluster-wide rules come first, then each namespace's, sorted.
func (ps *Permissions) Rules() []Rule {
	needs := ps.Needs()
	unnamed := map[Permission]bool{}
	for _, n := range needs {
		if n.Name == "" {
			unnamed[n.Permission] = true
		}
	}
	// coveredBy finds the broader need that grants n: the unnamed one of its namespace, or the
	// cluster-wide unnamed one.
	coveredBy := func(n Need) (Permission, bool) {
		if n.Name != "" {
			q := n.Permission
			q.Name = ""
			if unnamed[q] {
				return q, true
			}
		}
		if n.Namespace != "" {
			q := n.Permission
			q.Name, q.Namespace = "", ""
			if unnamed[q] {
				return q, true
			}
		}
		return Permission{}, false
	}
	type key struct{ ns, group, res, name string }
	verbs := map[key][]string{}
	by := map[key][]string{}
	sources := map[key][]string{}
	note := func(k key, n Need) {
		for _, b := range n.By {
			by[k] = addSorted(by[k], b)
		}
		for _, s := range n.Sources {
			sources[k] = addSorted(sources[k], s)
		}
	}
	var pending []Need
	for _, n := range needs {
		if _, ok := coveredBy(n); ok {
			pending = append(pending, n)
			continue
		}
		k := key{n.Namespace, n.Group, n.ResourcePath(), n.Name}
		verbs[k] = addSorted(verbs[k], n.Verb)
		note(k, n)
	}
	for _, n := range pending { // the reasons of covered needs go to the rule that grants them
		q, _ := coveredBy(n)
		note(key{q.Namespace, q.Group, q.ResourcePath(), ""}, n)
	}
	type ruleKey struct{ ns, group, verbs, res string }
	named := map[ruleKey]*Rule{}
	plain := map[ruleKey]*Rule{}
	for k, vs := range verbs {
		vkey := strings.Join(vs, ",")
		if k.name != "" {
			rk := ruleKey{k.ns, k.group, vkey, k.res}
			r := named[rk]
			if r == nil {
				r = &Rule{Namespace: k.ns, APIGroups: []string{k.group}, Resources: []string{k.res}, Verbs: vs}
				named[rk] = r
			}
			r.ResourceNames = addSorted(r.ResourceNames, k.name)
			r.By, r.Sources = mergeSorted(r.By, by[k]), mergeSorted(r.Sources, sources[k])
			continue
		}
		rk := ruleKey{k.ns, k.group, vkey, ""}
		r := plain[rk]
		if r == nil {
			r = &Rule{Namespace: k.ns, APIGroups: []string{k.group}, Verbs: vs}
			plain[rk] = r
		}
		r.Resources = addSorted(r.Resources, k.res)
		r.By, r.Sources = mergeSorted(r.By, by[k]), mergeSorted(r.Sources, sources[k])
	}
	out := make([]Rule, 0, len(named)+len(plain))
	for _, r := range plain {
		out = append(out, *r)
	}
	for _, r := range named {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return ruleLess(out[i], out[j]) })
	return out
}

func mergeSorted(a, b []string) []string {
	for _, s := range b {
		a = addSorted(a, s)
	}
	return a
}

func ruleLess(a, b Rule) bool {
	x := []string{a.Namespace, strings.Join(a.APIGroups, ","), strings.Join(a.Resources, ","), strings.Join(a.ResourceNames, ","), strings.Join(a.Verbs, ",")}
	y := []string{b.Namespace, strings.Join(b.APIGroups, ","), strings.Join(b.Resources, ","), strings.Join(b.ResourceNames, ","), strings.Join(b.Verbs, ",")}
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}

// String prints the rule the way kubectl describe shows one: "list pods (cluster-wide)",
// "get,patch nodes [n1 n2] (cluster-wide)", "create,get,patch configmaps [j] in namespace ns".
func (r Rule) String() string {
	var res []string
	for _, g := range r.APIGroups {
		for _, x := range r.Resources {
			if g != "" {
				x = strings.Replace(x, "/", "."+g+"/", 1)
				if !strings.Contains(x, "/") {
					x += "." + g
				}
			}
			res = append(res, x)
		}
	}
	s := strings.Join(r.Verbs, ",") + " " + strings.Join(res, ",")
	if len(r.ResourceNames) > 0 {
		s += " [" + strings.Join(r.ResourceNames, " ") + "]"
	}
	if r.Namespace == "" {
		return s + " (cluster-wide)"
	}
	return fmt.Sprintf("%s in namespace %s", s, r.Namespace)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
