package observe

import (
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// envValue is a container variable as the process will see it, so far as a Deployment can tell.
type envValue struct {
	value string
	// known is false when the value comes from somewhere the snapshot cannot read: valueFrom (a
	// ConfigMap, a Secret, the downward API, a resource), an envFrom source, or a $(VAR) reference
	// to such a variable or to one not declared before it.
	known bool
}

// env resolves one variable of a container the way the kubelet builds a container's environment
// (k8s.io/kubernetes@v1.37.2 pkg/kubelet/kubelet_pods.go, makeEnvironmentVariables):
//
//   - envFrom sources come first, then env entries in order; a later entry of the same name replaces
//     an earlier one, so of a name listed twice the last one counts;
//   - an entry's value has its $(VAR) references expanded from the variables before it, "$$" is a
//     literal "$" and a reference to an undeclared variable stays as written
//     (third_party/forked/golang/expansion/expand.go); an undeclared name may still be a service link
//     variable the kubelet adds, so such a value is unknown here;
//   - an entry with valueFrom, or a name an envFrom source may set, has a value the snapshot cannot
//     read: found is true and known false.
//
// found is false when nothing sets the variable.
func env(c *corev1.Container, name string) (v envValue, found bool) {
	if c == nil {
		return envValue{}, false
	}
	vars := map[string]envValue{}
	// envFrom keys are unknown: remember the prefixes under which a source may set any name.
	var fromPrefixes []string
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil || ef.SecretRef != nil {
			fromPrefixes = append(fromPrefixes, ef.Prefix)
		}
	}
	lookup := func(n string) (envValue, bool) {
		if v, ok := vars[n]; ok {
			return v, true
		}
		for _, p := range fromPrefixes {
			if strings.HasPrefix(n, p) {
				return envValue{}, true
			}
		}
		return envValue{}, false
	}
	for _, e := range c.Env {
		switch {
		case e.Value != "":
			vars[e.Name] = expand(e.Value, lookup)
		case e.ValueFrom != nil:
			vars[e.Name] = envValue{}
		default:
			vars[e.Name] = envValue{known: true}
		}
	}
	return lookup(name)
}

// expand is the kubelet's $(VAR) expansion (k8s.io/kubernetes@v1.37.2
// third_party/forked/golang/expansion/expand.go) over variables whose values may be unknown: the
// result is unknown when any reference is to an unknown or undeclared variable.
func expand(input string, lookup func(string) (envValue, bool)) envValue {
	var buf strings.Builder
	known := true
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		rest := input[cursor+1:]
		r, size := utf8.DecodeRuneInString(rest)
		advance := size
		switch r {
		case '$': // escaped operator
			buf.WriteString("$")
		case '(':
			end := strings.IndexByte(rest[1:], ')')
			if end < 0 { // incomplete reference: kept as written
				buf.WriteString("$(")
				advance = 1
				break
			}
			name := rest[1 : 1+end]
			advance = end + 2
			v, ok := lookup(name)
			switch {
			case !ok: // stays "$(name)" unless the kubelet has a service link variable of that name
				known = false
				buf.WriteString("$(" + name + ")")
			case !v.known:
				known = false
			default:
				buf.WriteString(v.value)
			}
		default: // an operator that opens no reference
			buf.WriteString("$" + string(r))
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	buf.WriteString(input[checkpoint:])
	return envValue{value: buf.String(), known: known}
}

// parseTrustedAccounts reads CA_TRUSTED_NODE_ACCOUNTS exactly as istiod does
// (pilot/pkg/features/security.go, CATrustedNodeAccounts, identical at istio 1.22.0, 1.24.0, 1.30.3 and
// release-1.31): the value is split on "," and each entry cut at its first "/" into namespace and
// service account; an entry without "/" (an empty one included) is ignored, and nothing is trimmed,
// so in "a/b, c/d" the second account is namespace " c", which matches no ztunnel. The result is
// the set istiod holds, as "namespace/name" strings in input order without duplicates.
func parseTrustedAccounts(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, entry := range strings.Split(v, ",") {
		if !strings.Contains(entry, "/") || seen[entry] {
			continue
		}
		seen[entry] = true
		out = append(out, entry)
	}
	return out
}
