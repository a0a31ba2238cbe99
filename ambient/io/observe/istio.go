package observe

import (
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
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

// AuthorizationPolicy attributes ztunnel cannot evaluate: httpOperations, httpSources and every
// `when` key outside l4WhenAttributes in istio/istio
// pilot/pkg/serviceregistry/ambient/authorization.go@1.30.3 (unchanged on release-1.31 and master).
// This loose summary feeds Policy.L7; migrate decodes the spec strictly and says rule by rule.
var (
	l7OperationFields = []string{"hosts", "notHosts", "methods", "notMethods", "paths", "notPaths"}
	l7SourceFields    = []string{"remoteIpBlocks", "notRemoteIpBlocks", "requestPrincipals", "notRequestPrincipals"}
	l4WhenKeys        = map[string]bool{"source.ip": true, "source.namespace": true, "source.principal": true, "destination.ip": true, "destination.port": true}
)

// annotationDryRun is the one policy annotation planners read.
const annotationDryRun = "istio.io/dry-run"

// jsonCopy returns v as plain JSON data (maps, slices, strings, float64, bools), so that the same
// spec compares equal whether it came from a live cluster, a file or a decoded snapshot.
func jsonCopy(v map[string]any) map[string]any {
	if len(v) == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil { // unstructured content is JSON data; this cannot happen
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// conditionsOf reads status.conditions loosely; entries without a type are left out.
func conditionsOf(u *unstructured.Unstructured) []mesh.PolicyCondition {
	var out []mesh.PolicyCondition
	for _, c := range listOf(mapOf(u.Object["status"])["conditions"]) {
		m := mapOf(c)
		pc := mesh.PolicyCondition{Type: strOf(m["type"]), Status: strOf(m["status"]), Reason: strOf(m["reason"]), Message: strOf(m["message"])}
		switch g := m["observedGeneration"].(type) {
		case int64:
			pc.ObservedGeneration = g
		case float64:
			pc.ObservedGeneration = int64(g)
		}
		if pc.Type != "" {
			out = append(out, pc)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

func (b *builder) addPolicy(kind string, u *unstructured.Unstructured) {
	spec := mapOf(u.Object["spec"])
	p := mesh.Policy{
		Kind:          kind,
		Namespace:     u.GetNamespace(),
		Name:          u.GetName(),
		RevisionLabel: u.GetLabels()[labelRev],
		APIVersion:    u.GetAPIVersion(),
		Generation:    u.GetGeneration(),
		Spec:          jsonCopy(spec),
		Conditions:    conditionsOf(u),
	}
	if v, ok := u.GetAnnotations()[annotationDryRun]; ok {
		p.Annotations = map[string]string{annotationDryRun: v}
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
			if key := strOf(mapOf(w)["key"]); key != "" && !l4WhenKeys[key] {
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
	if v, present := labels[labelRev]; present && v == "" {
		g.RevisionLabelEmpty = true // present but empty still counts (IsMine)
	}
	g.Waypoint = g.Class == waypointClass || g.WaypointFor != ""
	b.apiGateways = append(b.apiGateways, g)
	b.noteGatewayExtras(u)
}
