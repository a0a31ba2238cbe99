package compat

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// installed is one running instance of an advisory component.
type installed struct {
	component advisories.Component
	version   mesh.Version
	object    mesh.ObjectRef
}

// installedComponents lists every instance of the advisory components the snapshot shows, with
// its running version. The istioctl binary's version is not in a cluster, and is left out.
func installedComponents(s *mesh.Snapshot) []installed {
	var out []installed
	for _, r := range s.Revisions {
		out = append(out, installed{advisories.Istiod, r.Version, mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}})
	}
	if s.CNI != nil {
		out = append(out, installed{advisories.CNI, s.CNI.Version, mesh.ObjectRef{Kind: "DaemonSet", Namespace: s.CNI.Namespace, Name: s.CNI.Name}})
	}
	for _, z := range s.Ztunnels {
		out = append(out, installed{advisories.Ztunnel, z.Version, z.Ref()})
	}
	for _, g := range s.Gateways {
		c := advisories.Gateway
		if g.Waypoint {
			c = advisories.Waypoint
		}
		for _, v := range g.Versions {
			out = append(out, installed{c, v, g.Ref()})
		}
	}
	for _, h := range s.HelmReleases {
		if h.Chart == "base" {
			if v, err := mesh.ParseVersion(h.ChartVersion); err == nil {
				out = append(out, installed{advisories.Base, v, mesh.ObjectRef{Kind: "HelmRelease", Namespace: h.Namespace, Name: h.Name}})
			}
		}
	}
	return out
}

// advisoryFacts decides the conditions the snapshot can decide; the rest stay undecided
// (advisories.Facts: a kind missing from Flags is unknown).
func advisoryFacts(s *mesh.Snapshot) advisories.Facts {
	f := advisories.Facts{Workloads: workloadCount(s), Flags: map[advisories.ConditionKind]bool{}}
	if s.CNI != nil {
		if v, ok := s.CNI.Config["AMBIENT_ENABLED"]; ok {
			f.Flags[advisories.CNIAmbientDisabled] = v != "true"
		}
	}
	untaint, known := false, true
	for _, r := range s.Revisions {
		v, set, ok := r.Setting(mesh.EnvUntaintControllers)
		if !ok {
			known = false
		}
		if set && v == "true" {
			untaint = true
		}
	}
	if known || untaint {
		f.Flags[advisories.UntaintController] = untaint
	}
	if len(s.Revisions) > 0 {
		f.Flags[advisories.NoDefaultRevision] = s.DefaultOwner() == ""
	}
	// A compatibility check removes no tag; a plan that does decides it for itself.
	f.Flags[advisories.RemovesDefaultTag] = false
	return f
}

// workloadCount is what istiod pushes to ztunnel that the snapshot counts: every pod of every
// namespace, and the Services it read. 0 when the snapshot counted nothing.
func workloadCount(s *mesh.Snapshot) int {
	n := len(s.Services)
	for _, ns := range s.Namespaces {
		n += ns.Pods.Total
	}
	return n
}

