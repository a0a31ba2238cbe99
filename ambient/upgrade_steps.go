package ambient

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/revision"
	"github.com/ambientkit/ambientkit/tags"
)

// updateStrategyValue is the first ztunnel chart with an updateStrategy value (istio-facts §1.3).
var updateStrategyValue = mesh.Version{Major: 1, Minor: 26}

func (u *upgrader) cni(s *mesh.Snapshot, target mesh.Version, prefix string) {
	if s.CNI == nil {
		return
	}
	h, ok := u.release(s, "cni", s.CNI.HelmRelease)
	if !ok {
		u.noRelease(mesh.ObjectRef{Kind: "DaemonSet", Namespace: s.CNI.Namespace, Name: s.CNI.Name}, "istio-cni")
		return
	}
	ds := mesh.ObjectRef{Kind: "DaemonSet", Namespace: s.CNI.Namespace, Name: s.CNI.Name}
	st := u.upgradeRelease(prefix+"cni/upgrade", fmt.Sprintf("upgrade istio-cni in place from %s to %s", s.CNI.Version, target),
		"CNI 1.x needs control plane 1.x or 1.x+1, so it moves only after the control plane; the CNI is never revisioned",
		h, target, nil, plan.RiskMedium,
		plan.Check{Type: plan.CheckDaemonSetRolledOut, Object: ds, Params: map[string]string{"version": target.String()},
			Description: fmt.Sprintf("DaemonSet %s rolled out: every desired pod updated, ready and available", ds.Name)},
		plan.Check{Type: plan.CheckPodsRedirected, Params: map[string]string{"since": "step-start"},
			Description: "ambient pods created during the rollout carry ambient.istio.io/redirection=enabled"},
		plan.Check{Type: plan.CheckNoSandboxFailures, Params: map[string]string{"retryWindowSeconds": "120", "plugin": "istio-cni"},
			Description: "no pod stays ContainerCreating with FailedCreatePodSandBox from istio-cni beyond 120s (earlier retries are expected and reported, not failures)"})
	st.Preconditions = []plan.Check{{Type: plan.CheckFindingsClear, Params: map[string]string{"component": "control-plane", "version": target.String()},
		Description: fmt.Sprintf("a control plane at %s is ready before the CNI moves", target.MinorString())}}
	st.Notes = append(st.Notes, fmt.Sprintf("with %s=%d the agent restarts node by node; while no agent runs on a node new ambient pods there wait (sandbox retries), they never start unprotected",
		"maxUnavailable", 1))
	u.add(st)
	u.add(plan.Step{ID: prefix + "cni/health", Description: "health gate after the CNI rollout", Risk: plan.RiskNone,
		HealthGate: &plan.HealthGate{Probe: u.probe(), Scope: "istio-cni", SettleSeconds: 60}})
}

// drainTime returns ztunnel's own drain deadline for a grace period (istio-facts §6).
func drainTime(grace int64) int64 {
	switch {
	case grace <= 0:
		return 5
	case grace > 10:
		return grace - 5
	case grace > 1:
		return grace - 1
	}
	return 1
}

