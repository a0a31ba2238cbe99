package ztunnel

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// updateStrategyValue is the first ztunnel chart with an updateStrategy value (istio/istio@1.26.0:
// manifests/charts/ztunnel/values.yaml; 1.24–1.25 hard-code a rolling update), which node by node
// needs.
var updateStrategyValue = mesh.Version{Major: 1, Minor: 26}

// UpgradeOptions configure AddUpgrade.
type UpgradeOptions struct {
	// Target is the version ztunnel moves to.
	Target mesh.Version
	// Revision is the istiod revision a ztunnel pinned to a revision moves to; "" leaves the pin.
	Revision string
	// Strategy is how: InPlace, NodeByNode or BlueGreen; nil means NodeByNode{}.
	Strategy Strategy
	// IDPrefix is put before every step ID (chained hops).
	IDPrefix string
}

func (o UpgradeOptions) strategy() Strategy {
	if o.Strategy == nil {
		return NodeByNode{}
	}
	return o.Strategy
}

// DrainTime returns ztunnel's own drain deadline for a pod grace period in seconds: grace − 5 s when
// the grace is over 10 s, else grace − 1 s, at least 1 s; 5 s when no grace is set
// (istio/ztunnel@1.30.0: src/config.rs, self_termination_deadline from TERMINATION_GRACE_PERIOD_SECONDS;
// CONNECTION_TERMINATION_DEADLINE, when set, wins).
func DrainTime(grace int64) int64 {
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

// AddUpgrade adds the steps that move every ztunnel DaemonSet of the snapshot to opts.Target with the
// chosen strategy. A ztunnel pinned to a revision moves to opts.Revision in the same upgrade, so it
// restarts once. Every upgrade to a chart with the resourceName value (1.25+) pins it to the running
// DaemonSet's name, so no hop renames it; an upgrade that would rename it anyway gets a blocking
// finding (see ChartNames). A ztunnel without a Helm release is left alone (a finding says so).
// Charts older than 1.26 have no updateStrategy value: node by node falls back to in place there,
// and the step says so.
func AddUpgrade(b *steps.Builder, s *mesh.Snapshot, opts UpgradeOptions) error {
	strategy := opts.strategy()
	if err := strategy.Validate(); err != nil {
		return err
	}
	if g, ok := strategy.(BlueGreen); ok {
		return AddBlueGreen(b, s, BlueGreenStepOptions{Target: opts.Target, Revision: blueGreenRevision(s, opts.Revision), Strategy: g, IDPrefix: opts.IDPrefix})
	}
	for _, z := range s.Ztunnels {
		h, ok := b.Release(s, "ztunnel", z.HelmRelease)
		if !ok {
			b.NoRelease(z.Ref(), "ztunnel "+z.Namespace+"/"+z.Name)
			continue
		}
		set := map[string]any{}
		if z.Revision != "" && opts.Revision != "" && z.Revision != opts.Revision {
			set["revision"] = opts.Revision
			b.Finding(plan.Finding{Code: plan.CodeZtunnelRevisionSwitchRestarts, Severity: plan.Info, Object: z.Ref(), Component: z.Component(),
				Message: fmt.Sprintf("ztunnel %s is pinned to revision %s (the chart points it at istiod-%s); switching it to %s restarts ztunnel on every node", z.Name, z.Revision, z.Revision, opts.Revision),
				Remedy:  "the plan folds the switch into the ztunnel upgrade so ztunnel restarts once; the old revision is removed only after"})
		}
		pinName(b, s, z, h, opts.Target, set)
		nbn, nodeByNode := strategy.(NodeByNode)
		if nodeByNode && !opts.Target.Less(updateStrategyValue) {
			planNodeByNode(b, s, z, h, opts, nbn, set)
		} else {
			planInPlace(b, z, h, opts, set, nodeByNode)
		}
	}
	return nil
}

func rolledOut(z mesh.Ztunnel, v mesh.Version) plan.Check {
	return plan.NewCheck(z.Ref(), plan.DaemonSetRolledOutArgs{Version: v.String()}, fmt.Sprintf("ztunnel %s runs %s on every node", z.Name, v))
}

func resetNote(z mesh.Ztunnel) string {
	grace := z.TerminationGracePeriodSeconds
	return fmt.Sprintf("replacing ztunnel resets long-lived connections of the pods it serves on that node; ztunnel drains for %ds (grace period %ds)", DrainTime(grace), grace)
}

func idBase(s *mesh.Snapshot, z mesh.Ztunnel, prefix string) string {
	base := prefix + "ztunnel/"
	if len(s.Ztunnels) > 1 {
		base += z.Name + "/"
	}
	return base
}

func planInPlace(b *steps.Builder, z mesh.Ztunnel, h mesh.HelmRelease, opts UpgradeOptions, set map[string]any, wantedNodeByNode bool) {
	st := b.Upgrade(opts.IDPrefix+"ztunnel/"+z.Name+"/upgrade", fmt.Sprintf("upgrade ztunnel %s in place from %s to %s", z.Name, z.Version, opts.Target),
		"ztunnel 1.x needs control plane 1.x or 1.x+1, and it moves after the CNI", h, opts.Target, set, plan.RiskHigh, rolledOut(z, opts.Target))
	st.Notes = append(st.Notes, resetNote(z)+"; this happens on every node as the DaemonSet rolls (maxSurge 1, maxUnavailable 0)")
	if wantedNodeByNode {
		st.Notes = append(st.Notes, fmt.Sprintf("node by node needs the chart's updateStrategy value (Istio %s+); %s has none, so ztunnel rolls in place", updateStrategyValue.MinorString(), opts.Target))
	}
	b.Finding(plan.Finding{Code: plan.CodeZtunnelReplacementResetsConnections, Severity: plan.Info, Object: z.Ref(), Component: z.Component(),
		Message: "an in-place ztunnel rollout resets long-lived connections on every node",
		Remedy:  "plan it in a quiet window, or use node-by-node (drains each node first)"})
	b.Add(st)
	b.Add(plan.Step{ID: opts.IDPrefix + "ztunnel/" + z.Name + "/health", Description: "health gate after the ztunnel rollout", Risk: plan.RiskNone,
		HealthGate: &plan.HealthGate{Probe: b.Probe(), Scope: "ztunnel " + z.Name, SettleSeconds: 60}})
}

func planNodeByNode(b *steps.Builder, s *mesh.Snapshot, z mesh.Ztunnel, h mesh.HelmRelease, opts UpgradeOptions, nbn NodeByNode, set map[string]any) {
	onDelete := map[string]any{}
	steps.Merge(onDelete, set)
	onDelete["updateStrategy"] = map[string]any{"type": "OnDelete", "rollingUpdate": nil}
	st := b.Upgrade(opts.IDPrefix+"ztunnel/"+z.Name+"/on-delete", fmt.Sprintf("upgrade the ztunnel %s release to %s with updateStrategy OnDelete", z.Name, opts.Target),
		"OnDelete changes the DaemonSet without restarting any pod; each node is then replaced by hand, after its workloads are drained", h, opts.Target, onDelete, plan.RiskLow)
	st.Postconditions = append(st.Postconditions, plan.NewCheck(z.Ref(), plan.NodeAgentReadyArgs{Version: z.Version.String(), All: true},
		"no ztunnel pod restarted: every node still runs a ready ztunnel"))
	b.Add(st)
	nodeWaves(b, s, z, opts, nbn)
	strategy, from := strategyBefore(z)
	restoreSet := map[string]any{"updateStrategy": strategy}
	if rn, pinned := set["resourceName"]; pinned {
		restoreSet["resourceName"] = rn
	}
	now, _ := b.Release(s, "ztunnel", h.Name)
	restore := b.Upgrade(opts.IDPrefix+"ztunnel/"+z.Name+"/rolling-update",
		fmt.Sprintf("set ztunnel %s back to the update strategy it ran with: %s", z.Name, describeStrategy(strategy)),
		"future upgrades roll again as before; changing the strategy restarts no pod. Nodes that joined during the run got their ztunnel from the new template and are verified here too",
		now, opts.Target, restoreSet, plan.RiskLow, rolledOut(z, opts.Target),
		plan.NewCheck(z.Ref(), plan.NodeAgentReadyArgs{Version: opts.Target.String(), All: true},
			fmt.Sprintf("every ready node ztunnel %s selects, including nodes added during the run, runs a ready ztunnel %s", z.Name, opts.Target)))
	restore.Notes = append(restore.Notes, "the strategy is written whole, as "+from+"; a null would drop it, and the API default that then applies (maxUnavailable 1, no surge) leaves each node without a ztunnel while the next roll replaces it")
	b.Add(restore)
}

// chartStrategy is the ztunnel chart's own update strategy (istio/istio@1.26.0 to @1.30.3 and
// @release-1.31: manifests/charts/ztunnel/values.yaml, updateStrategy): a new pod starts beside the
// old one before it goes.
var chartStrategy = mesh.UpdateStrategy{Type: "RollingUpdate", MaxSurge: "1", MaxUnavailable: "0"}

// strategyBefore returns the update strategy the ztunnel DaemonSet ran with before the plan, as the
// whole Helm value that renders it again, and where it was read. It is the DaemonSet's own spec as
// observed; a field the observation left empty is the API server's default, which is what the
// DaemonSet had (k8s.io/kubernetes@v1.37.2: pkg/apis/apps/v1/defaults.go, SetDefaults_DaemonSet:
// RollingUpdate, maxUnavailable 1, maxSurge 0). With no observed strategy at all it is the chart's.
// Writing it whole matters: the chart renders updateStrategy only when the value is set
// (templates/daemonset.yaml, "with .Values.updateStrategy"), so a null drops the chart default and
// the API default takes over, and a partial value merged over the OnDelete the plan set keeps
// OnDelete.
func strategyBefore(z mesh.Ztunnel) (map[string]any, string) {
	st, from := z.UpdateStrategy, fmt.Sprintf("DaemonSet %s/%s ran it before the upgrade", z.Namespace, z.Name)
	if st.Type == "" {
		st, from = chartStrategy, "the chart's default (the DaemonSet's strategy was not observed)"
	}
	if st.Type != "RollingUpdate" {
		return map[string]any{"type": st.Type, "rollingUpdate": nil}, from
	}
	return map[string]any{"type": st.Type, "rollingUpdate": map[string]any{
		"maxSurge":       intOrPercent(steps.OrDefault(st.MaxSurge, "0")),
		"maxUnavailable": intOrPercent(steps.OrDefault(st.MaxUnavailable, "1")),
	}}, from
}

// intOrPercent is an IntOrString as a Helm value: a whole number, or a percentage string.
func intOrPercent(v string) any {
	if n, err := strconv.Atoi(v); err == nil {
		return float64(n)
	}
	return v
}

func describeStrategy(v map[string]any) string {
	ru, _ := v["rollingUpdate"].(map[string]any)
	if ru == nil {
		return fmt.Sprint(v["type"])
	}
	return fmt.Sprintf("%v, maxSurge %v, maxUnavailable %v", v["type"], ru["maxSurge"], ru["maxUnavailable"])
}

// nodeWaves adds, per batch of nodes: cordon, drain, replace the ztunnel pod, wait for the new one,
// uncordon; then a health gate. Every node is cordoned and drained before its ztunnel is replaced,
// also a node that ran no ambient pod when the plan was made: pods the plan's earlier drains evict may
// be rescheduled onto it, and the cordon keeps new ones away during the swap. Such a node's drain
// evicts only the ambient pods found there when it runs (usually none).
func nodeWaves(b *steps.Builder, s *mesh.Snapshot, z mesh.Ztunnel, opts UpgradeOptions, nbn NodeByNode) {
	ix := steps.NewIndex(s)
	var nodes []mesh.Node
	for _, p := range z.Pods {
		n, ok := s.Node(p.Node)
		if !ok {
			n = mesh.Node{Name: p.Node}
		}
		nodes = append(nodes, n)
	}
	order := b.DrainOrder(s, ix, nodes, s.AmbientNodes())
	b.GraceBeyondTimeout(ix, order, nbn.drainSeconds(), "NodeByNode.DrainTimeout", false)
	batch := nbn.batch()
	base := idBase(s, z, opts.IDPrefix)
	note := resetNote(z)
	before := []string{b.Last()}
	lost := nodeByNodeLoss(ix, order)
	if len(lost) > 0 {
		b.Finding(plan.Finding{Code: plan.CodeDrainLosesEmptyDirData, Severity: plan.Info, Object: z.Ref(), Component: z.Component(),
			Details: map[string]string{"pods": strconv.Itoa(len(lost))},
			Message: fmt.Sprintf("draining the nodes to replace ztunnel %s/%s loses the emptyDir data of %d pod(s): %s", z.Namespace, z.Name, len(lost), strings.Join(lost, ", ")),
			Remedy:  askOrEvict(nbn.LocalStorage)})
	}
	var waves [][]steps.DrainNode
	var rooms []steps.Room
	if steps.PlacementAssessed(s) {
		var unplaced []steps.Unplaced
		waves, rooms, unplaced = ix.PlaceWaves(s, order, batch)
		b.UnplacedFindings(z.Ref(), unplaced, "until their wave ends, even with their node drained alone", func(w mesh.ObjectRef, needs string) string {
			return fmt.Sprintf("make room before the run: add a node where %s may run with %s free, scale another workload down, or relax the constraint named; a smaller NodeByNode.BatchSize does not help", w, needs)
		})
	} else {
		waves, rooms = ix.Waves(s, order, batch)
		b.PlacementNotAssessed(z.Ref(), z.Component(), "")
	}
	roomFinding(b, z, batch, waves, rooms)
	for i, nodes := range waves {
		if len(lost) > 0 && nbn.LocalStorage != LocalStorageEvict && len(nodeByNodeLoss(ix, nodes)) > 0 {
			st := steps.LocalStorageApproval(fmt.Sprintf("%sbatch/%d/approve-local-storage", base, i+1), lost)
			b.Add(st, before...)
			before, lost = []string{st.ID}, nil
		}
		var done []string
		wave := fmt.Sprintf("%sbatch/%d", base, i+1)
		for _, d := range nodes {
			id := base + "node/" + d.Node.Name + "/"
			unit := &plan.WaveUnit{ID: wave, Node: d.Node.Name}
			add := func(st plan.Step, deps ...string) {
				st.Wave = unit
				b.Add(st, deps...)
			}
			add(steps.CordonStep(id+"cordon", d.Node), before...)
			add(steps.DrainStep(id+"drain", d, nbn.drainSeconds(), "move ambient workloads off the node so no connection goes through the ztunnel being replaced"))
			risk := plan.RiskLow
			if d.Ambient {
				risk = plan.RiskMedium
			}
			add(plan.Step{ID: id + "replace", Description: fmt.Sprintf("delete the ztunnel pod on %s so the DaemonSet recreates it at %s", d.Node.Name, opts.Target),
				Reason: note, Risk: risk,
				DeletePod: &plan.PodSelection{Namespace: z.Namespace, Selector: z.Selector, Node: d.Node.Name}})
			add(plan.Step{ID: id + "wait", Description: fmt.Sprintf("wait until ztunnel %s is ready on %s", opts.Target, d.Node.Name), Risk: plan.RiskNone,
				WaitFor: &plan.WaitFor{TimeoutSeconds: 300, Check: plan.NewCheck(z.Ref(), plan.NodeAgentReadyArgs{Node: d.Node.Name, Version: opts.Target.String()},
					fmt.Sprintf("a ready ztunnel %s pod runs on %s", opts.Target, d.Node.Name))}})
			if d.Node.Unschedulable {
				// Cordoned before the upgrade: someone wanted it so; the plan leaves it cordoned.
				all := b.Plan().Steps
				all[len(all)-1].Notes = append(all[len(all)-1].Notes,
					fmt.Sprintf("%s was cordoned before the upgrade; the plan leaves it cordoned", d.Node.Name))
			} else {
				add(steps.UncordonStep(id+"uncordon", d.Node.Name))
			}
			done = append(done, b.Last())
		}
		gate := plan.Step{ID: fmt.Sprintf("%sbatch/%d/health", base, i+1), Risk: plan.RiskNone,
			Description: fmt.Sprintf("health gate after ztunnel batch %d of %d", i+1, len(waves)),
			HealthGate:  &plan.HealthGate{Probe: b.Probe(), Scope: "ztunnel batch", SettleSeconds: 30}}
		b.Add(gate, done...)
		before = []string{gate.ID}
	}
}

// nodeByNodeLoss names the pods whose emptyDir data the drains of the nodes lose: those of nodes
// that ran ambient pods, which are drained whole (the others' drains evict only ambient pods moved
// there since planning). Node by node evicts Jobs too.
func nodeByNodeLoss(ix *steps.Index, order []steps.DrainNode) []string {
	var nodes []mesh.Node
	for _, d := range order {
		if d.Ambient {
			nodes = append(nodes, d.Node)
		}
	}
	return steps.LocalStorageLoss(ix, nodes, false)
}

func askOrEvict(p LocalStoragePolicy) string {
	if p == LocalStorageEvict {
		return "the strategy drains them without asking (LocalStorage: evict); move the data elsewhere first if it matters"
	}
	return "the plan asks for approval before the first drain that loses it (LocalStorage: evict drains without asking)"
}

// blueGreenRevision is the revision green connects to: the new one when the upgrade installs one,
// else the one blue connects to.
func blueGreenRevision(s *mesh.Snapshot, newRev string) string {
	if newRev != "" {
		return newRev
	}
	if len(s.Ztunnels) == 1 {
		if rev, ok := s.ZtunnelRevision(s.Ztunnels[0]); ok {
			return rev
		}
	}
	return ""
}

// roomFinding says, for each set of pools whose size cut waves short (steps.Index.Waves), why the
// waves hold fewer nodes than the batch size.
func roomFinding(b *steps.Builder, z mesh.Ztunnel, batch int, waves [][]steps.DrainNode, rooms []steps.Room) {
	nodes := 0
	for _, w := range waves {
		nodes += len(w)
	}
	for _, r := range rooms {
		if r.Capacity {
			b.Finding(plan.Finding{Code: plan.CodeWaveKeepsRoomForEvictedPods, Severity: plan.Info, Object: z.Ref(), Component: z.Component(),
				Related: r.Workloads,
				Details: map[string]string{"capacity": "true", "deferred": strconv.Itoa(r.Deferred), "waves": strconv.Itoa(len(waves)), "batch": strconv.Itoa(batch)},
				Message: fmt.Sprintf("the drains replacing ztunnel %s/%s come in %d waves for %d nodes, some smaller than the batch of %d: %d time(s) a node was kept for a later wave because a pod of %s that its drain evicts would have found no node with room outside the wave (counted in requests, under its node selector, affinity, taints, volumes and spread)",
					z.Namespace, z.Name, len(waves), nodes, batch, r.Deferred, r.Workloads[0]),
				Remedy: "nothing to do; to drain more nodes at once, add capacity where the workload may run"})
			continue
		}
		names := make([]string, len(r.Pools))
		for i, p := range r.Pools {
			names[i] = p
			if p == "" {
				names[i] = "(nodes without a pool label)"
			}
		}
		who := r.Workloads[0].String()
		if n := len(r.Workloads); n > 1 {
			who += fmt.Sprintf(" and %d more", n-1)
		}
		b.Finding(plan.Finding{Code: plan.CodeWaveKeepsRoomForEvictedPods, Severity: plan.Info, Object: z.Ref(), Component: z.Component(),
			Related: r.Workloads,
			Details: map[string]string{"pools": strings.Join(r.Pools, ","), "schedulable": strconv.Itoa(r.Schedulable),
				"workloads": strconv.Itoa(len(r.Workloads)), "waves": strconv.Itoa(len(waves)), "batch": strconv.Itoa(batch)},
			Message: fmt.Sprintf("the drains replacing ztunnel %s/%s come in %d waves for %d nodes, some smaller than the batch of %d: no wave cordons all %d schedulable nodes of pool %s, where %s runs, so that the pods a wave evicts can move to a node outside it (else a disruption budget waiting for them would hold the wave's drains until they time out)",
				z.Namespace, z.Name, len(waves), nodes, batch, r.Schedulable, strings.Join(names, ", "), who),
			Remedy: "nothing to do; to drain more of the pool at once, add nodes to it"})
	}
}
