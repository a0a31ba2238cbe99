package migrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// API versions of the objects the plan writes and deletes.
const (
	gatewayAPIVersion  = "gateway.networking.k8s.io/v1"
	securityAPIVersion = "security.istio.io/v1"
	routingAPIVersion  = "networking.istio.io/v1"
	waypointClass      = "istio-waypoint"
)

// apiVersionOf is the version a policy was read in, or the one its kind is served in.
func apiVersionOf(p mesh.Policy) string {
	if p.APIVersion != "" {
		return p.APIVersion
	}
	switch p.Kind {
	case "VirtualService", "DestinationRule":
		return routingAPIVersion
	}
	return securityAPIVersion
}

// waypointObject is the Gateway istioctl waypoint apply writes. A namespace that selects its
// revision with istio.io/rev passes the label to the waypoint, so that removing it from the
// namespace later does not hand the waypoint to another revision.
func waypointObject(w WaypointRef, rev string) map[string]any {
	md := map[string]any{"name": w.Name, "namespace": w.Namespace}
	labels := map[string]any{}
	if w.For != "" {
		labels[mesh.LabelWaypointFor] = w.For
	}
	if rev != "" {
		labels[mesh.LabelRev] = rev
	}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	return map[string]any{
		"apiVersion": gatewayAPIVersion, "kind": "Gateway", "metadata": md,
		"spec": map[string]any{
			"gatewayClassName": waypointClass,
			"listeners":        []any{map[string]any{"name": "mesh", "port": float64(15008), "protocol": "HBONE"}},
		},
	}
}

// relabel returns the PatchLabels that puts label key back to what it was (removed when it was absent).
func relabel(api string, obj mesh.ObjectRef, key string, before map[string]string) *plan.PatchLabels {
	if v, ok := before[key]; ok {
		return &plan.PatchLabels{APIVersion: api, Object: obj, Set: map[string]string{key: v}}
	}
	return &plan.PatchLabels{APIVersion: api, Object: obj, Remove: []string{key}}
}

// stepper appends the plan's steps in order, each depending on the one before, and carries the
// checks later steps reuse.
type stepper struct {
	m          *migration
	ns         *mesh.Namespace
	nsRef      mesh.ObjectRef
	backupID   string
	last       string
	programmed *plan.Check
	accepted   []plan.Check
	captured   plan.Check
	noSidecars plan.Check
}

func (b *stepper) add(st plan.Step) {
	if b.last != "" {
		st.DependsOn = append(st.DependsOn, b.last)
	}
	b.m.p.Steps = append(b.m.p.Steps, st)
	b.last = st.ID
}

// build lays out the migration in the order of the Istio migration guide (istio.io
// docs/ambient/migrate: use-waypoint, dataplane-mode, the injection labels, the restart, then the
// sidecar-era policies, then validation). When a policy is deny-all (or loses ALLOW rules) under
// ztunnel, the backup moves before the restart and an approval shows the window in which ztunnel
// enforces it, so that its deletion follows the restart at once.
func (m *migration) build(ns *mesh.Namespace) {
	m.applyStep, m.deleteStep = map[mesh.ObjectRef]string{}, map[mesh.ObjectRef]string{}
	nsRef := mesh.ObjectRef{Kind: "Namespace", Name: m.ns}
	b := &stepper{m: m, ns: ns, nsRef: nsRef, backupID: m.id("backup"),
		captured:   plan.NewCheck(nsRef, plan.PodsCapturedArgs{}, fmt.Sprintf("the pods of namespace %s without sidecars are captured by ztunnel (ambient.istio.io/redirection=enabled)", m.ns)),
		noSidecars: plan.NewCheck(nsRef, plan.NoSidecarsArgs{}, fmt.Sprintf("no pod of namespace %s runs a sidecar (containers and native sidecars)", m.ns))}
	if n := len(m.p.Steps); n > 0 {
		b.last = m.p.Steps[n-1].ID // the prechecks: nothing changes before they pass
	}
	b.waypointSteps()
	b.applySteps()
	b.useWaypointSteps()
	b.dataplaneModeStep()
	b.pinGatewaysStep()
	b.injectionStep()
	window := m.denyWindow()
	if len(window) > 0 {
		b.windowApproval(window)
		b.backupStep()
	}
	b.restartStep()
	if len(window) == 0 {
		b.backupStep()
	}
	b.deleteSteps()
	b.validateSteps()
	p := m.p
	p.Steps[0].Preconditions = append([]plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.BackupWritableArgs{File: m.opts.BackupFile, Step: b.backupID},
		fmt.Sprintf("the backup file %s can be written", m.opts.BackupFile))}, p.Steps[0].Preconditions...)
}