func (u *upgrader) ztunnels(s *mesh.Snapshot, target mesh.Version, prefix, newRev string) error {
	for _, z := range s.Ztunnels {
		h, ok := u.release(s, "ztunnel", z.HelmRelease)
		if !ok {
			u.noRelease(z.Ref(), "ztunnel "+z.Namespace+"/"+z.Name)
			continue
		}
		set := map[string]any{}
		if z.Revision != "" && newRev != "" {
			set["revision"] = newRev
			u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodeZtunnelRevisionSwitch, Severity: plan.Info, Object: z.Ref(), Component: "ztunnel/" + z.Namespace + "/" + z.Name,
				Message: fmt.Sprintf("ztunnel %s is pinned to revision %s (the chart points it at istiod-%s); switching it to %s restarts ztunnel on every node", z.Name, z.Revision, z.Revision, newRev),
				Remedy:  "the plan folds the switch into the ztunnel upgrade so ztunnel restarts once; the old revision is removed only after"})
		}
		ds := z.Ref()
		rolled := plan.Check{Type: plan.CheckDaemonSetRolledOut, Object: ds, Params: map[string]string{"version": target.String()},
			Description: fmt.Sprintf("ztunnel %s runs %s on every node", z.Name, target)}
		grace := z.TerminationGracePeriodSeconds
		resetNote := fmt.Sprintf("replacing ztunnel resets long-lived connections of the pods it serves on that node; ztunnel drains for %ds (grace period %ds)", drainTime(grace), grace)
		if u.ztunnel() == ZtunnelInPlace || target.Less(updateStrategyValue) {
			st := u.upgradeRelease(prefix+"ztunnel/"+z.Name+"/upgrade", fmt.Sprintf("upgrade ztunnel %s in place from %s to %s", z.Name, z.Version, target),
				"ztunnel 1.x needs control plane 1.x or 1.x+1, and it moves after the CNI", h, target, set, plan.RiskHigh, rolled)
			st.Notes = append(st.Notes, resetNote+"; this happens on every node as the DaemonSet rolls (maxSurge 1, maxUnavailable 0)")
			if u.ztunnel() == ZtunnelNodeByNode {
				st.Notes = append(st.Notes, fmt.Sprintf("node by node needs the chart's updateStrategy value (Istio %s+); %s has none, so ztunnel rolls in place", updateStrategyValue.MinorString(), target))
			}
			u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodeConnectionsReset, Severity: plan.Info, Object: ds, Component: "ztunnel/" + z.Namespace + "/" + z.Name,
				Message: "an in-place ztunnel rollout resets long-lived connections on every node",
				Remedy:  "plan it in a quiet window, or use node-by-node (drains each node first)"})
			u.add(st)
			u.add(plan.Step{ID: prefix + "ztunnel/" + z.Name + "/health", Description: "health gate after the ztunnel rollout", Risk: plan.RiskNone,
				HealthGate: &plan.HealthGate{Probe: u.probe(), Scope: "ztunnel " + z.Name, SettleSeconds: 60}})
			continue
		}
		onDelete := map[string]any{}
		merge(onDelete, set)
		onDelete["updateStrategy"] = map[string]any{"type": "OnDelete", "rollingUpdate": nil}
		st := u.upgradeRelease(prefix+"ztunnel/"+z.Name+"/on-delete", fmt.Sprintf("upgrade the ztunnel %s release to %s with updateStrategy OnDelete", z.Name, target),
			"OnDelete changes the DaemonSet without restarting any pod; each node is then replaced by hand, after its workloads are drained", h, target, onDelete, plan.RiskLow)
		st.Verification = append(st.Verification, plan.Check{Type: plan.CheckNodeAgentReady, Object: ds, Params: map[string]string{"version": z.Version.String(), "all": "true"},
			Description: "no ztunnel pod restarted: every node still runs a ready ztunnel"})
		u.add(st)
		u.nodeByNode(s, z, target, prefix, resetNote)
		restoreSet := map[string]any{"updateStrategy": nil}
		if prev, had := h.Values["updateStrategy"]; had {
			restoreSet["updateStrategy"] = prev
		}
		now, _ := u.release(s, "ztunnel", h.Name)
		restore := u.upgradeRelease(prefix+"ztunnel/"+z.Name+"/rolling-update", fmt.Sprintf("set ztunnel %s back to its rolling update strategy", z.Name),
			"future upgrades roll again as before; changing the strategy restarts no pod", now, target, restoreSet, plan.RiskLow, rolled)
		u.add(restore)
	}
	return nil
}

type drainPlan struct {
	node     mesh.Node
	ambient  bool
	stateful int
	blocked  bool
	mayHold  []string
}

