package migrate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	networkingv1 "istio.io/api/networking/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// RouteVerdict says what moving a namespace to ambient means for one VirtualService or
// DestinationRule: ztunnel applies neither (its workload API carries no routing), so ambient clients
// need an HTTPRoute (parentRefs naming the Service) on a waypoint, and traffic policies take effect
// only where a waypoint serves the Service (istio.io docs/ambient/migrate, runbook step 5).
type RouteVerdict struct {
	Route mesh.ObjectRef `json:"route"`
	// Services the hosts name that exist in the snapshot.
	Services []mesh.ObjectRef `json:"services,omitempty"`
	// ServiceEntries are those visible to the route's namespace whose hosts the route names (a
	// host a Service does not take), with the hosts they take.
	ServiceEntries []ServiceEntryHost `json:"serviceEntries,omitempty"`
	// UnresolvedHosts name neither a Service nor a ServiceEntry of the snapshot (wildcards, hosts of
	// namespaces that were not observed, typos).
	UnresolvedHosts []string `json:"unresolvedHosts,omitempty"`
	// TLSOrigination is true for a DestinationRule whose traffic policy (or a port's) sets TLS mode
	// SIMPLE or MUTUAL: the client's proxy opens TLS to the destination.
	TLSOrigination bool `json:"tlsOrigination,omitempty"`
	// Gateways are the gateways other than "mesh" a VirtualService is bound to.
	Gateways []string `json:"gateways,omitempty"`
	// MeshTraffic is true when a VirtualService applies to mesh traffic (no gateways, or "mesh").
	MeshTraffic bool `json:"meshTraffic,omitempty"`
	// TrafficPolicy is true for a DestinationRule with a traffic policy (load balancing, connection
	// pool, outlier detection, TLS, ...): a waypoint serving the Service applies it, nothing else does.
	TrafficPolicy bool `json:"trafficPolicy,omitempty"`
	// Untranslatable lists what HTTPRoute (Gateway API v1.6.3, standard channel) cannot express, as
	// "field: why".
	Untranslatable []string `json:"untranslatable,omitempty"`
	// Error is why the spec does not decode; nothing else is said about such an object.
	Error string `json:"error,omitempty"`
}

// routeVerdicts judges the VirtualServices and DestinationRules of namespace ns and those elsewhere
// whose hosts name a Service of ns, and proposes HTTPRoutes where the translation is mechanical.
func routeVerdicts(s *mesh.Snapshot, ns string) ([]RouteVerdict, []Proposal) {
	var out []RouteVerdict
	var props []Proposal
	for _, p := range s.Policies {
		if p.Kind != "VirtualService" && p.Kind != "DestinationRule" {
			continue
		}
		v := RouteVerdict{Route: p.Ref()}
		msg, err := DecodePolicy(p)
		if err != nil {
			if p.Namespace == ns {
				v.Error = err.Error()
				out = append(out, v)
			}
			continue
		}
		var hosts []string
		switch m := msg.(type) {
		case *networkingv1.VirtualService:
			hosts = m.GetHosts()
		case *networkingv1.DestinationRule:
			hosts = []string{m.GetHost()}
		}
		for _, h := range hosts {
			if svc := resolveHost(s, h, p.Namespace); svc != nil {
				v.Services = append(v.Services, svc.Ref())
			} else if se := resolveServiceEntry(s, h, p.Namespace); se != nil {
				v.ServiceEntries = append(v.ServiceEntries, ServiceEntryHost{ServiceEntry: se.Ref(), Host: h, Waypoint: egressWaypoint(s, *se)})
			} else {
				v.UnresolvedHosts = append(v.UnresolvedHosts, h)
			}
		}
		if p.Namespace != ns && !anyInNamespace(v.Services, ns) {
			continue
		}
		switch m := msg.(type) {
		case *networkingv1.VirtualService:
			prop := judgeVirtualService(s, &v, p, m)
			if prop != nil {
				props = append(props, *prop)
			}
		case *networkingv1.DestinationRule:
			judgeDestinationRule(&v, m)
		}
		sort.Strings(v.Untranslatable)
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Route.Less(out[j].Route) })
	return out, props
}

func anyInNamespace(refs []mesh.ObjectRef, ns string) bool {
	for _, r := range refs {
		if r.Namespace == ns {
			return true
		}
	}
	return false
}

