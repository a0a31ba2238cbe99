package observe

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// Safe accessors for unstructured content: a field of the wrong type reads as absent.

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }
func listOf(v any) []any         { l, _ := v.([]any); return l }
func strOf(v any) string         { s, _ := v.(string); return s }

func stringsOf(v any) []string {
	var out []string
	for _, x := range listOf(v) {
		if s := strOf(x); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// AuthorizationPolicy fields that need an L7 proxy (istio-facts §8): operation fields other than
// ports, and request principals of the source.
var (
	l7OperationFields = []string{"methods", "notMethods", "paths", "notPaths", "hosts", "notHosts"}
	l7SourceFields    = []string{"requestPrincipals", "notRequestPrincipals"}
)

func (b *builder) addPolicy(kind string, u *unstructured.Unstructured) {
	spec := mapOf(u.Object["spec"])
	p := mesh.Policy{
		Kind:          kind,
		Namespace:     u.GetNamespace(),
		Name:          u.GetName(),
		RevisionLabel: u.GetLabels()[labelRev],
	}
	switch kind {
	case "AuthorizationPolicy", "RequestAuthentication":
		p.HasSelector = spec["selector"] != nil
		p.HasTargetRefs = spec["targetRef"] != nil || len(listOf(spec["targetRefs"])) > 0
		if kind == "AuthorizationPolicy" {
			p.Action = strOf(spec["action"])
			if p.Action == "" {
				p.Action = "ALLOW"
			}
			p.L7 = authorizationL7(spec)
		}
	case "PeerAuthentication":
		p.HasSelector = spec["selector"] != nil
		p.Mode = strOf(mapOf(spec["mtls"])["mode"])
		if p.Mode == "" {
			p.Mode = "UNSET"
		}
		for port, v := range mapOf(spec["portLevelMtls"]) {
			mode := strOf(mapOf(v)["mode"])
			if mode == "" {
				mode = "UNSET"
			}
			p.PortModes = append(p.PortModes, port+"="+mode)
		}
	case "VirtualService":
		p.Hosts = stringsOf(spec["hosts"])
	case "DestinationRule":
		if h := strOf(spec["host"]); h != "" {
			p.Hosts = []string{h}
		}
	}
	b.policies = append(b.policies, p)
}

// authorizationL7 lists the L7 attributes the rules of an AuthorizationPolicy use, without repeats.
func authorizationL7(spec map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, r := range listOf(spec["rules"]) {
		rule := mapOf(r)
		for _, t := range listOf(rule["to"]) {
			op := mapOf(mapOf(t)["operation"])
			for _, f := range l7OperationFields {
				if len(listOf(op[f])) > 0 {
					add(f)
				}
			}
		}
		for _, f := range listOf(rule["from"]) {
			src := mapOf(mapOf(f)["source"])
			for _, k := range l7SourceFields {
				if len(listOf(src[k])) > 0 {
					add(k)
				}
			}
		}
		for _, w := range listOf(rule["when"]) {
			if key := strOf(mapOf(w)["key"]); strings.HasPrefix(key, "request.") {
				add(key)
			}
		}
	}
	return out
}

func (b *builder) addGateway(u *unstructured.Unstructured) {
	labels := u.GetLabels()
	g := mesh.Gateway{
		Kind:          mesh.GatewayKindAPI,
		Namespace:     u.GetNamespace(),
		Name:          u.GetName(),
		Class:         strOf(mapOf(u.Object["spec"])["gatewayClassName"]),
		WaypointFor:   labels[mesh.LabelWaypointFor],
		RevisionLabel: labels[labelRev],
	}
	g.Waypoint = g.Class == waypointClass || g.WaypointFor != ""
	b.apiGateways = append(b.apiGateways, g)
}
