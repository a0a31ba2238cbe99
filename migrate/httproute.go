package migrate

// The HTTPRoute subset the translation writes. It mirrors sigs.k8s.io/gateway-api apis/v1 (v1.6.3,
// standard channel) field for field; the gateway-api Go types cannot be imported here because their
// dependencies include net/http, which planner packages may not use. A test decodes every emitted
// route into the real gatewayv1.HTTPRoute with unknown fields disallowed.

type httpRoute struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Metadata   objectMeta    `json:"metadata"`
	Spec       httpRouteSpec `json:"spec"`
}

type objectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type httpRouteSpec struct {
	ParentRefs []parentRef     `json:"parentRefs,omitempty"`
	Rules      []httpRouteRule `json:"rules,omitempty"`
}

type parentRef struct {
	Group     *string `json:"group,omitempty"`
	Kind      *string `json:"kind,omitempty"`
	Namespace *string `json:"namespace,omitempty"`
	Name      string  `json:"name"`
	Port      *int32  `json:"port,omitempty"`
}

type httpRouteRule struct {
	Matches     []httpRouteMatch   `json:"matches,omitempty"`
	Filters     []httpRouteFilter  `json:"filters,omitempty"`
	BackendRefs []httpBackendRef   `json:"backendRefs,omitempty"`
	Timeouts    *httpRouteTimeouts `json:"timeouts,omitempty"`
}

type httpRouteTimeouts struct {
	Request *string `json:"request,omitempty"`
}

type httpRouteMatch struct {
	Path        *httpPathMatch        `json:"path,omitempty"`
	Headers     []httpHeaderMatch     `json:"headers,omitempty"`
	QueryParams []httpQueryParamMatch `json:"queryParams,omitempty"`
	Method      *string               `json:"method,omitempty"`
}

type httpPathMatch struct {
	Type  *string `json:"type,omitempty"`
	Value *string `json:"value,omitempty"`
}

type httpHeaderMatch struct {
	Type  *string `json:"type,omitempty"`
	Name  string  `json:"name"`
	Value string  `json:"value"`
}

type httpQueryParamMatch struct {
	Type  *string `json:"type,omitempty"`
	Name  string  `json:"name"`
	Value string  `json:"value"`
}

type httpRouteFilter struct {
	Type                   string                   `json:"type"`
	RequestHeaderModifier  *httpHeaderFilter        `json:"requestHeaderModifier,omitempty"`
	ResponseHeaderModifier *httpHeaderFilter        `json:"responseHeaderModifier,omitempty"`
	RequestMirror          *httpRequestMirrorFilter `json:"requestMirror,omitempty"`
	RequestRedirect        *httpRequestRedirect     `json:"requestRedirect,omitempty"`
	URLRewrite             *httpURLRewrite          `json:"urlRewrite,omitempty"`
}

type httpHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type httpHeaderFilter struct {
	Set    []httpHeader `json:"set,omitempty"`
	Add    []httpHeader `json:"add,omitempty"`
	Remove []string     `json:"remove,omitempty"`
}

type backendObjectReference struct {
	Group     *string `json:"group,omitempty"`
	Kind      *string `json:"kind,omitempty"`
	Name      string  `json:"name"`
	Namespace *string `json:"namespace,omitempty"`
	Port      *int32  `json:"port,omitempty"`
}

type httpRequestMirrorFilter struct {
	BackendRef backendObjectReference `json:"backendRef"`
	Percent    *int32                 `json:"percent,omitempty"`
}

type httpPathModifier struct {
	Type               string  `json:"type"`
	ReplaceFullPath    *string `json:"replaceFullPath,omitempty"`
	ReplacePrefixMatch *string `json:"replacePrefixMatch,omitempty"`
}

type httpRequestRedirect struct {
	Scheme     *string           `json:"scheme,omitempty"`
	Hostname   *string           `json:"hostname,omitempty"`
	Path       *httpPathModifier `json:"path,omitempty"`
	Port       *int32            `json:"port,omitempty"`
	StatusCode *int              `json:"statusCode,omitempty"`
}

type httpURLRewrite struct {
	Hostname *string           `json:"hostname,omitempty"`
	Path     *httpPathModifier `json:"path,omitempty"`
}

type httpBackendRef struct {
	backendObjectReference
	Weight  *int32            `json:"weight,omitempty"`
	Filters []httpRouteFilter `json:"filters,omitempty"`
}

func ptr[T any](v T) *T { return &v }