// ServiceEntryHost is a host of a route that a ServiceEntry takes.
type ServiceEntryHost struct {
	ServiceEntry mesh.ObjectRef `json:"serviceEntry"`
	Host         string         `json:"host"`
	// Waypoint is the istio.io/use-waypoint label of the entry, else of its namespace: the egress
	// waypoint that applies routes and policies for ambient clients; empty for none.
	Waypoint string `json:"waypoint,omitempty"`
}

// resolveServiceEntry finds the ServiceEntry visible to namespace ns (exportTo) that takes host:
// one of its spec.hosts equal to it, or a wildcard "*.example.com" it falls under. istiod matches
// route hosts against the registry of Services and ServiceEntries alike (istio/istio@86c9f01fd735
// pilot/pkg/model/push_context.go, ServiceForHostname).
func resolveServiceEntry(s *mesh.Snapshot, host, ns string) *mesh.IstioConfig {
	for i := range s.IstioConfig {
		c := &s.IstioConfig[i]
		if c.Kind != "ServiceEntry" || c.APIGroup() != mesh.GroupNetworking || !exportedTo(*c, ns) {
			continue
		}
		hosts, _ := c.Spec["hosts"].([]any)
		for _, h := range hosts {
			eh, _ := h.(string)
			if eh == host || (strings.HasPrefix(eh, "*.") && strings.HasSuffix(host, eh[1:])) {
				return c
			}
		}
	}
	return nil
}

// egressWaypoint is the waypoint a ServiceEntry uses: its istio.io/use-waypoint label, else its
// namespace's ("none" means none).
func egressWaypoint(s *mesh.Snapshot, c mesh.IstioConfig) string {
	w, ok := c.Labels[mesh.LabelUseWaypoint]
	if !ok {
		for _, n := range s.Namespaces {
			if n.Name == c.Namespace {
				w = n.Labels[mesh.LabelUseWaypoint]
			}
		}
	}
	if w == "none" {
		return ""
	}
	return w
}

// resolveHost finds the Service a VirtualService or DestinationRule host names: "name" in the
// object's namespace, "name.ns", "name.ns.svc" or "name.ns.svc.<domain>".
func resolveHost(s *mesh.Snapshot, host, ns string) *mesh.Service {
	parts := strings.Split(host, ".")
	name := parts[0]
	switch {
	case strings.Contains(host, "*"):
		return nil
	case len(parts) == 1:
	case len(parts) == 2 || parts[2] == "svc":
		ns = parts[1]
	default:
		return nil
	}
	for i := range s.Services {
		if s.Services[i].Namespace == ns && s.Services[i].Name == name {
			return &s.Services[i]
		}
	}
	return nil
}

func judgeDestinationRule(v *RouteVerdict, m *networkingv1.DestinationRule) {
	if tp := m.GetTrafficPolicy(); tp != nil {
		v.TrafficPolicy = true
		v.TLSOrigination = originatesTLS(tp.GetTls())
		for _, pl := range tp.GetPortLevelSettings() {
			v.TLSOrigination = v.TLSOrigination || originatesTLS(pl.GetTls())
		}
		if tp.GetTls() != nil {
			v.Untranslatable = append(v.Untranslatable, "trafficPolicy.tls: between ambient workloads HBONE carries mTLS; a BackendTLSPolicy is the Gateway API form for other TLS")
		}
	}
	for _, sub := range m.GetSubsets() {
		v.Untranslatable = append(v.Untranslatable, fmt.Sprintf("subsets[%s]: HTTPRoute routes to Services, not label subsets; make one Service per subset", sub.GetName()))
		if sub.GetTrafficPolicy() != nil {
			v.TrafficPolicy = true
		}
	}
	if len(m.GetExportTo()) > 0 {
		v.Untranslatable = append(v.Untranslatable, "exportTo: Gateway API has no visibility setting")
	}
	if m.GetWorkloadSelector() != nil {
		v.Untranslatable = append(v.Untranslatable, "workloadSelector: applies to sidecars only")
	}
}