// 1. The waypoint, created when asked, and the wait for it to be Programmed.
func (b *stepper) waypointSteps() {
	m, w := b.m, b.m.waypoint
	if w == nil {
		return
	}
	gw := mesh.ObjectRef{Kind: "Gateway", Namespace: m.ns, Name: w.Name}
	c := plan.NewCheck(gw, plan.GatewayProgrammedArgs{}, fmt.Sprintf("waypoint %s is Programmed", w))
	b.programmed = &c
	if m.create {
		b.add(plan.Step{ID: m.id("waypoint"), Description: fmt.Sprintf("create waypoint %s (a Gateway of class %s)", w, waypointClass),
			Reason: "policies and routes that need an HTTP proxy move onto the waypoint before any pod leaves its sidecar",
			Risk:   plan.RiskLow, ApplyObject: &plan.ApplyObject{Object: waypointObject(*w, b.ns.Labels[mesh.LabelRev])},
			Rollback: &plan.Step{ID: m.id("waypoint", "undo"), Description: fmt.Sprintf("delete waypoint %s", w), Risk: plan.RiskLow,
				DeleteObject: &plan.DeleteObject{APIVersion: gatewayAPIVersion, Object: gw}}})
	}
	timeout := m.opts.WaypointTimeoutSeconds
	if timeout == 0 {
		timeout = DefaultWaypointTimeoutSeconds
	}
	b.add(plan.Step{ID: m.id("waypoint", "programmed"), Description: fmt.Sprintf("wait for waypoint %s to be Programmed", w),
		Reason: "istiod deploys the waypoint; what is attached to it takes effect only once it runs",
		Risk:   plan.RiskNone, WaitFor: &plan.WaitFor{Check: c, TimeoutSeconds: int64(timeout)}})
}

// The chosen proposals (targetRefs policies, HTTPRoutes).
func (b *stepper) applySteps() {
	m := b.m
	for _, pr := range m.applied {
		ref := pr.Ref()
		api, _ := pr.Object["apiVersion"].(string)
		id := m.id("apply", strings.ToLower(ref.Kind), ref.Name)
		b.add(plan.Step{ID: id, Description: fmt.Sprintf("apply %s, which takes over from %s", ref, pr.For),
			Reason: "the proposal attaches to the waypoint, where the rules keep their meaning once the namespace is ambient",
			Risk:   plan.RiskLow, ApplyObject: &plan.ApplyObject{Object: pr.Object}, Notes: pr.Notes,
			Rollback: &plan.Step{ID: id + "/undo", Description: "delete " + ref.String(), Risk: plan.RiskLow,
				DeleteObject: &plan.DeleteObject{APIVersion: api, Object: ref}}})
		m.applyStep[pr.For] = id
		if api == securityAPIVersion {
			b.accepted = append(b.accepted, plan.NewCheck(ref, plan.WaypointAcceptedArgs{APIVersion: api},
				fmt.Sprintf("istiod accepted %s on the waypoint (WaypointAccepted=True)", ref)))
		}
	}
}

