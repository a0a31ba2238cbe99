package migrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
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

func (m *migration) build(ns *mesh.Namespace) {
	p := m.p
	m.applyStep, m.deleteStep = map[mesh.ObjectRef]string{}, map[mesh.ObjectRef]string{}
	last := ""
	add := func(st plan.Step) {
		if last != "" {
			st.DependsOn = append(st.DependsOn, last)
		}
		p.Steps = append(p.Steps, st)
		last = st.ID
	}
	nsRef := mesh.ObjectRef{Kind: "Namespace", Name: m.ns}
	backupID := m.id("backup")

	// 1. The waypoint, the chosen proposals, then istio.io/use-waypoint.
	var programmed *plan.Check
	var accepted []plan.Check
	if w := m.waypoint; w != nil {
		gw := mesh.ObjectRef{Kind: "Gateway", Namespace: m.ns, Name: w.Name}
		c := plan.NewCheck(gw, plan.GatewayProgrammedArgs{}, fmt.Sprintf("waypoint %s is Programmed", w))
		programmed = &c
		if m.create {
			add(plan.Step{ID: m.id("waypoint"), Description: fmt.Sprintf("create waypoint %s (a Gateway of class %s)", w, waypointClass),
				Reason: "policies and routes that need an HTTP proxy move onto the waypoint before any pod leaves its sidecar",
				Risk:   plan.RiskLow, ApplyObject: &plan.ApplyObject{Object: waypointObject(*w, ns.Labels[mesh.LabelRev])},
				Rollback: &plan.Step{ID: m.id("waypoint", "undo"), Description: fmt.Sprintf("delete waypoint %s", w), Risk: plan.RiskLow,
					DeleteObject: &plan.DeleteObject{APIVersion: gatewayAPIVersion, Object: gw}}})
		}
		timeout := m.opts.WaypointTimeoutSeconds
		if timeout == 0 {
			timeout = DefaultWaypointTimeoutSeconds
		}
		add(plan.Step{ID: m.id("waypoint", "programmed"), Description: fmt.Sprintf("wait for waypoint %s to be Programmed", w),
			Reason: "istiod deploys the waypoint; what is attached to it takes effect only once it runs",
			Risk:   plan.RiskNone, WaitFor: &plan.WaitFor{Check: c, TimeoutSeconds: int64(timeout)}})
	}
	for _, pr := range m.applied {
		ref := pr.Ref()
		api, _ := pr.Object["apiVersion"].(string)
		id := m.id("apply", strings.ToLower(ref.Kind), ref.Name)
		add(plan.Step{ID: id, Description: fmt.Sprintf("apply %s, which takes over from %s", ref, pr.For),
			Reason: "the proposal attaches to the waypoint, where the rules keep their meaning once the namespace is ambient",
			Risk:   plan.RiskLow, ApplyObject: &plan.ApplyObject{Object: pr.Object}, Notes: pr.Notes,
			Rollback: &plan.Step{ID: id + "/undo", Description: "delete " + ref.String(), Risk: plan.RiskLow,
				DeleteObject: &plan.DeleteObject{APIVersion: api, Object: ref}}})
		m.applyStep[pr.For] = id
		if api == securityAPIVersion {
			accepted = append(accepted, plan.NewCheck(ref, plan.WaypointAcceptedArgs{APIVersion: api},
				fmt.Sprintf("istiod accepted %s on the waypoint (WaypointAccepted=True)", ref)))
		}
	}
	if w := m.waypoint; w != nil {
		gate := append([]plan.Check{*programmed}, accepted...)
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
				add(st)
				labelled = true
			}
		} else if ns.Labels[mesh.LabelUseWaypoint] != w.Name {
			add(plan.Step{ID: m.id("use-waypoint"), Description: fmt.Sprintf("label namespace %s %s=%s", m.ns, mesh.LabelUseWaypoint, w.Name),
				Reason: "step 1 of the migration guide: activate the waypoint before the namespace joins ambient", Risk: plan.RiskMedium,
				PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: nsRef, Set: map[string]string{mesh.LabelUseWaypoint: w.Name}},
				Notes:       []string{useNote}, Postconditions: gate,
				Rollback: &plan.Step{ID: m.id("use-waypoint", "undo"), Description: fmt.Sprintf("put label %s of namespace %s back", mesh.LabelUseWaypoint, m.ns),
					Risk: plan.RiskLow, PatchLabels: relabel("v1", nsRef, mesh.LabelUseWaypoint, ns.Labels)}})
			labelled = true
		}
		if !labelled && len(accepted) > 0 {
			add(plan.Step{ID: m.id("waypoint", "accepted"), Description: fmt.Sprintf("check that waypoint %s accepted the applied policies", w),
				Risk: plan.RiskNone, Verify: &plan.Verification{Checks: gate}})
		}
	}

	// 2. istio.io/dataplane-mode=ambient.
	captured := plan.NewCheck(nsRef, plan.PodsCapturedArgs{}, fmt.Sprintf("the pods of namespace %s without sidecars are captured by ztunnel (ambient.istio.io/redirection=enabled)", m.ns))
	if ns.Labels[mesh.LabelDataplaneMode] != "ambient" {
		add(plan.Step{ID: m.id("dataplane-mode"), Description: fmt.Sprintf("label namespace %s %s=ambient", m.ns, mesh.LabelDataplaneMode),
			Reason: "istio-cni captures the namespace's pods for ztunnel; pods with sidecars are not captured, and their sidecars keep serving until the restart",
			Risk:   plan.RiskMedium, Postconditions: []plan.Check{captured},
			PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: nsRef, Set: map[string]string{mesh.LabelDataplaneMode: "ambient"}},
			Rollback: &plan.Step{ID: m.id("dataplane-mode", "undo"), Description: fmt.Sprintf("put label %s of namespace %s back", mesh.LabelDataplaneMode, m.ns),
				Risk: plan.RiskMedium, PatchLabels: relabel("v1", nsRef, mesh.LabelDataplaneMode, ns.Labels)}})
	}

	// 3. The injection labels.
	injection := map[string]string{}
	var remove []string
	for _, k := range []string{mesh.LabelInjection, mesh.LabelRev} {
		if v, ok := ns.Labels[k]; ok {
			injection[k] = v
			remove = append(remove, k)
		}
	}
	if len(remove) > 0 {
		add(plan.Step{ID: m.id("injection"), Description: fmt.Sprintf("remove sidecar injection label %s from namespace %s", strings.Join(remove, " and "), m.ns),
			Reason: "pods created from now on start without a sidecar", Risk: plan.RiskLow,
			PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: nsRef, Remove: remove},
			Rollback: &plan.Step{ID: m.id("injection", "undo"), Description: fmt.Sprintf("label namespace %s %s again", m.ns, labelList(injection)),
				Risk: plan.RiskLow, PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: nsRef, Set: injection}}})
	}

	// 4. The restart.
	noSidecars := plan.NewCheck(nsRef, plan.NoSidecarsArgs{}, fmt.Sprintf("no pod of namespace %s runs a sidecar", m.ns))
	batch := max(1, m.opts.BatchSize)
	if len(m.restarted) > 0 {
		injected := plan.NewCheck(nsRef, plan.SidecarsInjectedArgs{}, "every pod of the restarted workloads runs a sidecar again")
		rb := &plan.Step{ID: m.id("restart", "undo"), Risk: plan.RiskHigh, Postconditions: []plan.Check{injected}}
		if len(injection) > 0 {
			rb.Description = fmt.Sprintf("label namespace %s %s again and restart its workloads, so their pods come back with sidecars", m.ns, labelList(injection))
			rb.Reinject = &plan.Reinject{Namespace: m.ns, Labels: injection, Workloads: m.restarted, BatchSize: batch}
		} else {
			rb.Description = "restart the workloads again, so their pods come back with sidecars"
			rb.Restart = &plan.Restart{Workloads: m.restarted, BatchSize: batch}
		}
		st := plan.Step{ID: m.id("restart"), Description: fmt.Sprintf("restart %s of namespace %s, %d at a time", plural(len(m.restarted), "workload"), m.ns, batch),
			Reason: "restarted pods come up without sidecars and are captured by ztunnel", Risk: plan.RiskHigh,
			Restart: &plan.Restart{Workloads: m.restarted, BatchSize: batch}, Postconditions: []plan.Check{noSidecars, captured}, Rollback: rb}
		for _, d := range m.deleted {
			if c := m.classOf(d.policy.Ref()); c == DenyAllUnderZtunnel || c == LosesL7Rules {
				how := "as deny-all"
				if c == LosesL7Rules {
					how = "without its L7 rules"
				}
				st.Notes = append(st.Notes, fmt.Sprintf("until step %s deletes it, ztunnel enforces %s %s on the restarted pods (the migration guide: zero-downtime migration with L7 policies is not supported)",
					m.id("delete", strings.ToLower(d.policy.Kind), d.policy.Name), d.policy.Ref(), how))
			}
		}
		add(st)
	}

	// 5. The backup, then the deletions.
	var objs []plan.BackupObject
	for _, d := range m.deleted {
		objs = append(objs, plan.BackupObject{APIVersion: apiVersionOf(d.policy), Object: d.policy.Ref()})
	}
	add(plan.Step{ID: backupID, Description: fmt.Sprintf("back up every Istio and Gateway API object of namespace %s to %s", m.ns, m.opts.BackupFile),
		Reason: "nothing is deleted without a backup that was written and read back; it is also what a rollback restores from",
		Risk:   plan.RiskNone, Backup: &plan.Backup{Objects: objs, Namespace: m.ns, File: m.opts.BackupFile},
		Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.BackupReadableArgs{}, "the backup reads back as written")}})
	for _, d := range m.deleted {
		ref, api := d.policy.Ref(), apiVersionOf(d.policy)
		id := m.id("delete", strings.ToLower(ref.Kind), ref.Name)
		st := plan.Step{ID: id, Description: "delete " + ref.String(), Risk: plan.RiskMedium,
			DeleteObject: &plan.DeleteObject{APIVersion: api, Object: ref, BackupStep: backupID},
			Rollback: &plan.Step{ID: id + "/undo", Description: fmt.Sprintf("restore %s from the backup", ref), Risk: plan.RiskLow,
				Restore: &plan.Restore{BackupStep: backupID, Objects: []plan.BackupObject{{APIVersion: api, Object: ref}}, File: m.opts.BackupFile}}}
		if d.by != nil {
			st.Reason = fmt.Sprintf("%s takes over from it", d.by.Ref())
			if api, _ := d.by.Object["apiVersion"].(string); api == securityAPIVersion {
				st.Preconditions = append(st.Preconditions, plan.NewCheck(d.by.Ref(), plan.WaypointAcceptedArgs{APIVersion: api},
					fmt.Sprintf("istiod accepted %s on the waypoint", d.by.Ref())))
			}
		} else {
			st.Reason = "the caller chose to delete it (MigrateOptions.Delete)"
			if ref.Kind == "DestinationRule" && m.waypoint != nil {
				st.Notes = append(st.Notes, "a waypoint applies DestinationRules of the Services it serves: its traffic policy stops with it")
			}
		}
		add(st)
		m.deleteStep[ref] = id
	}

	// 6. Validation and the health gate.
	checks := []plan.Check{noSidecars, captured}
	if programmed != nil {
		checks = append(checks, *programmed)
	}
	checks = append(checks, accepted...)
	checks = append(checks, m.existingTargetRefs()...)
	what := "no sidecar left, every pod captured"
	if len(checks) > 2 {
		what += ", the waypoint Programmed and the policies on it accepted"
	}
	add(plan.Step{ID: m.id("validate"), Description: fmt.Sprintf("validate namespace %s: %s", m.ns, what),
		Reason: "step 6 of the migration guide", Risk: plan.RiskNone, Verify: &plan.Verification{Checks: checks}})
	settle := m.opts.SettleSeconds
	if settle == 0 {
		settle = DefaultSettleSeconds
	}
	probe := m.opts.Probe
	if probe == "" {
		probe = DefaultProbe
	}
	add(plan.Step{ID: m.id("health"), Description: fmt.Sprintf("health gate after migrating namespace %s", m.ns),
		Reason: "the caller's probe (error rate, TCP resets, latency) decides whether to go on to the next namespace or roll this one back",
		Risk:   plan.RiskNone, HealthGate: &plan.HealthGate{Probe: probe, Scope: "namespace " + m.ns, SettleSeconds: int64(settle)}})

	p.Steps[0].Preconditions = append([]plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.BackupWritableArgs{File: m.opts.BackupFile, Step: backupID},
		fmt.Sprintf("the backup file %s can be written", m.opts.BackupFile))}, p.Steps[0].Preconditions...)
}

// existingTargetRefs are the WaypointAccepted checks of the namespace's targetRefs policies the plan
// did not write, unless the caller waived their not being accepted.
func (m *migration) existingTargetRefs() []plan.Check {
	waived := map[mesh.ObjectRef]bool{}
	for _, f := range m.p.Findings {
		if f.Code == plan.CodePolicyNotAcceptedByWaypoint && f.Waived {
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
	for _, v := range m.report.Policies {
		if v.Policy == ref {
			return v.Class
		}
	}
	return ""
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