// judgeVirtualService fills v and returns the proposed HTTPRoute, or nil when nothing mechanical
// can be proposed (no Service among the hosts, or no mesh traffic).
func judgeVirtualService(s *mesh.Snapshot, v *RouteVerdict, p mesh.Policy, m *networkingv1.VirtualService) *Proposal {
	v.MeshTraffic = len(m.GetGateways()) == 0
	for _, g := range m.GetGateways() {
		if g == "mesh" {
			v.MeshTraffic = true
		} else {
			v.Gateways = append(v.Gateways, g)
		}
	}
	if !v.MeshTraffic {
		return nil
	}
	bad := func(field, why string) { v.Untranslatable = append(v.Untranslatable, field+": "+why) }
	if len(m.GetTcp()) > 0 {
		bad("tcp", "HTTPRoute carries HTTP only; TCPRoute is experimental in Gateway API v1.6.3")
	}
	if len(m.GetTls()) > 0 {
		bad("tls", "HTTPRoute carries HTTP only; TLSRoute has no mesh (Service parent) support")
	}
	if len(m.GetExportTo()) > 0 {
		bad("exportTo", "Gateway API has no visibility setting")
	}
	if len(v.Services) == 0 {
		return nil
	}
	route := httpRoute{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute",
		Metadata: objectMeta{Name: p.Name, Namespace: p.Namespace, Annotations: map[string]string{annotationReplaces: p.Ref().String()}}}
	for _, svc := range v.Services {
		ref := parentRef{Group: ptr(""), Kind: ptr("Service"), Name: svc.Name}
		if svc.Namespace != p.Namespace {
			ref.Namespace = ptr(svc.Namespace)
		}
		route.Spec.ParentRefs = append(route.Spec.ParentRefs, ref)
	}
	for i, h := range m.GetHttp() {
		rule, ok := translateHTTP(s, p.Namespace, fmt.Sprintf("http[%d]", i), h, bad)
		if ok {
			route.Spec.Rules = append(route.Spec.Rules, rule)
		} else {
			bad(fmt.Sprintf("http[%d]", i), "left out of the proposed HTTPRoute; write it by hand")
		}
	}
	if len(route.Spec.Rules) == 0 && len(m.GetHttp()) > 0 {
		return nil // every rule needs a hand translation: an HTTPRoute without them would route differently
	}
	obj, err := structToMap(route)
	if err != nil { // cannot happen: the route holds strings and numbers only
		return nil
	}
	prop := &Proposal{For: p.Ref(), Object: obj}
	prop.Notes = append(prop.Notes, v.Untranslatable...)
	for _, h := range v.UnresolvedHosts {
		prop.Notes = append(prop.Notes, fmt.Sprintf("host %s names no Service in the snapshot: not a parentRef", h))
	}
	sort.Strings(prop.Notes)
	return prop
}

const annotationReplaces = "ambientkit.io/replaces"

// translateHTTP turns one VirtualService HTTP route into an HTTPRoute rule. It reports every field
// it cannot carry through bad; ok is false when the rule would route somewhere else than written
// (a subset, a delegate, a direct response), so it is left out.
func translateHTTP(s *mesh.Snapshot, ns, at string, h *networkingv1.HTTPRoute, bad func(field, why string)) (rule httpRouteRule, ok bool) {
	ok = true
	for j, mt := range h.GetMatch() {
		out, fine := translateMatch(fmt.Sprintf("%s.match[%d]", at, j), mt, bad)
		ok = ok && fine
		rule.Matches = append(rule.Matches, out)
	}
	for k, d := range h.GetRoute() {
		dat := fmt.Sprintf("%s.route[%d]", at, k)
		ref, fine := backendFor(s, ns, dat, d.GetDestination(), bad)
		if !fine {
			ok = false
			continue
		}
		b := httpBackendRef{backendObjectReference: ref}
		if len(h.GetRoute()) > 1 || d.GetWeight() != 0 {
			b.Weight = ptr(d.GetWeight())
		}
		b.Filters = headerFilters(d.GetHeaders())
		rule.BackendRefs = append(rule.BackendRefs, b)
	}
	rule.Filters = headerFilters(h.GetHeaders())
	if r := h.GetRedirect(); r != nil {
		rule.Filters = append(rule.Filters, redirectFilter(at, r, bad))
	}
	if rw := h.GetRewrite(); rw != nil {
		f, fine := rewriteFilter(at, h, rw, bad)
		ok = ok && fine
		rule.Filters = append(rule.Filters, f)
	}
	if t := h.GetTimeout(); t != nil {
		if d, fine := gatewayDuration(t); fine {
			rule.Timeouts = &httpRouteTimeouts{Request: ptr(d)}
		} else {
			bad(at+".timeout", "not expressible as a Gateway API duration")
		}
	}
	rule.Filters = append(rule.Filters, mirrorFilters(s, ns, at, h, bad)...)
	return rule, untranslatableHTTP(at, h, bad) && ok
}