func (u *upgrader) nodeByNode(s *mesh.Snapshot, z mesh.Ztunnel, target mesh.Version, prefix, resetNote string) {
	ambient := s.AmbientNodes()
	var nodes []drainPlan
	for _, p := range z.Pods {
		n, ok := s.Node(p.Node)
		if !ok {
			n = mesh.Node{Name: p.Node}
		}
		d := drainPlan{node: n, ambient: ambient[n.Name] > 0}
		if d.ambient {
			d.mayHold, d.stateful, d.blocked = u.mayHold(s, n.Name)
		}
		nodes = append(nodes, d)
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if a.blocked != b.blocked {
			return !a.blocked
		}
		if a.stateful != b.stateful {
			return a.stateful < b.stateful
		}
		if a.node.Pool != b.node.Pool {
			return a.node.Pool < b.node.Pool
		}
		return a.node.Name < b.node.Name
	})
	batch := max(1, u.opts.BatchSize)
	timeout := int64(600)
	if u.opts.DrainTimeout > 0 {
		timeout = int64(u.opts.DrainTimeout.Seconds())
	}
	base := prefix + "ztunnel/"
	if len(s.Ztunnels) > 1 {
		base += z.Name + "/"
	}
	before := []string{u.last}
	for start := 0; start < len(nodes); start += batch {
		end := min(start+batch, len(nodes))
		var done []string
		for _, d := range nodes[start:end] {
			id := base + "node/" + d.node.Name + "/"
			// Every node is cordoned and drained before its ztunnel is replaced, also a node that ran no
			// ambient pod when the plan was made: pods the plan's earlier drains evict may be rescheduled
			// onto it, and the cordon keeps new ones away during the swap. Such a node's drain evicts only
			// the ambient pods found there when it runs (usually none).
			u.add(plan.Step{ID: id + "cordon", Description: fmt.Sprintf("cordon %s (pool %s)", d.node.Name, orDefault(d.node.Pool, "-")), Risk: plan.RiskLow,
				Cordon:   &plan.NodeRef{Node: d.node.Name},
				Rollback: &plan.Step{ID: id + "cordon/undo", Description: "uncordon " + d.node.Name, Risk: plan.RiskLow, Uncordon: &plan.NodeRef{Node: d.node.Name}}},
				before...)
			drain := plan.Step{ID: id + "drain", Description: fmt.Sprintf("drain %s through the Eviction API", d.node.Name),
				Reason: "move ambient workloads off the node so no connection goes through the ztunnel being replaced",
				Risk:   plan.RiskHigh,
				Drain: &plan.NodeDrain{Node: d.node.Name, TimeoutSeconds: timeout, IgnoreDaemonSets: true, DeleteEmptyDirData: true,
					MayHold: d.mayHold},
				Verification: []plan.Check{{Type: plan.CheckNodeDrained, Object: mesh.ObjectRef{Kind: "Node", Name: d.node.Name},
					Description: fmt.Sprintf("only DaemonSet pods are left on %s", d.node.Name)}},
				Rollback: &plan.Step{ID: id + "drain/undo", Description: "uncordon " + d.node.Name + " (evicted pods are rescheduled by their controllers)", Risk: plan.RiskLow,
					Uncordon: &plan.NodeRef{Node: d.node.Name}},
			}
			if !d.ambient {
				drain.Description = fmt.Sprintf("evict the ambient pods rescheduled onto %s since planning, if any", d.node.Name)
				drain.Reason = "no ambient pod ran here when the plan was made, but the drains of earlier nodes may have moved some here"
				drain.Risk = plan.RiskLow
				drain.Drain.AmbientOnly = true
				drain.Verification[0].Params = map[string]string{"ambientOnly": "true"}
				drain.Verification[0].Description = fmt.Sprintf("no ambient pod is left on %s", d.node.Name)
			}
			if d.blocked {
				drain.Notes = append(drain.Notes, "a PodDisruptionBudget allows no disruption here: the drain waits until it does or times out, and names the budget")
			}
			u.add(drain)
			u.add(plan.Step{ID: id + "replace", Description: fmt.Sprintf("delete the ztunnel pod on %s so the DaemonSet recreates it at %s", d.node.Name, target),
				Reason: resetNote, Risk: riskFor(d.ambient),
				DeletePod: &plan.PodSelection{Namespace: z.Namespace, Selector: z.Selector, Node: d.node.Name}})
			u.add(plan.Step{ID: id + "wait", Description: fmt.Sprintf("wait until ztunnel %s is ready on %s", target, d.node.Name), Risk: plan.RiskNone,
				WaitFor: &plan.WaitFor{TimeoutSeconds: 300, Check: plan.Check{Type: plan.CheckNodeAgentReady, Object: z.Ref(),
					Params:      map[string]string{"node": d.node.Name, "version": target.String()},
					Description: fmt.Sprintf("a ready ztunnel %s pod runs on %s", target, d.node.Name)}}})
			if d.node.Unschedulable {
				// Cordoned before the upgrade: someone wanted it so; the plan leaves it cordoned.
				u.p.Steps[len(u.p.Steps)-1].Notes = append(u.p.Steps[len(u.p.Steps)-1].Notes,
					fmt.Sprintf("%s was cordoned before the upgrade; the plan leaves it cordoned", d.node.Name))
			} else {
				u.add(plan.Step{ID: id + "uncordon", Description: "uncordon " + d.node.Name, Risk: plan.RiskLow,
					Uncordon: &plan.NodeRef{Node: d.node.Name},
					Verification: []plan.Check{{Type: plan.CheckNodeSchedulable, Object: mesh.ObjectRef{Kind: "Node", Name: d.node.Name},
						Description: d.node.Name + " is schedulable"}}})
			}
			done = append(done, u.last)
		}
		gate := plan.Step{ID: fmt.Sprintf("%sbatch/%d/health", base, start/batch+1), Risk: plan.RiskNone,
			Description: fmt.Sprintf("health gate after ztunnel batch %d of %d", start/batch+1, (len(nodes)+batch-1)/batch),
			HealthGate:  &plan.HealthGate{Probe: u.probe(), Scope: "ztunnel batch", SettleSeconds: 30}}
		u.add(gate, done...)
		before = []string{gate.ID}
	}
}

