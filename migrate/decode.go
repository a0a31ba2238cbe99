package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/api/networking/v1"
	securityv1 "istio.io/api/security/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// ErrPolicyInvalid is wrapped by every error about a policy spec that does not decode into its Istio
// type: an unknown or misspelt field, a value of the wrong type, an unknown enum value.
var ErrPolicyInvalid = errors.New("policy spec does not decode")

// ErrKindUnknown is wrapped when a policy's kind has no typed decoding here.
var ErrKindUnknown = errors.New("policy kind is not decoded")

// strict rejects unknown fields, so that a misspelt field is an error and never a silently dropped
// rule.
var strict = protojson.UnmarshalOptions{DiscardUnknown: false}

// DecodePolicy decodes the observed spec of an Istio policy strictly into its istio.io/api type:
// *securityv1.AuthorizationPolicy, *securityv1.PeerAuthentication, *securityv1.RequestAuthentication,
// *networkingv1.VirtualService or *networkingv1.DestinationRule. An empty spec decodes to the zero
// message. Errors wrap ErrPolicyInvalid (naming the policy and the field) or ErrKindUnknown.
func DecodePolicy(p mesh.Policy) (proto.Message, error) {
	var m proto.Message
	switch p.Kind {
	case "AuthorizationPolicy":
		m = &securityv1.AuthorizationPolicy{}
	case "PeerAuthentication":
		m = &securityv1.PeerAuthentication{}
	case "RequestAuthentication":
		m = &securityv1.RequestAuthentication{}
	case "VirtualService":
		m = &networkingv1.VirtualService{}
	case "DestinationRule":
		m = &networkingv1.DestinationRule{}
	default:
		return nil, fmt.Errorf("%w: %s; only AuthorizationPolicy, PeerAuthentication, RequestAuthentication, VirtualService and DestinationRule are", ErrKindUnknown, p.Ref())
	}
	if len(p.Spec) == 0 {
		return m, nil
	}
	b, err := json.Marshal(p.Spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrPolicyInvalid, p.Ref(), err)
	}
	if err := strict.Unmarshal(b, m); err != nil {
		return nil, &decodeError{policy: p, err: err}
	}
	return m, nil
}

// decodeError wraps ErrPolicyInvalid and the protojson error. Its text is made stable: protojson
// randomly puts a no-break space in its messages to stop callers from matching them, and plan output
// must not change from one run to the next.
type decodeError struct {
	policy mesh.Policy
	err    error
}

// Error names the policy, the field and the fix.
func (e *decodeError) Error() string {
	msg := strings.ReplaceAll(e.err.Error(), "\u00a0", " ")
	return fmt.Sprintf("%v: %s: %s; fix the field (kubectl edit %s) so that istiod and this plan read the same rules",
		ErrPolicyInvalid, e.policy.Ref(), msg, kubectlName(e.policy))
}

// Unwrap gives ErrPolicyInvalid and the protojson error.
func (e *decodeError) Unwrap() []error { return []error{ErrPolicyInvalid, e.err} }

func kubectlName(p mesh.Policy) string {
	return fmt.Sprintf("%s %s -n %s", strings.ToLower(p.Kind), p.Name, p.Namespace)
}

// toMap marshals a typed message to JSON data (map[string]any), the form a plan step applies.
func toMap(m proto.Message) (map[string]any, error) {
	b, err := protojson.MarshalOptions{}.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