// translateMatch turns one HTTPMatchRequest into an HTTPRouteMatch; ok is false when a condition
// cannot be carried, so the rule would match other requests.
func translateMatch(mat string, mt *networkingv1.HTTPMatchRequest, bad func(field, why string)) (out httpRouteMatch, ok bool) {
	ok = true
	if u := mt.GetUri(); u != nil {
		switch {
		case u.GetExact() != "":
			out.Path = &httpPathMatch{Type: ptr("Exact"), Value: ptr(u.GetExact())}
		case u.GetPrefix() != "":
			out.Path = &httpPathMatch{Type: ptr("PathPrefix"), Value: ptr(u.GetPrefix())}
			if p := u.GetPrefix(); p != "/" && !strings.HasSuffix(p, "/") {
				bad(mat+".uri.prefix", fmt.Sprintf("PathPrefix %q matches whole path segments, so it no longer matches %sx", p, p))
			}
		case u.GetRegex() != "":
			out.Path = &httpPathMatch{Type: ptr("RegularExpression"), Value: ptr(u.GetRegex())}
		}
	}
	for _, name := range sortedMapKeys(mt.GetHeaders()) {
		sm := mt.GetHeaders()[name]
		switch {
		case sm.GetExact() != "":
			out.Headers = append(out.Headers, httpHeaderMatch{Type: ptr("Exact"), Name: name, Value: sm.GetExact()})
		case sm.GetRegex() != "":
			out.Headers = append(out.Headers, httpHeaderMatch{Type: ptr("RegularExpression"), Name: name, Value: sm.GetRegex()})
		default:
			bad(mat+".headers."+name, "HTTPRoute matches headers exactly or by regular expression only")
			ok = false
		}
	}
	for _, name := range sortedMapKeys(mt.GetQueryParams()) {
		sm := mt.GetQueryParams()[name]
		switch {
		case sm.GetExact() != "":
			out.QueryParams = append(out.QueryParams, httpQueryParamMatch{Type: ptr("Exact"), Name: name, Value: sm.GetExact()})
		case sm.GetRegex() != "":
			out.QueryParams = append(out.QueryParams, httpQueryParamMatch{Type: ptr("RegularExpression"), Name: name, Value: sm.GetRegex()})
		default:
			bad(mat+".queryParams."+name, "HTTPRoute matches query parameters exactly or by regular expression only")
			ok = false
		}
	}
	if me := mt.GetMethod(); me != nil {
		if me.GetExact() != "" {
			out.Method = ptr(me.GetExact())
		} else {
			bad(mat+".method", "HTTPRoute matches one exact method")
			ok = false
		}
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"authority", mt.GetAuthority() != nil}, {"gateways", len(mt.GetGateways()) > 0}, {"ignoreUriCase", mt.GetIgnoreUriCase()},
		{"port", mt.GetPort() != 0}, {"scheme", mt.GetScheme() != nil}, {"sourceLabels", len(mt.GetSourceLabels()) > 0},
		{"sourceNamespace", mt.GetSourceNamespace() != ""}, {"withoutHeaders", len(mt.GetWithoutHeaders()) > 0},
	} {
		if f.set {
			bad(mat+"."+f.name, "no HTTPRoute match field")
			ok = false
		}
	}
	return out, ok
}