func riskFor(ambient bool) plan.Risk {
	if ambient {
		return plan.RiskMedium
	}
	return plan.RiskLow
}

// mayHold lists what may hold a node's drain, by name; it also adds drain findings.
func (u *upgrader) mayHold(s *mesh.Snapshot, node string) (hold []string, stateful int, blocked bool) {
	for _, w := range u.byNode[node] {
		if w.Kind == "DaemonSet" {
			continue
		}
		for _, b := range u.budgets[w.Namespace] {
			if !b.Selector.Matches(w.Labels) {
				continue
			}
			if b.DisruptionsAllowed == 0 {
				blocked = true
				hold = append(hold, fmt.Sprintf("%s allows 0 disruptions and covers %s", b.Ref(), w.Ref()))
				u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodePDBBlocksDrain, Severity: plan.Waivable, Object: b.Ref(), Component: "node/" + node,
					Message: fmt.Sprintf("%s allows 0 disruptions (%d healthy, %d desired); draining %s for ztunnel will wait on %s", b.Ref(), b.CurrentHealthy, b.DesiredHealthy, node, w.Ref()),
					Remedy:  "scale the workload up or relax the budget before the ztunnel step, or waive and let the drain time out and report"})
			}
		}
		switch {
		case w.Kind == "Pod":
			hold = append(hold, fmt.Sprintf("%s has no controller: eviction deletes it for good", w.Ref()))
			u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodeUnmanagedPodOnNode, Severity: plan.Waivable, Object: w.Ref(), Component: "node/" + node,
				Message: fmt.Sprintf("pod %s/%s on %s has no controller; draining the node deletes it for good", w.Namespace, w.Name, node),
				Remedy:  "run it under a Deployment or Job, or waive"})
		case w.Kind == "Job" || w.Kind == "CronJob":
			hold = append(hold, fmt.Sprintf("%s is running: eviction stops it; it starts over only if its backoffLimit allows a retry", w.Ref()))
		case w.Kind == "StatefulSet":
			hold = append(hold, fmt.Sprintf("%s: its pod restarts with the same identity elsewhere", w.Ref()))
		}
		if w.LocalStorage {
			hold = append(hold, fmt.Sprintf("%s mounts emptyDir volumes: their data is lost", w.Ref()))
		}
		if w.Stateful() {
			stateful++
		}
	}
	sort.Strings(hold)
	return hold, stateful, blocked
}

