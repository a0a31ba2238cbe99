// Package migrate plans the move of namespaces from sidecar mode to ambient mode, one namespace at a
// time, each step gated and reversible, and classifies the policies that change meaning on the way:
// selector-based L7 AuthorizationPolicies become deny-all under ztunnel, L4 ones keep working.
// Everything here is pure.
package migrate
