package migrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// PolicyClass says what happens to a policy when its namespace moves from sidecars to ambient.
type PolicyClass string

// Policy classes.
const (
	// KeepsWorking: an L4 policy ztunnel enforces as the sidecar did.
	KeepsWorking PolicyClass = "keeps-working"
	// NeedsWaypoint: a policy attached with targetRefs; it applies once a waypoint serves the target.
	NeedsWaypoint PolicyClass = "needs-waypoint"
	// DenyAllUnderZtunnel: a selector-based (or namespace-wide) policy with L7 rules. ztunnel cannot
	// evaluate them and enforces it as deny-all; it must be replaced by a targetRefs policy on a
	// waypoint and deleted (after a backup) as soon as the namespace is labelled.
	DenyAllUnderZtunnel PolicyClass = "deny-all-under-ztunnel"
	// BlocksMigration: a PeerAuthentication with mode DISABLE; ambient always uses mTLS between
	// ztunnels, so the migration must not start while it exists.
	BlocksMigration PolicyClass = "blocks-migration"
	// Unaffected: not an authorization or peer-authentication policy, or nothing changes for it.
	Unaffected PolicyClass = "unaffected"
)

// PolicyVerdict is the class of one policy with the reason and what to do.
type PolicyVerdict struct {
	Policy mesh.ObjectRef `json:"policy"`
	Class  PolicyClass    `json:"class"`
	Reason string         `json:"reason"`
	Remedy string         `json:"remedy,omitempty"`
}

// ClassifyPolicies classifies the AuthorizationPolicies and PeerAuthentications of the namespaces
// (every namespace when none is given, plus the mesh-wide ones of the namespace istiod runs in) by
// what moving to ambient does to them. The result is sorted by namespace, kind and name.
func ClassifyPolicies(s *mesh.Snapshot, namespaces ...string) []PolicyVerdict {
	want := map[string]bool{}
	for _, n := range namespaces {
		want[n] = true
	}
	var out []PolicyVerdict
	for _, p := range s.Policies {
		if len(want) > 0 && !want[p.Namespace] && !isRootNamespace(s, p.Namespace) {
			continue
		}
		out = append(out, classify(p))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Policy, out[j].Policy
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return out
}

func isRootNamespace(s *mesh.Snapshot, ns string) bool {
	for _, r := range s.Revisions {
		if r.Namespace == ns {
			return true
		}
	}
	return false
}

func classify(p mesh.Policy) PolicyVerdict {
	v := PolicyVerdict{Policy: p.Ref(), Class: Unaffected}
	switch p.Kind {
	case "AuthorizationPolicy":
		switch {
		case p.HasTargetRefs:
			v.Class = NeedsWaypoint
			v.Reason = "attached with targetRefs: a waypoint (or gateway) enforces it"
			v.Remedy = "make sure the target has a waypoint (istio.io/use-waypoint) before relying on it"
		case len(p.L7) > 0:
			v.Class = DenyAllUnderZtunnel
			scope := "its selector's workloads"
			if !p.HasSelector {
				scope = "every workload of the namespace"
			}
			v.Reason = fmt.Sprintf("L7 rules (%s) on %s: ztunnel cannot evaluate them and denies all", strings.Join(p.L7, ", "), scope)
			v.Remedy = "write the same rules as a targetRefs policy on a waypoint, then back up and delete this one right after the namespace is labelled for ambient"
		default:
			v.Class = KeepsWorking
			v.Reason = fmt.Sprintf("L4 only (%s): ztunnel enforces it", orAllow(p.Action))
		}
	case "PeerAuthentication":
		if p.Mode == "DISABLE" || hasDisabledPort(p.PortModes) {
			v.Class = BlocksMigration
			v.Reason = "mTLS DISABLE: ambient always uses mTLS between ztunnels"
			v.Remedy = "switch it to PERMISSIVE or STRICT before migrating the namespace"
		} else {
			v.Reason = fmt.Sprintf("mode %s: ztunnel honours it", p.Mode)
		}
	default:
		v.Reason = p.Kind + " is not an authorization policy"
	}
	return v
}

func orAllow(action string) string {
	if action == "" {
		return "ALLOW"
	}
	return action
}

func hasDisabledPort(modes []string) bool {
	for _, m := range modes {
		if strings.HasSuffix(m, "=DISABLE") {
			return true
		}
	}
	return false
}