// advisoryRules reports the advisories that bite the running versions, and those that bite the
// target, each with the newest patch of the line that is not affected. Conditions the snapshot
// cannot decide are listed together in one info finding rather than guessed.
//
// Only advisories that bite during an operation in ops (or at any time) count, and not those that
// list objects left behind: planners turn those into cleanup steps (revision.AddRemoval).
func advisoryRules(s *mesh.Snapshot, adv *advisories.Data, rel *releases.Data, target mesh.Version, ops []advisories.When) []plan.Finding {
	facts := advisoryFacts(s)
	relevant := func(a advisories.Advisory, running bool) bool {
		if len(a.Cleanup) > 0 {
			return false
		}
		for _, w := range a.When {
			if running && slices.Contains(ownStart(a.Component), w) {
				continue // what starts then runs the target version
			}
			if w == advisories.SteadyState || slices.Contains(ops, w) {
				return true
			}
		}
		return false
	}
	var out []plan.Finding
	undecided := map[string][]string{}
	byAdvisory := map[string][]installed{}
	for _, in := range installedComponents(s) {
		for _, a := range adv.Affecting(in.component, in.version) {
			if !relevant(a, true) {
				continue
			}
			ok, unknown := a.Applies(in.version, facts)
			switch {
			case ok && len(unknown) == 0:
				byAdvisory[a.ID] = append(byAdvisory[a.ID], in)
			case ok:
				undecided[a.ID] = conditionNames(unknown)
			}
		}
	}
	for _, id := range sortedKeys(byAdvisory) {
		a, _ := adv.Advisory(id)
		out = append(out, advisoryFinding(a, byAdvisory[id], rel, false))
	}
	if !target.IsZero() {
		for _, c := range advisories.Components() {
			for _, a := range adv.Affecting(c, target) {
				if !relevant(a, false) {
					continue
				}
				ok, unknown := a.Applies(target, facts)
				switch {
				case !ok || !hasComponent(s, c):
				case len(unknown) > 0:
					undecided[a.ID] = conditionNames(unknown)
				default:
					out = append(out, advisoryFinding(a, []installed{{c, target, targetObject(s, c)}}, rel, true))
				}
			}
		}
	}
	if len(undecided) > 0 {
		var parts []string
		for _, id := range sortedKeys(undecided) {
			parts = append(parts, fmt.Sprintf("%s (%s)", id, strings.Join(undecided[id], ", ")))
		}
		out = append(out, plan.Finding{Code: plan.CodeAdvisoryUndecided, Severity: plan.Info,
			Message:       fmt.Sprintf("whether these advisories of %s bite a running or the target version depends on what the snapshot cannot tell (%s): %s", adv.Origin(), plural(len(undecided), "advisory", "advisories"), strings.Join(parts, "; ")),
			Remedy:        "read each one in the advisory data (" + readAdvisory + ") and check its conditions by hand",
			RemedyOptions: []plan.RemedyOption{{Option: readAdvisory}},
			Details:       map[string]string{"advisories": strings.Join(sortedKeys(undecided), ",")}})
	}
	return out
}

// readAdvisory is how a caller reads one advisory by its id, as the undecided finding's remedy
// names it (a RemedyOption: a program says its own way).
const readAdvisory = "advisories.Default().Advisory(id)"

// ownStart are the operations that start a component anew: during an upgrade what starts then runs
// the target version, so an advisory of the running version that bites only then does not apply.
func ownStart(c advisories.Component) []advisories.When {
	switch c {
	case advisories.Istiod:
		return []advisories.When{advisories.IstiodRestart, advisories.InPlaceUpgrade, advisories.RevisionUpgrade}
	case advisories.CNI:
		return []advisories.When{advisories.CNIRestart, advisories.InPlaceUpgrade}
	case advisories.Ztunnel:
		return []advisories.When{advisories.ZtunnelRestart, advisories.InPlaceUpgrade}
	case advisories.Gateway, advisories.Waypoint:
		return []advisories.When{advisories.GatewayRevisionChange}
	}
	return nil
}

func hasComponent(s *mesh.Snapshot, c advisories.Component) bool {
	for _, in := range installedComponents(s) {
		if in.component == c {
			return true
		}
	}
	return false
}

// targetObject is the object a target finding names: the first running instance of the component.
func targetObject(s *mesh.Snapshot, c advisories.Component) mesh.ObjectRef {
	for _, in := range installedComponents(s) {
		if in.component == c {
			return in.object
		}
	}
	return mesh.ObjectRef{}
}