// istio.io/use-waypoint on the namespace or the chosen Services (step 1 of the guide); gate: the
// waypoint Programmed and every applied policy accepted on it.
func (b *stepper) useWaypointSteps() {
	m, w := b.m, b.m.waypoint
	if w == nil {
		return
	}
	gate := append([]plan.Check{*b.programmed}, b.accepted...)
	labelled := false
	useNote := "sidecar clients keep using VirtualServices and bypass the waypoint; ambient clients (and, after the restart, this namespace's own pods) go through it"
	if len(m.opts.WaypointServices) > 0 {
		svcs := append([]string(nil), m.opts.WaypointServices...)
		sort.Strings(svcs)
		for i, name := range svcs {
			svc := m.service(name)
			if svc.Labels[mesh.LabelUseWaypoint] == w.Name {
				continue
			}
			ref := svc.Ref()
			st := plan.Step{ID: m.id("use-waypoint", name), Description: fmt.Sprintf("label Service %s %s=%s", ref, mesh.LabelUseWaypoint, w.Name),
				Reason: "traffic to the Service goes through the waypoint from now on", Risk: plan.RiskMedium,
				PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: ref, Set: map[string]string{mesh.LabelUseWaypoint: w.Name}},
				Notes:       []string{useNote},
				Rollback: &plan.Step{ID: m.id("use-waypoint", name, "undo"), Description: fmt.Sprintf("put label %s of Service %s back", mesh.LabelUseWaypoint, ref),
					Risk: plan.RiskLow, PatchLabels: relabel("v1", ref, mesh.LabelUseWaypoint, svc.Labels)}}
			if i == len(svcs)-1 {
				st.Postconditions = gate
			}
			b.add(st)
			labelled = true
		}
	} else if b.ns.Labels[mesh.LabelUseWaypoint] != w.Name {
		b.add(plan.Step{ID: m.id("use-waypoint"), Description: fmt.Sprintf("label namespace %s %s=%s", m.ns, mesh.LabelUseWaypoint, w.Name),
			Reason: "step 1 of the migration guide: activate the waypoint before the namespace joins ambient", Risk: plan.RiskMedium,
			PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: b.nsRef, Set: map[string]string{mesh.LabelUseWaypoint: w.Name}},
			Notes:       []string{useNote}, Postconditions: gate,
			Rollback: &plan.Step{ID: m.id("use-waypoint", "undo"), Description: fmt.Sprintf("put label %s of namespace %s back", mesh.LabelUseWaypoint, m.ns),
				Risk: plan.RiskLow, PatchLabels: relabel("v1", b.nsRef, mesh.LabelUseWaypoint, b.ns.Labels)}})
		labelled = true
	}
	if !labelled && len(b.accepted) > 0 {
		b.add(plan.Step{ID: m.id("waypoint", "accepted"), Description: fmt.Sprintf("check that waypoint %s accepted the applied policies", w),
			Risk: plan.RiskNone, Verify: &plan.Verification{Checks: gate}})
	}
}

// 2. istio.io/dataplane-mode=ambient; gate: the pods without sidecars captured.
func (b *stepper) dataplaneModeStep() {
	m := b.m
	if b.ns.Labels[mesh.LabelDataplaneMode] == "ambient" {
		return
	}
	b.add(plan.Step{ID: m.id("dataplane-mode"), Description: fmt.Sprintf("label namespace %s %s=ambient", m.ns, mesh.LabelDataplaneMode),
		Reason: "istio-cni captures the namespace's pods for ztunnel; pods with sidecars are not captured, and their sidecars keep serving until the restart",
		Risk:   plan.RiskMedium, Postconditions: []plan.Check{b.captured},
		PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: b.nsRef, Set: map[string]string{mesh.LabelDataplaneMode: "ambient"}},
		Rollback: &plan.Step{ID: m.id("dataplane-mode", "undo"), Description: fmt.Sprintf("put label %s of namespace %s back", mesh.LabelDataplaneMode, m.ns),
			Risk: plan.RiskMedium, PatchLabels: relabel("v1", b.nsRef, mesh.LabelDataplaneMode, b.ns.Labels)}})
}