// redirectFilter is the RequestRedirect filter of an HTTPRedirect.
func redirectFilter(at string, r *networkingv1.HTTPRedirect, bad func(field, why string)) httpRouteFilter {
	rd := &httpRequestRedirect{StatusCode: ptr(301)} // Istio's default; Gateway API's is 302
	if r.GetRedirectCode() != 0 {
		rd.StatusCode = ptr(int(r.GetRedirectCode()))
	}
	if r.GetUri() != "" {
		rd.Path = &httpPathModifier{Type: "ReplaceFullPath", ReplaceFullPath: ptr(r.GetUri())}
	}
	if r.GetAuthority() != "" {
		rd.Hostname = ptr(r.GetAuthority())
	}
	if r.GetScheme() != "" {
		rd.Scheme = ptr(r.GetScheme())
	}
	if r.GetPort() != 0 {
		rd.Port = ptr(int32(r.GetPort()))
	}
	if r.GetDerivePort() != 0 {
		bad(at+".redirect.derivePort", "no HTTPRoute equivalent")
	}
	return httpRouteFilter{Type: "RequestRedirect", RequestRedirect: rd}
}

// rewriteFilter is the URLRewrite filter of an HTTPRewrite; ok is false when the path rewrite
// cannot be expressed.
func rewriteFilter(at string, h *networkingv1.HTTPRoute, rw *networkingv1.HTTPRewrite, bad func(field, why string)) (httpRouteFilter, bool) {
	ok := true
	u := &httpURLRewrite{}
	if rw.GetAuthority() != "" {
		u.Hostname = ptr(rw.GetAuthority())
	}
	if rw.GetUri() != "" {
		if allPrefixMatches(h) {
			u.Path = &httpPathModifier{Type: "ReplacePrefixMatch", ReplacePrefixMatch: ptr(rw.GetUri())}
		} else {
			bad(at+".rewrite.uri", "HTTPRoute replaces a path prefix only after a PathPrefix match")
			ok = false
		}
	}
	if rw.GetUriRegexRewrite() != nil {
		bad(at+".rewrite.uriRegexRewrite", "no HTTPRoute equivalent")
		ok = false
	}
	return httpRouteFilter{Type: "URLRewrite", URLRewrite: u}, ok
}

// mirrorFilters are the RequestMirror filters of mirror (with mirrorPercentage or the older
// mirrorPercent) and mirrors.
func mirrorFilters(s *mesh.Snapshot, ns, at string, h *networkingv1.HTTPRoute, bad func(field, why string)) []httpRouteFilter {
	var out []httpRouteFilter
	mirrors := h.GetMirrors()
	if m := h.GetMirror(); m != nil {
		mirrors = append([]*networkingv1.HTTPMirrorPolicy{{Destination: m, Percentage: h.GetMirrorPercentage()}}, mirrors...)
		if h.GetMirrorPercent() != nil && h.GetMirrorPercentage() == nil {
			mirrors[0].Percentage = &networkingv1.Percent{Value: float64(h.GetMirrorPercent().GetValue())}
		}
	}
	for k, mp := range mirrors {
		mat := fmt.Sprintf("%s.mirrors[%d]", at, k)
		ref, fine := backendFor(s, ns, mat, mp.GetDestination(), bad)
		if !fine {
			continue
		}
		f := &httpRequestMirrorFilter{BackendRef: ref}
		if pc := mp.GetPercentage(); pc != nil {
			if v := pc.GetValue(); v == math.Trunc(v) && v >= 0 && v <= 100 {
				f.Percent = ptr(int32(v))
			} else {
				bad(mat+".percentage", "HTTPRoute mirrors a whole percentage")
			}
		}
		out = append(out, httpRouteFilter{Type: "RequestMirror", RequestMirror: f})
	}
	return out
}

// untranslatableHTTP reports the fields of a route no HTTPRoute carries; false when the rule would
// then route somewhere else than written (a delegate, a direct response).
func untranslatableHTTP(at string, h *networkingv1.HTTPRoute, bad func(field, why string)) bool {
	ok := true
	if h.GetRetries() != nil {
		bad(at+".retries", "HTTPRoute retry is experimental in Gateway API v1.6.3 (HTTPRouteRetry); set it by hand on the experimental channel")
	}
	if h.GetFault() != nil {
		bad(at+".fault", "Gateway API has no fault injection")
	}
	if h.GetCorsPolicy() != nil {
		bad(at+".corsPolicy", "HTTPRoute's CORS filter matches origins differently; translate it by hand")
	}
	if h.GetDelegate() != nil {
		bad(at+".delegate", "Gateway API has no route delegation to VirtualServices")
		ok = false
	}
	if h.GetDirectResponse() != nil {
		bad(at+".directResponse", "Gateway API has no direct response")
		ok = false
	}
	return ok
}

