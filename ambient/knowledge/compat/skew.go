package compat

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// The hazards of the window between an istiod upgrade and ztunnel's: a newer istiod sends ztunnel
// something an older ztunnel does not understand. Their ranges come from the advisories data (the
// entries below, each with its upstream release note); the rules say which objects are hit.
const (
	// advisoryServiceEntryNone: from 1.28 istiod sends a ServiceEntry with resolution NONE to
	// ztunnel as a passthrough service, which ztunnels before 1.28 NACK (istio/istio release-1.28
	// releasenotes/notes/57656.yaml; pilot/pkg/serviceregistry/ambient/serviceentry.go @1.28.0).
	advisoryServiceEntryNone = "istio#57656"
	// advisoryDryRun: with AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true a 1.29 istiod sends
	// dry-run policies to ztunnel in a field ztunnels before 1.29 ignore, so they enforce them
	// (istio/istio release-1.29 releasenotes/notes/authz-dry-run-ambient.yaml; the variable in
	// pilot/pkg/features/ambient.go @1.29.0).
	advisoryDryRun = "istio-note/authz-dry-run-ambient"
	envDryRun      = mesh.EnvDryRunAuthz
)

// skewWindow is one ztunnel DaemonSet and the istiod version it talks to while it still runs its
// own version: the target of an in-place upgrade (istiod moves first), else the running version of
// the revision it connects to (a revision upgrade moves ztunnel to the new revision with its own
// upgrade).
type skewWindow struct {
	z      mesh.Ztunnel
	rev    mesh.Revision
	istiod mesh.Version
}

func skewWindows(s *mesh.Snapshot, target mesh.Version, inPlace bool) []skewWindow {
	var out []skewWindow
	for _, z := range s.Ztunnels {
		name, ok := s.ZtunnelRevision(z)
		if !ok || z.Version.IsZero() {
			continue
		}
		r, ok := s.Revision(name)
		if !ok {
			continue
		}
		v := r.Version
		if inPlace && !target.IsZero() && v.Less(target) {
			v = target
		}
		out = append(out, skewWindow{z: z, rev: r, istiod: v})
	}
	return out
}

// skewRules are the window's hazards for the ztunnels of the mesh; data nil means
// advisories.Default().
func skewRules(s *mesh.Snapshot, target mesh.Version, inPlace bool, data *advisories.Data) []plan.Finding {
	if data == nil {
		data = advisories.Default()
	}
	var out []plan.Finding
	for _, w := range skewWindows(s, target, inPlace) {
		if a, since, ok := skewAdvisory(data, advisoryServiceEntryNone, w); ok {
			out = append(out, serviceEntryNoneSkew(s, w, a, since)...)
		}
		if a, since, ok := skewAdvisory(data, advisoryDryRun, w); ok && w.rev.Settings[envDryRun] == "true" {
			out = append(out, dryRunSkew(s, w, a, since)...)
		}
	}
	return out
}

// skewAdvisory returns advisory id when it affects w's ztunnel and w's istiod is at or past the
// release that brought the change (its first fixed version: istiod and ztunnel change together).
func skewAdvisory(data *advisories.Data, id string, w skewWindow) (advisories.Advisory, mesh.Version, bool) {
	a, ok := data.Advisory(id)
	if !ok || len(a.FixedIn) == 0 || !a.Affects(w.z.Version) {
		return advisories.Advisory{}, mesh.Version{}, false
	}
	since := a.FixedIn[0].Version
	for _, f := range a.FixedIn[1:] {
		if f.Version.Less(since) {
			since = f.Version
		}
	}
	if w.istiod.Less(since) {
		return advisories.Advisory{}, mesh.Version{}, false
	}
	return a, since, true
}

func serviceEntryNoneSkew(s *mesh.Snapshot, w skewWindow, a advisories.Advisory, since mesh.Version) []plan.Finding {
	when := "sends"
	if w.rev.Version.Less(since) {
		when = "will send"
	}
	var out []plan.Finding
	for _, c := range s.IstioConfig {
		if c.Kind != "ServiceEntry" || c.Spec["resolution"] != "NONE" {
			continue
		}
		out = append(out, plan.Finding{Code: plan.CodeServiceEntryNackedByOldZtunnel, Severity: plan.Waivable,
			Object: c.Ref(), Related: []mesh.ObjectRef{w.z.Ref()}, Component: w.z.Component(),
			Message: fmt.Sprintf("%s has resolution NONE: istiod %s %s it to ztunnel as a passthrough service, which ztunnel %s (%s) rejects until it is upgraded; meanwhile new or changed such entries act as if absent (%s)",
				c.Ref(), w.istiod, when, w.z.Version, w.z.Ref(), a.ID),
			Remedy:  fmt.Sprintf("keep the window between the istiod and the ztunnel upgrades short and change no resolution NONE ServiceEntry until every ztunnel runs %s or later", since),
			Details: map[string]string{"advisory": a.ID, "istiod": w.istiod.String(), "ztunnel": w.z.Version.String(), "ztunnelFixedIn": since.String()}})
	}
	return out
}

func dryRunSkew(s *mesh.Snapshot, w skewWindow, a advisories.Advisory, since mesh.Version) []plan.Finding {
	// Already running past the change, the break is now and upgrading ztunnel ends it: waivable, so
	// the plan that does it can run. A plan that opens the window is blocked until the flag is off.
	sev, when := plan.Waivable, "sends"
	if w.rev.Version.Less(since) {
		sev, when = plan.Blocking, "will send"
	}
	ambient := map[string]bool{w.rev.Namespace: true} // the root namespace's policies apply mesh-wide
	for _, n := range s.Namespaces {
		ambient[n.Name] = ambient[n.Name] || n.Ambient()
	}
	var out []plan.Finding
	for _, p := range s.Policies {
		if p.Kind != "AuthorizationPolicy" || p.Annotations["istio.io/dry-run"] != "true" || !ambient[p.Namespace] {
			continue
		}
		out = append(out, plan.Finding{Code: plan.CodeDryRunPolicyEnforcedByOldZtunnel, Severity: sev,
			Object: p.Ref(), Related: []mesh.ObjectRef{w.z.Ref(), {Kind: "Deployment", Namespace: w.rev.Namespace, Name: w.rev.Deployment}}, Component: w.z.Component(),
			Message: fmt.Sprintf("%s is a dry-run policy: istiod %s (revision %s, %s=true) %s it to ztunnel %s (%s), which does not know the dry-run field and enforces it for real (%s)",
				p.Ref(), w.istiod, w.rev.Name, envDryRun, when, w.z.Version, w.z.Ref(), a.ID),
			Remedy:  fmt.Sprintf("unset %s on revision %s until every ztunnel connected to it runs %s or later", envDryRun, w.rev.Name, since),
			Details: map[string]string{"advisory": a.ID, "istiod": w.istiod.String(), "ztunnel": w.z.Version.String(), "ztunnelFixedIn": since.String()}})
	}
	return out
}