// advisoryFinding says which versions an advisory affects, what to do, and the way out: the newest
// patch of the line the release data knows that it does not affect, and the first fixed patch the
// advisory names. A target finding is waivable when that way out exists (choose it), and the
// advisory asks for no cleanup a plan makes steps of; everything else is info.
func advisoryFinding(a advisories.Advisory, ins []installed, rel *releases.Data, target bool) plan.Finding {
	v := ins[0].version
	known := knownPatches(rel, v)
	way := fmt.Sprintf("no %s patch the release data knows is unaffected", v.MinorString())
	newest, hasNewest := a.NewestUnaffected(v, known)
	if hasNewest && v.Less(newest) {
		way = fmt.Sprintf("the newest %s patch it does not affect is %s", v.MinorString(), newest)
	} else if f, ok := a.FixedPatch(v); ok {
		pending := ""
		if f.Pending {
			pending = ", not released yet"
		}
		way = fmt.Sprintf("its fix is in %s%s", f.Version, pending)
	} else if next, ok := a.FirstUnaffectedAfter(v, known); ok {
		way = fmt.Sprintf("the first release after %s it does not affect is %s", v, next)
	}
	side, code := "running", plan.CodeAdvisoryAffectsRunning
	if target {
		side, code = "target", plan.CodeAdvisoryAffectsTarget
	}
	var objs []string
	var related []mesh.ObjectRef
	for i, in := range ins {
		if target {
			objs = append(objs, fmt.Sprintf("%s, moving to %s", in.object, in.version))
		} else {
			objs = append(objs, fmt.Sprintf("%s %s", in.object, in.version))
		}
		if i > 0 {
			related = append(related, in.object)
		}
	}
	sev := plan.Info
	if target && hasNewest && v.Less(newest) && len(a.Cleanup) == 0 {
		sev = plan.Waivable
	}
	details := map[string]string{"advisory": a.ID, "component": string(a.Component), "version": v.String()}
	if hasNewest {
		details["newestUnaffected"] = newest.String()
	}
	return plan.Finding{Code: code, Severity: sev, Object: ins[0].object, Related: related, Component: string(a.Component),
		Message: fmt.Sprintf("advisory %s affects the %s %s (%s): %s; %s (%s)", a.ID, side, a.Component, strings.Join(objs, ", "), a.Title, way, a.Source.Issue),
		Remedy:  strings.Join(strings.Fields(a.Action), " "),
		Details: details}
}

// knownPatches are the versions of v's minor the release data lets a plan target.
func knownPatches(rel *releases.Data, v mesh.Version) []mesh.Version {
	m, ok := rel.Minor(v)
	if !ok {
		return nil
	}
	var out []mesh.Version
	for _, p := range m.Patches() {
		out = append(out, mesh.Version{Major: v.Major, Minor: v.Minor, Patch: p})
	}
	return out
}

func conditionNames(cs []advisories.Condition) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// untaintTaint is the taint a revision's node untaint controller removes, and whether it runs.
// istiod reads the name from PILOT_NODE_UNTAINT_CONTROLLERS_TAINT_NAME from the versions advisory
// istio#57844 names (1.30.3, 1.31.0: release note 59499.yaml; istio/istio@eed52ebb66ad
// pilot/pkg/features/pilot.go NodeUntaintTaintName); older versions always remove
// cni.istio.io/not-ready. known is false when a variable is set from a source the snapshot
// cannot read.
func untaintTaint(r mesh.Revision, adv *advisories.Data) (taint string, enabled, known bool) {
	on, _, okOn := r.Setting(mesh.EnvUntaintControllers)
	enabled, _ = strconv.ParseBool(on)
	taint = mesh.TaintCNINotReady
	if a, ok := adv.Advisory("istio#57844"); ok && a.Affects(r.Version) {
		name, set, okName := r.Setting(mesh.EnvUntaintTaintName)
		if !okName {
			return "", enabled, false
		}
		if set && name != "" {
			taint = name
		}
	}
	return taint, enabled, okOn
}

// untaintTaints is every taint name that marks a node whose istio-cni is not ready: the default,
// and each name a revision's untaint controller is configured to remove, with the revisions.
func untaintTaints(s *mesh.Snapshot, adv *advisories.Data) map[string][]string {
	out := map[string][]string{mesh.TaintCNINotReady: nil}
	for _, r := range s.Revisions {
		if t, on, ok := untaintTaint(r, adv); ok && on {
			out[t] = append(out[t], r.Name)
		}
	}
	return out
}