func (u *upgrader) moveTags(s *mesh.Snapshot, newRev, prefix string) error {
	staged := withRevision(s, newRev, u.hop)
	var old []string
	for _, r := range s.Revisions {
		old = append(old, r.Name)
	}
	ranked := tags.Order(s, old...)
	order := make([]string, 0, len(ranked))
	for _, t := range u.opts.TagOrder {
		if _, ok := s.Tag(t); !ok {
			return fmt.Errorf("%w: tagOrder names tag %q, which does not exist (tags: %v)", ErrInvalidOptions, t, s.TagNames())
		}
		if !contains(order, t) {
			order = append(order, t)
		}
	}
	reasons := map[string]string{}
	for _, r := range ranked {
		reasons[r.Radius.Tag] = r.Reason
		if !contains(order, r.Radius.Tag) {
			order = append(order, r.Radius.Tag)
		}
	}
	for _, t := range order {
		steps, _, err := tags.MoveSteps(staged, t, newRev, tags.MoveOptions{SkipRestart: u.opts.SkipRestart, BatchSize: u.opts.RestartBatchSize,
			Probe: u.probe(), IDPrefix: prefix, DependsOn: []string{u.last}})
		if err != nil {
			return fmt.Errorf("move tag %q: %w", t, err)
		}
		if contains(u.opts.TagOrder, t) {
			steps[0].Notes = append(steps[0].Notes, "order: given by the caller")
		} else if reasons[t] != "" {
			steps[0].Notes = append(steps[0].Notes, "order: "+reasons[t])
		}
		for _, st := range steps {
			u.p.Steps = append(u.p.Steps, st)
			u.last = st.ID
		}
	}
	return nil
}

// namespacesPinned reports namespaces labelled with an old revision's name directly: the plan does not
// relabel them (the pin is the owner's decision), so they keep the old revision in use.
func (u *upgrader) namespacesPinned(s *mesh.Snapshot, newRev string) {
	for _, n := range s.Namespaces {
		rev := n.Labels[mesh.LabelRev]
		if _, isRev := s.Revision(rev); !isRev || rev == newRev {
			continue
		}
		u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodeRevisionStillReferenced, Severity: plan.Info,
			Object:  mesh.ObjectRef{Kind: "Namespace", Name: n.Name},
			Message: fmt.Sprintf("namespace %s is pinned to revision %s by name, not through a tag; the plan leaves it there", n.Name, rev),
			Remedy:  fmt.Sprintf("kubectl label namespace %s istio.io/rev=%s --overwrite and restart its workloads, or point it at a tag", n.Name, newRev)})
	}
}

func (u *upgrader) gateways(s *mesh.Snapshot, target mesh.Version, prefix, newRev string) {
	for _, g := range s.Gateways {
		if g.Kind != mesh.GatewayKindDeployment {
			continue
		}
		h, ok := u.release(s, "gateway", g.HelmRelease)
		if !ok {
			u.add(plan.Step{ID: prefix + "gateways/" + g.Namespace + "/" + g.Name + "/restart",
				Description: fmt.Sprintf("restart gateway %s/%s so injection gives it the %s proxy", g.Namespace, g.Name, target),
				Reason:      "it was not installed with Helm; a restart re-injects it through its tag", Risk: plan.RiskHigh,
				Restart:      &plan.Restart{Workloads: []mesh.ObjectRef{{Kind: "Deployment", Namespace: g.Namespace, Name: g.Name}}, BatchSize: 1},
				Verification: []plan.Check{deploymentReady(g.Namespace, g.Name)}})
			continue
		}
		set := map[string]any{}
		if pinned, _ := h.Values["revision"].(string); pinned != "" && newRev != "" {
			if _, isRev := s.Revision(pinned); isRev {
				set["revision"] = newRev
			}
		}
		owner := newRev
		if owner == "" {
			owner = g.Revision
		}
		st := u.upgradeRelease(prefix+"gateways/"+g.Namespace+"/"+h.Name+"/upgrade", fmt.Sprintf("upgrade gateway release %s/%s to %s", g.Namespace, h.Name, target),
			"gateways are data plane: they move after the control plane they connect to, one at a time", h, target, set, plan.RiskHigh,
			deploymentReady(g.Namespace, g.Name),
			plan.Check{Type: plan.CheckGatewayOwner, Object: g.Ref(), Params: map[string]string{"revision": owner}, Description: fmt.Sprintf("%s is owned by revision %s", g.Ref(), owner)})
		u.add(st)
		u.add(plan.Step{ID: prefix + "gateways/" + g.Namespace + "/" + h.Name + "/health", Description: fmt.Sprintf("health gate after gateway %s/%s", g.Namespace, g.Name),
			Risk: plan.RiskNone, HealthGate: &plan.HealthGate{Probe: u.probe(), Scope: "gateway " + g.Namespace + "/" + g.Name, SettleSeconds: 60}})
	}
}