// The Gateway API gateways and waypoints that rely on the namespace's istio.io/rev get it copied
// onto them before it goes, so that their owner does not change (as waypointObject does for the
// waypoint the plan creates).
func (b *stepper) pinGatewaysStep() {
	m := b.m
	pins := gatewaysToPin(m.s, b.ns, m.injection)
	if len(pins) == 0 {
		return
	}
	var objs []mesh.ObjectRef
	var names []string
	var owners []plan.Check
	rev := pins[0].rev
	for _, pg := range pins {
		ref := gatewayRef(pg.gateway)
		objs = append(objs, ref)
		names = append(names, pg.gateway.Name)
		owners = append(owners, plan.NewCheck(ref, plan.GatewayOwnerArgs{Revision: rev}, fmt.Sprintf("%s is still owned by %s", ref, rev)))
	}
	m.pinStep = m.id("pin-gateways")
	b.add(plan.Step{ID: m.pinStep, Description: fmt.Sprintf("label gateway %s of namespace %s %s=%s", strings.Join(names, ", "), m.ns, mesh.LabelRev, rev),
		Reason: fmt.Sprintf("they have no %s of their own, so istiod picks their owner by the namespace's label, which the next step removes", mesh.LabelRev),
		Risk:   plan.RiskLow, Postconditions: owners,
		PatchLabels: &plan.PatchLabels{APIVersion: gatewayAPIVersion, Objects: objs, Set: map[string]string{mesh.LabelRev: rev}},
		Rollback: &plan.Step{ID: m.pinStep + "/undo", Description: fmt.Sprintf("remove label %s from gateway %s again", mesh.LabelRev, strings.Join(names, ", ")),
			Risk: plan.RiskLow, PatchLabels: &plan.PatchLabels{APIVersion: gatewayAPIVersion, Objects: objs, Remove: []string{mesh.LabelRev}}}})
}

// 3. The injection labels: removed, or, where an injector injects unlabelled namespaces,
// istio-injection=disabled set instead.
func (b *stepper) injectionStep() {
	m, c := b.m, b.m.injection
	if !c.changes() {
		return
	}
	what := fmt.Sprintf("remove sidecar injection label %s from namespace %s", strings.Join(c.remove, " and "), m.ns)
	reason := "pods created from now on start without a sidecar"
	if len(c.auto) > 0 {
		what = fmt.Sprintf("label namespace %s %s", m.ns, labelList(c.set))
		if len(c.remove) > 0 {
			what += fmt.Sprintf(" and remove %s", strings.Join(c.remove, " and "))
		}
		reason = fmt.Sprintf("injector %s injects namespaces without injection labels (enableNamespacesByDefault): only %s=%s keeps new pods free of sidecars",
			strings.Join(c.auto, ", "), mesh.LabelInjection, injectionDisabled)
	}
	b.add(plan.Step{ID: m.id("injection"), Description: what, Reason: reason, Risk: plan.RiskLow,
		PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: b.nsRef, Set: c.set, Remove: c.remove},
		Rollback: &plan.Step{ID: m.id("injection", "undo"), Description: c.undoWords(m.ns),
			Risk: plan.RiskLow, PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: b.nsRef, Set: nilIfEmpty(c.before), Remove: c.undoRemove()}}})
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// denyWindow lists the deletions of policies ztunnel enforces as deny-all, or without ALLOW rules,
// until they are gone.
func (m *migration) denyWindow() []deletion {
	var out []deletion
	for _, d := range m.deleted {
		if v, ok := m.verdict(d.policy.Ref()); ok && certainOutage(v) {
			out = append(out, d)
		}
	}
	return out
}

// windowApproval asks a person to accept the window in which ztunnel denies what the policies
// allowed: from the restart, which brings the pods up captured, until their deletion right after it.
// The waypoint's copies do not shorten it: the destination's ztunnel still enforces the sidecar-era
// policy on what the waypoint forwards.
func (b *stepper) windowApproval(window []deletion) {
	m := b.m
	var what, steps []string
	for _, d := range window {
		denied := "every request"
		if m.classOf(d.policy.Ref()) == LosesL7Rules {
			denied = "the requests only its L7 rules allowed"
		}
		what = append(what, fmt.Sprintf("%s (%s)", d.policy.Ref(), denied))
		steps = append(steps, m.id("delete", strings.ToLower(d.policy.Kind), d.policy.Name))
	}
	b.add(plan.Step{ID: m.id("deny-window"), Risk: plan.RiskNone,
		Description: "accept the window in which ztunnel denies requests the sidecar-era policies allowed",
		Reason:      "the migration guide: zero-downtime migration with L7 policies is not supported; the plan backs up first and deletes them right after the restart, to keep the window short",
		Approval: &plan.Approval{Message: fmt.Sprintf("deny window: between step %s and step %s right after it, ztunnel denies on each restarted pod of namespace %s, by %s",
			m.id("restart"), strings.Join(steps, ", "), m.ns, strings.Join(what, "; "))}})
}