// checkGRPCLimit: from the versions advisory ztunnel#1966 names, a reconnecting ztunnel sends
// istiod the name and version of every workload it holds, which from about 40,000 workloads
// passes istiod's 4 MiB gRPC receive limit (ISTIO_GPRC_MAXRECVMSGSIZE, istio/istio@eed52ebb66ad
// pilot/pkg/features/tuning.go MaxRecvMsgSize; release note wds-reconnect-version-skip.yaml,
// istio#60935). For each revision that runs, or that the upgrade installs, on an affected version
// with a limit not raised past the estimate, a finding with the exact change.
func checkGRPCLimit(s *mesh.Snapshot, adv *advisories.Data, target mesh.Version) []plan.Finding {
	a, ok := adv.Advisory("ztunnel#1966")
	if !ok {
		return nil
	}
	workloads := workloadCount(s)
	threshold := 0
	for _, c := range a.Conditions {
		if c.Kind == advisories.MinWorkloads {
			threshold = c.Threshold
		}
	}
	if threshold == 0 || workloads < threshold || len(s.Ztunnels) == 0 {
		return nil
	}
	// The note budgets about 1 MiB per 10,000 workloads; twice that, rounded up to whole MiB.
	need := (workloads/10000 + 1) * 2 * 1024 * 1024
	var out []plan.Finding
	for _, r := range s.Revisions {
		affected := a.Affects(r.Version)
		on := r.Version
		if !affected && !target.IsZero() && a.Affects(target) {
			affected, on = true, target
		}
		if !affected {
			continue
		}
		v, set, known := r.Setting(mesh.EnvMaxRecvMsgSize)
		limit := mesh.DefaultMaxRecvMsgSize
		if set && known {
			if n, err := strconv.Atoi(v); err == nil {
				limit = n
			}
		}
		if known && limit >= need {
			continue
		}
		now := fmt.Sprintf("its limit is %d bytes", limit)
		if !known {
			now = "its limit is set from a source the snapshot cannot read"
		}
		out = append(out, plan.Finding{Code: plan.CodeIstiodGRPCLimitTooLow, Severity: plan.Waivable,
			Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}, Component: "istiod/" + r.Name,
			Message: fmt.Sprintf("the mesh has at least %d workloads and services; on istiod %s a reconnecting ztunnel's request grows past istiod's gRPC receive limit from about %d (advisory %s), and %s: ztunnels that restart reconnect in a loop (ResourceExhausted)",
				workloads, on, threshold, a.ID, now),
			Remedy: fmt.Sprintf("raise it before the upgrade: helm upgrade %s istio/istiod -n %s --reuse-values --set pilot.env.%s=%d (or kubectl -n %s set env deployment/%s %s=%d), then watch istiod's log for \"received message larger than max\"",
				orName(r.HelmRelease, "istiod"), r.Namespace, mesh.EnvMaxRecvMsgSize, need, r.Namespace, r.Deployment, mesh.EnvMaxRecvMsgSize, need),
			Details: map[string]string{"revision": r.Name, "workloads": strconv.Itoa(workloads), "limit": strconv.Itoa(limit), "need": strconv.Itoa(need)}})
	}
	return out
}

// Operations returns the operations an upgrade to target with the strategy performs, for
// Options.Operations: every istiod, CNI and ztunnel restart, and for a revision upgrade the install
// beside the old revision and its removal. No target: none.
func Operations(target mesh.Version, strategy Strategy) []advisories.When {
	if target.IsZero() {
		return nil
	}
	ops := []advisories.When{advisories.IstiodRestart, advisories.CNIRestart, advisories.ZtunnelRestart, advisories.GatewayRevisionChange}
	if strategy == StrategyInPlace {
		return append(ops, advisories.InPlaceUpgrade)
	}
	return append(ops, advisories.RevisionUpgrade, advisories.RevisionUninstall)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