func (u *upgrader) waypointOwners(after *mesh.Snapshot, prefix string) {
	var checks []plan.Check
	for _, g := range after.Gateways {
		if g.Kind != mesh.GatewayKindAPI || g.Revision == "" {
			continue
		}
		checks = append(checks, plan.Check{Type: plan.CheckGatewayOwner, Object: g.Ref(), Params: map[string]string{"revision": g.Revision},
			Description: fmt.Sprintf("%s is owned by revision %s", g.Ref(), g.Revision)})
	}
	if len(checks) == 0 {
		return
	}
	u.add(plan.Step{ID: prefix + "waypoints/verify", Description: "verify that waypoints and Gateway API gateways follow their tags",
		Reason: "istiod of the owning revision redeploys them; an unexpected owner means a label pins them", Risk: plan.RiskNone,
		Verify: &plan.Verification{Checks: checks}})
}

func (u *upgrader) defaultRevision(s *mesh.Snapshot, prefix, newRev string) {
	if s.DefaultRevision == "" || s.DefaultRevision == newRev {
		return
	}
	base, ok := u.release(s, "base", "")
	if !ok {
		return
	}
	h := base
	st := u.upgradeRelease(prefix+"base/default-revision", fmt.Sprintf("make %s the default revision (istiod-default-validator)", newRev),
		fmt.Sprintf("the default revision was %s; config validation and, from 1.28, unlabelled gateways follow it", s.DefaultRevision),
		h, u.hop, map[string]any{"defaultRevision": newRev}, plan.RiskMedium,
		plan.Check{Type: plan.CheckDefaultRevision, Params: map[string]string{"revision": newRev}, Description: "istiod-default-validator is labelled istio.io/rev=" + newRev})
	u.add(st)
}

// removeOld plans the removal of every old revision; a removal is blocked while something refers to it.
func (u *upgrader) removeOld(s, after *mesh.Snapshot, prefix, newRev string) {
	for _, r := range s.Revisions {
		if r.Name == newRev {
			continue
		}
		refs := revision.References(after, r.Name)
		id := prefix + "istiod/" + r.Name + "/"
		h, hasRelease := u.release(s, "istiod", r.HelmRelease)
		u.add(plan.Step{ID: id + "approve", Description: fmt.Sprintf("approve removing revision %s (%s)", r.Name, r.Version), Risk: plan.RiskNone,
			Approval: &plan.Approval{Message: fmt.Sprintf("every tag now points at %s; removing %s can be undone only by reinstalling from the backup", newRev, r.Name)}})
		objs := []plan.BackupObject{
			{APIVersion: "apps/v1", Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}},
			{APIVersion: "admissionregistration.k8s.io/v1", Object: mesh.ObjectRef{Kind: "MutatingWebhookConfiguration", Name: injectorName(r)}},
		}
		if hasRelease {
			objs = append([]plan.BackupObject{{HelmRelease: h.Name, Object: helmRef(h)}}, objs...)
		}
		u.add(plan.Step{ID: id + "backup", Description: fmt.Sprintf("back up revision %s (Helm release, Deployment, injector) and read the backup back", r.Name),
			Risk: plan.RiskNone, Backup: &plan.Backup{Objects: objs},
			Verification: []plan.Check{{Type: plan.CheckBackupReadable, Params: map[string]string{"revision": r.Name}, Description: "every backed-up object reads back equal"}}})
		rm := plan.Step{ID: id + "remove", Description: fmt.Sprintf("remove the old control plane revision %s", r.Name),
			Reason: "an old revision left running keeps serving whatever still points at it, and hides mistakes", Risk: plan.RiskMedium,
			Preconditions: []plan.Check{{Type: plan.CheckNoReferences, Params: map[string]string{"revision": r.Name},
				Description: fmt.Sprintf("no tag, namespace, pod, gateway, waypoint, ztunnel or default revision refers to %s", r.Name)}},
			Verification: []plan.Check{{Type: plan.CheckNoReferences, Params: map[string]string{"revision": r.Name, "gone": "true"},
				Description: fmt.Sprintf("revision %s is gone and nothing refers to it", r.Name)}},
		}
		rm.Notes = append(rm.Notes, fmt.Sprintf("undo: reinstall from the backup written by %sbackup (helm install with the saved chart version and values)", id))
		if hasRelease {
			rm.HelmUninstall = &plan.HelmUninstall{Release: h.Name, Namespace: h.Namespace, BackupStep: id + "backup"}
			if len(refs) == 0 {
				gone := h
				gone.Status = "uninstalled"
				u.track(gone)
			}
		} else {
			rm.DeleteObject = &plan.DeleteObject{APIVersion: "apps/v1", Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}, BackupStep: id + "backup"}
			rm.Notes = append(rm.Notes, "not installed with Helm: only the Deployment is deleted here; remove the rest with istioctl uninstall --revision "+r.Name)
		}
		if len(refs) > 0 {
			var what []string
			for _, ref := range refs {
				what = append(what, ref.String())
			}
			rm.Blocked = fmt.Sprintf("revision %s is still referred to after the planned moves: %s", r.Name, strings.Join(what, "; "))
			u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodeRevisionStillReferenced, Severity: plan.Info,
				Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}, Component: "istiod/" + r.Name,
				Message: rm.Blocked,
				Remedy:  fmt.Sprintf("point each of them at a tag or at %s, then re-plan; the removal step stays blocked until then", newRev)})
		}
		u.add(rm)
	}
}

