package mesh

import (
	"slices"
	"strconv"
	"strings"
)

// NodeRequirement is one expression of a required node affinity term: a label key, an operator (In,
// NotIn, Exists, DoesNotExist, Gt, Lt) and its values.
type NodeRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// String is "key op v1,v2".
func (r NodeRequirement) String() string {
	s := r.Key + " " + r.Operator
	if len(r.Values) > 0 {
		s += " " + strings.Join(r.Values, ",")
	}
	return s
}

// NodeSelectorTerm is one term of a required node affinity: its expressions are ANDed.
type NodeSelectorTerm struct {
	MatchExpressions []NodeRequirement `json:"matchExpressions,omitempty"`
	// MatchFields counts the term's field expressions (metadata.name), which labels cannot decide.
	MatchFields int `json:"matchFields,omitempty"`
}

// String joins the term's expressions with " && ".
func (t NodeSelectorTerm) String() string {
	parts := make([]string, 0, len(t.MatchExpressions))
	for _, e := range t.MatchExpressions {
		parts = append(parts, e.String())
	}
	if t.MatchFields > 0 {
		parts = append(parts, "(field expressions)")
	}
	return strings.Join(parts, " && ")
}

// Places reports whether a pod with the node selector and required node affinity terms (ORed) can
// be placed on a node with the labels, as the DaemonSet controller decides it
// (k8s.io/component-helpers/scheduling/corev1/nodeaffinity, v0.35: a nil affinity matches every node,
// an empty term none; Gt and Lt compare integers). Field expressions are taken to match.
func Places(nodeSelector map[string]string, terms []NodeSelectorTerm, labels map[string]string) bool {
	for k, v := range nodeSelector {
		if w, ok := labels[k]; !ok || w != v {
			return false
		}
	}
	if terms == nil {
		return true
	}
	for _, t := range terms {
		if t.matches(labels) {
			return true
		}
	}
	return false
}

func (t NodeSelectorTerm) matches(labels map[string]string) bool {
	if len(t.MatchExpressions) == 0 && t.MatchFields == 0 {
		return false
	}
	for _, e := range t.MatchExpressions {
		v, has := labels[e.Key]
		if !requirementHolds(e.Operator, e.Values, v, has, true) {
			return false
		}
	}
	return true
}

// requirementHolds evaluates one label requirement on a label's value (has: whether the label is
// set): In, NotIn, Exists, DoesNotExist, and with numeric (node selectors only) Gt and Lt, which
// compare integers. Any other operator does not hold.
func requirementHolds(op string, values []string, v string, has, numeric bool) bool {
	switch op {
	case "In":
		return has && slices.Contains(values, v)
	case "NotIn":
		return !has || !slices.Contains(values, v)
	case "Exists":
		return has
	case "DoesNotExist":
		return !has
	case "Gt", "Lt":
		if !numeric || !has || len(values) != 1 {
			return false
		}
		a, errA := parseInt(v)
		b, errB := parseInt(values[0])
		return !errA && !errB && (op == "Gt" && a > b || op == "Lt" && a < b)
	}
	return false
}

func parseInt(s string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' || n > (1<<62)/10 {
			return 0, true
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, false
}

// SchedulesOn reports whether the ztunnel DaemonSet places a pod on the node.
func (z Ztunnel) SchedulesOn(n Node) bool { return Places(z.NodeSelector, z.NodeAffinity, n.Labels) }

// PlacementsOverlap reports whether some node labels would place pods of both node selector and
// affinity pairs, and returns such labels (deterministic, for messages). Gt and Lt are taken to be
// satisfiable together with anything.
func PlacementsOverlap(selA map[string]string, termsA []NodeSelectorTerm, selB map[string]string, termsB []NodeSelectorTerm) (map[string]string, bool) {
	as, bs := termsOrAny(termsA), termsOrAny(termsB)
	for _, ta := range as {
		for _, tb := range bs {
			reqs := append(selectorRequirements(selA), selectorRequirements(selB)...)
			reqs = append(reqs, ta.MatchExpressions...)
			reqs = append(reqs, tb.MatchExpressions...)
			if l, ok := satisfy(reqs); ok {
				return l, true
			}
		}
	}
	return nil, false
}

// termsOrAny returns the terms, or one term matching every node for no affinity. Empty terms, which
// match nothing, are dropped.
func termsOrAny(terms []NodeSelectorTerm) []NodeSelectorTerm {
	if terms == nil {
		return []NodeSelectorTerm{{MatchFields: 1}}
	}
	var out []NodeSelectorTerm
	for _, t := range terms {
		if len(t.MatchExpressions) > 0 || t.MatchFields > 0 {
			out = append(out, t)
		}
	}
	return out
}

func selectorRequirements(sel map[string]string) []NodeRequirement {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]NodeRequirement, 0, len(keys))
	for _, k := range keys {
		out = append(out, NodeRequirement{Key: k, Operator: "In", Values: []string{sel[k]}})
	}
	return out
}

// satisfy finds labels meeting every requirement (ANDed), or reports there are none.
func satisfy(reqs []NodeRequirement) (map[string]string, bool) {
	type constraint struct {
		exists, absent bool
		allowed        []string // nil: any value
		forbidden      []string
	}
	byKey := map[string]*constraint{}
	var keys []string
	for _, r := range reqs {
		c := byKey[r.Key]
		if c == nil {
			c = &constraint{}
			byKey[r.Key] = c
			keys = append(keys, r.Key)
		}
		switch r.Operator {
		case "In":
			c.exists = true
			if c.allowed == nil {
				c.allowed = append([]string{}, r.Values...)
			} else {
				c.allowed = slices.DeleteFunc(c.allowed, func(v string) bool { return !slices.Contains(r.Values, v) })
			}
		case "NotIn":
			c.forbidden = append(c.forbidden, r.Values...)
		case "Exists", "Gt", "Lt":
			c.exists = true
		case "DoesNotExist":
			c.absent = true
		}
	}
	slices.Sort(keys)
	out := map[string]string{}
	for _, k := range keys {
		c := byKey[k]
		if c.exists && c.absent {
			return nil, false
		}
		if c.absent || !c.exists {
			continue
		}
		if c.allowed == nil {
			v := "any"
			for i := 0; slices.Contains(c.forbidden, v); i++ {
				v = "any-" + strconv.Itoa(i)
			}
			out[k] = v
			continue
		}
		ok := false
		for _, v := range slices.Sorted(slices.Values(c.allowed)) {
			if !slices.Contains(c.forbidden, v) {
				out[k], ok = v, true
				break
			}
		}
		if !ok {
			return nil, false
		}
	}
	return out, true
}