// 4. The restart in batches; gate: no sidecar left, every pod captured.
func (b *stepper) restartStep() {
	m := b.m
	if len(m.restarted) == 0 {
		return
	}
	batch := max(1, m.opts.BatchSize)
	injected := plan.NewCheck(b.nsRef, plan.SidecarsInjectedArgs{}, "every pod of the restarted workloads runs a sidecar again")
	rb := &plan.Step{ID: m.id("restart", "undo"), Risk: plan.RiskHigh, Postconditions: []plan.Check{injected}}
	if c := m.injection; c.changes() {
		rb.Description = c.undoWords(m.ns) + " and restart its workloads, so their pods come back with sidecars"
		rb.Reinject = &plan.Reinject{Namespace: m.ns, Labels: c.before, Remove: c.undoRemove(), Workloads: m.restarted, BatchSize: batch}
	} else {
		rb.Description = "restart the workloads again, so their pods come back with sidecars"
		rb.Restart = &plan.Restart{Workloads: m.restarted, BatchSize: batch}
	}
	st := plan.Step{ID: m.id("restart"), Description: fmt.Sprintf("restart %s of namespace %s, %d at a time", plural(len(m.restarted), "workload"), m.ns, batch),
		Reason: "restarted pods come up without sidecars and are captured by ztunnel", Risk: plan.RiskHigh,
		Restart: &plan.Restart{Workloads: m.restarted, BatchSize: batch}, Postconditions: []plan.Check{b.noSidecars, b.captured}, Rollback: rb}
	for _, d := range m.deleted {
		c := m.classOf(d.policy.Ref())
		if c != DenyAllUnderZtunnel && c != LosesL7Rules {
			continue
		}
		how := "as deny-all"
		if c == LosesL7Rules {
			how = "without its L7 rules"
		}
		st.Notes = append(st.Notes, fmt.Sprintf("until step %s deletes it right after this one, ztunnel enforces %s %s on the restarted pods (the migration guide: zero-downtime migration with L7 policies is not supported)",
			m.id("delete", strings.ToLower(d.policy.Kind), d.policy.Name), d.policy.Ref(), how))
	}
	b.add(st)
}

// 5. The backup of every Istio and Gateway API object of the namespace, read back.
func (b *stepper) backupStep() {
	m := b.m
	var objs []plan.BackupObject
	for _, d := range m.deleted {
		objs = append(objs, plan.BackupObject{APIVersion: apiVersionOf(d.policy), Object: d.policy.Ref()})
	}
	b.add(plan.Step{ID: b.backupID, Description: fmt.Sprintf("back up every Istio and Gateway API object of namespace %s to %s", m.ns, m.opts.BackupFile),
		Reason: "nothing is deleted without a backup that was written and read back; it is also what a rollback restores from",
		Risk:   plan.RiskNone, Backup: &plan.Backup{Objects: objs, Namespace: m.ns, File: m.opts.BackupFile},
		Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.BackupReadableArgs{}, "the backup reads back as written")}})
}