func injectorName(r mesh.Revision) string {
	name := "istio-sidecar-injector"
	if r.Name != "default" {
		name += "-" + r.Name
	}
	if r.Namespace != "istio-system" {
		name += "-" + r.Namespace
	}
	return name
}

// settingChange is a chart default that changes at a version.
type settingChange struct {
	chart, key string
	since      mesh.Version
	what       string
}

var settingChanges = []settingChange{
	{"cni", "ambient.dnsCapture", mesh.Version{Major: 1, Minor: 25}, "DNS capture for ambient pods turns on by default (false → true)"},
	{"cni", "ambient.reconcileIptablesOnStartup", mesh.Version{Major: 1, Minor: 29}, "the agent reconciles pod iptables rules on start (false → true)"},
	{"cni", "terminationGracePeriodSeconds", mesh.Version{Major: 1, Minor: 29}, "the CNI agent's grace period becomes a value, default 30s instead of a fixed 5s"},
	{"ztunnel", "resourceName", mesh.Version{Major: 1, Minor: 25, Patch: 1}, "ztunnel can be renamed (resourceName); istiod's trustedZtunnelName follows in 1.25.2"},
	{"ztunnel", "updateStrategy", mesh.Version{Major: 1, Minor: 26}, "the ztunnel update strategy becomes a value (needed for node by node)"},
	{"gateway", "labels", mesh.Version{Major: 1, Minor: 25}, "gateway pods get istio.io/dataplane-mode=none by default and stay out of ambient"},
	{"base", "crds", mesh.Version{Major: 1, Minor: 27}, "networking.istio.io CRDs store v1 instead of v1beta1"},
	{"base", "crds", mesh.Version{Major: 1, Minor: 28}, "security.istio.io CRDs store v1 instead of v1beta1; tags are also rendered as Services"},
}

func (u *upgrader) settingFindings(s *mesh.Snapshot, target mesh.Version) {
	for _, c := range settingChanges {
		h, ok := u.release(s, c.chart, "")
		if !ok {
			continue
		}
		from, err := mesh.ParseVersion(h.ChartVersion)
		if err != nil || !from.Less(c.since) || target.Less(c.since) {
			continue
		}
		if c.key != "crds" && hasValue(h.Values, c.key) {
			continue
		}
		u.p.Findings = append(u.p.Findings, plan.Finding{Code: plan.CodeSettingDefaultChanges, Severity: plan.Info, Object: helmRef(h),
			Message: fmt.Sprintf("%s: from %s %s (release %s does not set %s)", c.chart, c.since, c.what, h.Name, c.key),
			Remedy:  fmt.Sprintf("set %s in the release values if you need the old behaviour", c.key)})
	}
}

func hasValue(v map[string]any, dotted string) bool {
	cur := any(v)
	for _, part := range strings.Split(dotted, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