func allPrefixMatches(h *networkingv1.HTTPRoute) bool {
	if len(h.GetMatch()) == 0 {
		return false
	}
	for _, m := range h.GetMatch() {
		if m.GetUri().GetPrefix() == "" {
			return false
		}
	}
	return true
}

// backendFor names the Service a destination goes to, with its port.
func backendFor(s *mesh.Snapshot, ns, at string, d *networkingv1.Destination, bad func(field, why string)) (backendObjectReference, bool) {
	svc := resolveHost(s, d.GetHost(), ns)
	if svc == nil {
		bad(at+".destination.host", fmt.Sprintf("%s names no Service in the snapshot (a ServiceEntry or external host)", d.GetHost()))
		return backendObjectReference{}, false
	}
	if d.GetSubset() != "" {
		bad(at+".destination.subset", fmt.Sprintf("subset %q: HTTPRoute routes to Services, not subsets; make one Service per subset", d.GetSubset()))
		return backendObjectReference{}, false
	}
	ref := backendObjectReference{Name: svc.Name}
	if svc.Namespace != ns {
		ref.Namespace = ptr(svc.Namespace)
	}
	switch {
	case d.GetPort().GetNumber() != 0:
		ref.Port = ptr(int32(d.GetPort().GetNumber()))
	case len(svc.Ports) == 1:
		ref.Port = ptr(svc.Ports[0].Port)
	default:
		bad(at+".destination.port", fmt.Sprintf("Service %s has %d ports; an HTTPRoute backend needs one", svc.Ref(), len(svc.Ports)))
		return backendObjectReference{}, false
	}
	return ref, true
}

func headerFilters(h *networkingv1.Headers) []httpRouteFilter {
	var out []httpRouteFilter
	if f := headerFilter(h.GetRequest()); f != nil {
		out = append(out, httpRouteFilter{Type: "RequestHeaderModifier", RequestHeaderModifier: f})
	}
	if f := headerFilter(h.GetResponse()); f != nil {
		out = append(out, httpRouteFilter{Type: "ResponseHeaderModifier", ResponseHeaderModifier: f})
	}
	return out
}

func headerFilter(op *networkingv1.Headers_HeaderOperations) *httpHeaderFilter {
	if op == nil || len(op.GetSet())+len(op.GetAdd())+len(op.GetRemove()) == 0 {
		return nil
	}
	f := &httpHeaderFilter{Remove: op.GetRemove()}
	for _, k := range sortedMapKeys(op.GetSet()) {
		f.Set = append(f.Set, httpHeader{Name: k, Value: op.GetSet()[k]})
	}
	for _, k := range sortedMapKeys(op.GetAdd()) {
		f.Add = append(f.Add, httpHeader{Name: k, Value: op.GetAdd()[k]})
	}
	return f
}

// gatewayDuration writes a duration the Gateway API way (^([0-9]{1,5}(h|m|s|ms)){1,4}$).
func gatewayDuration(d *durationpb.Duration) (string, bool) {
	if d.GetSeconds() < 0 || d.GetNanos() < 0 || d.GetNanos()%1e6 != 0 {
		return "", false
	}
	ms := d.GetSeconds()*1000 + int64(d.GetNanos()/1e6)
	if ms == 0 {
		return "0s", true
	}
	var b strings.Builder
	for _, u := range []struct {
		unit string
		size int64
	}{{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}} {
		if n := ms / u.size; n > 0 {
			if n > 99999 {
				return "", false
			}
			fmt.Fprintf(&b, "%d%s", n, u.unit)
			ms -= n * u.size
		}
	}
	return b.String(), true
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// originatesTLS: TLS mode SIMPLE or MUTUAL makes the client's proxy open TLS to the destination
// (ISTIO_MUTUAL is the mesh's own mTLS, which HBONE carries in ambient).
func originatesTLS(t *networkingv1.ClientTLSSettings) bool {
	mode := t.GetMode()
	return mode == networkingv1.ClientTLSSettings_SIMPLE || mode == networkingv1.ClientTLSSettings_MUTUAL
}