// The deletions, each once its replacement is accepted, the deny-all ones first.
func (b *stepper) deleteSteps() {
	m := b.m
	for _, d := range m.deleted {
		ref, api := d.policy.Ref(), apiVersionOf(d.policy)
		id := m.id("delete", strings.ToLower(ref.Kind), ref.Name)
		st := plan.Step{ID: id, Description: "delete " + ref.String(), Risk: plan.RiskMedium,
			DeleteObject: &plan.DeleteObject{APIVersion: api, Object: ref, BackupStep: b.backupID},
			Rollback: &plan.Step{ID: id + "/undo", Description: fmt.Sprintf("restore %s from the backup", ref), Risk: plan.RiskLow,
				Restore: &plan.Restore{BackupStep: b.backupID, Objects: []plan.BackupObject{{APIVersion: api, Object: ref}}, File: m.opts.BackupFile}}}
		if d.by != nil {
			st.Reason = fmt.Sprintf("%s takes over from it", d.by.Ref())
			if api, _ := d.by.Object["apiVersion"].(string); api == securityAPIVersion {
				st.Preconditions = append(st.Preconditions, plan.NewCheck(d.by.Ref(), plan.WaypointAcceptedArgs{APIVersion: api},
					fmt.Sprintf("istiod accepted %s on the waypoint", d.by.Ref())))
			}
		} else {
			st.Reason = "the plan was asked to delete it (backed up first)"
			if ref.Kind == "DestinationRule" && m.waypoint != nil {
				st.Notes = append(st.Notes, "a waypoint applies DestinationRules of the Services it serves: its traffic policy stops with it")
			}
		}
		b.add(st)
		m.deleteStep[ref] = id
	}
}

// 6. Validation and the health gate.
func (b *stepper) validateSteps() {
	m := b.m
	checks := []plan.Check{b.noSidecars, b.captured}
	if b.programmed != nil {
		checks = append(checks, *b.programmed)
	}
	checks = append(checks, b.accepted...)
	checks = append(checks, m.existingTargetRefs()...)
	what := "no sidecar left, every pod captured"
	if len(checks) > 2 {
		what += ", the waypoint Programmed and the policies on it accepted"
	}
	b.add(plan.Step{ID: m.id("validate"), Description: fmt.Sprintf("validate namespace %s: %s", m.ns, what),
		Reason: "step 6 of the migration guide", Risk: plan.RiskNone, Verify: &plan.Verification{Checks: checks}})
	settle := m.opts.SettleSeconds
	if settle == 0 {
		settle = DefaultSettleSeconds
	}
	probe := m.opts.Probe
	if probe == "" {
		probe = DefaultProbe
	}
	b.add(plan.Step{ID: m.id("health"), Description: fmt.Sprintf("health gate after migrating namespace %s", m.ns),
		Reason: "the caller's probe (error rate, TCP resets, latency) decides whether to go on to the next namespace or roll this one back",
		Risk:   plan.RiskNone, HealthGate: &plan.HealthGate{Probe: probe, Scope: "namespace " + m.ns, SettleSeconds: int64(settle)}})
}

// existingTargetRefs are the WaypointAccepted checks of the namespace's targetRefs policies the plan
// did not write, unless the caller waived their not being accepted.
func (m *migration) existingTargetRefs() []plan.Check {
	waived := map[mesh.ObjectRef]bool{}
	for _, f := range m.p.Findings {
		if f.Code == CodePolicyNotAcceptedByWaypoint && f.Waived {
			waived[f.Object] = true
		}
	}
	var out []plan.Check
	for _, v := range m.report.Policies {
		if v.Policy.Namespace != m.ns || v.Class != NeedsWaypoint || waived[v.Policy] {
			continue
		}
		p := policyByRef(m.s, v.Policy)
		out = append(out, plan.NewCheck(v.Policy, plan.WaypointAcceptedArgs{APIVersion: apiVersionOf(p)},
			fmt.Sprintf("istiod accepted %s on a waypoint (WaypointAccepted=True)", v.Policy)))
	}
	return out
}

func (m *migration) classOf(ref mesh.ObjectRef) PolicyClass {
	v, _ := m.verdict(ref)
	return v.Class
}

func (m *migration) verdict(ref mesh.ObjectRef) (PolicyVerdict, bool) {
	for _, v := range m.report.Policies {
		if v.Policy == ref {
			return v, true
		}
	}
	return PolicyVerdict{}, false
}

func (m *migration) service(name string) mesh.Service {
	for _, s := range m.s.Services {
		if s.Namespace == m.ns && s.Name == name {
			return s
		}
	}
	return mesh.Service{Namespace: m.ns, Name: name}
}

func labelList(m map[string]string) string {
	var out []string
	for _, k := range sortedMapKeys(m) {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, " ")
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
