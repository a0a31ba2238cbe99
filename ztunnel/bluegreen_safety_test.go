package ztunnel_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

func demoSnapshot(t *testing.T) *mesh.Snapshot {
	t.Helper()
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func blueGreen(t *testing.T, s *mesh.Snapshot, g ztunnel.BlueGreen) *plan.Plan {
	t.Helper()
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: s.Ztunnels[0].Version, Strategy: g})
	if err != nil && p == nil {
		t.Fatal(err)
	}
	if len(p.Steps) == 0 {
		t.Fatalf("no steps: %v", plan.Stopping(p.Findings))
	}
	return p
}

func findings(p *plan.Plan, code plan.Code) []plan.Finding {
	var out []plan.Finding
	for _, f := range p.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// localLoss are the drains of the demo mesh that lose emptyDir data, and the pods: Deployment
// search/search-indexer on ip-10-0-1-14 and StatefulSet data/postgres on ip-10-0-1-15, -16 and -17;
// the Jobs' pods too when they are evicted.
var demoLoss = []string{"Deployment search/search-indexer on ip-10-0-1-14.ec2.internal",
	"StatefulSet data/postgres on ip-10-0-1-15.ec2.internal", "StatefulSet data/postgres on ip-10-0-1-16.ec2.internal", "StatefulSet data/postgres on ip-10-0-1-17.ec2.internal"}

func TestEveryEmptyDirLossIsNamedBeforeTheFirstSuchDrain(t *testing.T) {
	pools := ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}
	for _, tc := range []struct {
		name     string
		plan     func(t *testing.T) *plan.Plan
		lossy    []string // the nodes whose drains lose data
		want     []string // pods the approval must name
		wantNone []string // pods it must not name
	}{
		{name: "a blue-green in waves of one node asks once, naming postgres on all its nodes and the indexer",
			plan: func(t *testing.T) *plan.Plan {
				return blueGreen(t, demoSnapshot(t), ztunnel.BlueGreen{BatchSize: 1, Capacity: pools})
			},
			lossy: []string{"ip-10-0-1-14.ec2.internal", "ip-10-0-1-15.ec2.internal", "ip-10-0-1-16.ec2.internal", "ip-10-0-1-17.ec2.internal"},
			want:  demoLoss, wantNone: []string{"Job batch/reindex-catalog"}},
		{name: "a blue-green that evicts Jobs names the Jobs' pods too",
			plan: func(t *testing.T) *plan.Plan {
				return blueGreen(t, demoSnapshot(t), ztunnel.BlueGreen{BatchSize: 4, Jobs: ztunnel.JobsEvict, Capacity: pools})
			},
			lossy: []string{"ip-10-0-1-14.ec2.internal", "ip-10-0-2-21.ec2.internal"},
			want:  append(slices.Clone(demoLoss), "Job batch/reindex-catalog on ip-10-0-2-21.ec2.internal")},
		{name: "a blue-green that relabels a postgres node asks before that node's drain",
			plan: func(t *testing.T) *plan.Plan {
				return blueGreen(t, demoSnapshot(t), ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{Relabel: []string{"ip-10-0-1-16.ec2.internal"}}})
			},
			lossy: []string{"ip-10-0-1-14.ec2.internal", "ip-10-0-1-16.ec2.internal"}, want: demoLoss},
		// Node by node drains whole only the nodes that ran ambient pods; search and batch are not
		// ambient namespaces, so their nodes' drains evict only ambient pods moved there since.
		{name: "node by node asks too, before its first drain that loses data, naming the pods its whole drains evict",
			plan: func(t *testing.T) *plan.Plan {
				return planZtunnel(t, demoSnapshot(t), ztunnel.UpgradeOptions{Target: v("1.30.3"), Strategy: ztunnel.NodeByNode{BatchSize: 2}}, nil)
			},
			lossy: []string{"ip-10-0-1-15.ec2.internal", "ip-10-0-1-16.ec2.internal", "ip-10-0-1-17.ec2.internal"},
			want:  demoLoss[1:], wantNone: []string{"search-indexer", "reindex-catalog"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.plan(t)
			var approvals []plan.Step
			firstLossy := -1
			for i, st := range p.Steps {
				if st.Approval != nil && strings.Contains(st.Approval.Message, "emptyDir") {
					approvals = append(approvals, st)
					if firstLossy >= 0 {
						t.Errorf("approval %s comes after the drain %s that loses data", st.ID, p.Steps[firstLossy].ID)
					}
				}
				if st.Drain != nil && !st.Drain.AmbientOnly && slices.Contains(tc.lossy, st.Drain.Node) && firstLossy < 0 {
					firstLossy = i
				}
			}
			if len(approvals) != 1 {
				t.Fatalf("%d emptyDir approvals, want one before the first drain that loses data", len(approvals))
			}
			for _, pod := range tc.want {
				if !strings.Contains(approvals[0].Approval.Message, pod) {
					t.Errorf("the approval does not name %s: %s", pod, approvals[0].Approval.Message)
				}
			}
			for _, pod := range tc.wantNone {
				if strings.Contains(approvals[0].Approval.Message, pod) {
					t.Errorf("the approval names %s, which the drains wait for: %s", pod, approvals[0].Approval.Message)
				}
			}
			var named int
			for _, f := range p.Findings {
				if f.Code == plan.CodeBlueGreenLocalStorageLost || f.Code == plan.CodeDrainLosesEmptyDirData {
					named++
					for _, pod := range tc.want {
						if !strings.Contains(f.Message, pod) {
							t.Errorf("finding %s does not name %s", f.Code, pod)
						}
					}
					for _, pod := range tc.wantNone {
						if strings.Contains(f.Message, pod) {
							t.Errorf("finding %s names %s", f.Code, pod)
						}
					}
				}
			}
			if named != 1 {
				t.Errorf("%d emptyDir findings, want one", named)
			}
		})
	}
}

func TestRelabelDrainsWaitForJobs(t *testing.T) {
	// ip-10-0-2-21 runs the Job batch/reindex-catalog.
	p := blueGreen(t, demoSnapshot(t), ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{Relabel: []string{"ip-10-0-2-21.ec2.internal"}}})
	st, ok := p.Step("ztunnel/bluegreen/relabel/ip-10-0-2-21.ec2.internal/drain")
	if !ok {
		t.Fatalf("no relabel drain: %v", ids(p))
	}
	if !st.Drain.KeepJobs {
		t.Error("the relabel drain evicts the running Job batch/reindex-catalog; with Jobs: wait (the default) it must wait for it")
	}
	p = blueGreen(t, demoSnapshot(t), ztunnel.BlueGreen{Jobs: ztunnel.JobsEvict, Capacity: ztunnel.GreenCapacity{Relabel: []string{"ip-10-0-2-21.ec2.internal"}}})
	if st, _ := p.Step("ztunnel/bluegreen/relabel/ip-10-0-2-21.ec2.internal/drain"); st.Drain.KeepJobs {
		t.Error("with Jobs: evict the relabel drain evicts them")
	}
}

func TestBlueGreenWavesAreStatelessThenStatefulThenJobs(t *testing.T) {
	class := map[string]int{ // the demo's blue nodes
		"ip-10-0-1-14.ec2.internal": 1, "ip-10-0-1-15.ec2.internal": 1, "ip-10-0-1-16.ec2.internal": 1, "ip-10-0-1-17.ec2.internal": 1,
		"ip-10-0-2-21.ec2.internal": 2, "ip-10-0-2-23.ec2.internal": 2}
	for _, batch := range []int{1, 2, 3, 4, 5, 14} {
		p := blueGreen(t, demoSnapshot(t), ztunnel.BlueGreen{BatchSize: batch, Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}})
		waves := map[string][]int{}
		var order []string
		last := -1
		for _, st := range stepsWithPrefix(p, "ztunnel/bluegreen/drain/") {
			c := class[st.Drain.Node]
			if c < last {
				t.Errorf("batch %d: %s (class %d) drains after a node of class %d", batch, st.Drain.Node, c, last)
			}
			last = c
			if !slices.Contains(order, st.Wave.ID) {
				order = append(order, st.Wave.ID)
			}
			waves[st.Wave.ID] = append(waves[st.Wave.ID], c)
		}
		for id, cs := range waves {
			if slices.Min(cs) != slices.Max(cs) {
				t.Errorf("batch %d: wave %s mixes classes %v", batch, id, cs)
			}
			if len(cs) > batch {
				t.Errorf("batch %d: wave %s has %d nodes", batch, id, len(cs))
			}
		}
		f := findings(p, plan.CodeBlueGreenCapacityNeeded)
		if len(f) != 1 || f[0].Details["waves"] != strconv.Itoa(len(order)) || f[0].Details["nodes"] != "14" {
			t.Errorf("batch %d: capacity findings %+v, want one for %d waves of 14 nodes", batch, f, len(order))
		} else if got := strings.Split(f[0].Details["byWave"], ","); got[len(got)-1] != "14" || len(got) != len(order) {
			t.Errorf("batch %d: byWave %v", batch, got)
		}
	}
}

func TestOneBudgetIsOneFinding(t *testing.T) {
	// data/postgres allows no disruption and covers a pod on each of three nodes.
	for name, p := range map[string]*plan.Plan{
		"blue-green":   blueGreen(t, demoSnapshot(t), ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}}),
		"node by node": planZtunnel(t, demoSnapshot(t), ztunnel.UpgradeOptions{Target: v("1.30.3")}, nil),
	} {
		f := findings(p, plan.CodePDBBlocksDrain)
		if len(f) != 1 {
			t.Errorf("%s: %d PDB_BLOCKS_DRAIN findings for one budget, want one: %v", name, len(f), f)
			continue
		}
		var nodes []string
		for _, r := range f[0].Related {
			nodes = append(nodes, r.Name)
		}
		want := []string{"ip-10-0-1-15.ec2.internal", "ip-10-0-1-16.ec2.internal", "ip-10-0-1-17.ec2.internal"}
		if !slices.Equal(nodes, want) || f[0].Details["nodes"] != "3" || !strings.Contains(f[0].Message, "3 nodes") {
			t.Errorf("%s: the finding's nodes %v (%s), want %v", name, nodes, f[0].Message, want)
		}
	}
}

// ambientDaemonSet adds a DaemonSet in the ambient namespace shop with pods on every node.
func ambientDaemonSet(s *mesh.Snapshot) {
	var nodes []string
	for _, n := range s.Nodes {
		nodes = append(nodes, n.Name)
	}
	s.Workloads = append(s.Workloads, mesh.Workload{Namespace: "shop", Kind: "DaemonSet", Name: "log-agent", Labels: map[string]string{"app": "log-agent"},
		Pods: len(nodes), Ready: len(nodes), Mode: mesh.ModeAmbient, Redirection: map[string]int{"enabled": len(nodes)}, Nodes: nodes})
	s.Normalize()
}

func TestAmbientDaemonSetsOnBlueNodesGateTheUninstall(t *testing.T) {
	s := karpenterMesh()
	ambientDaemonSet(s)
	p := blueGreen(t, s, ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}})
	f := findings(p, plan.CodeBlueGreenDaemonSetOnBlue)
	if len(f) != 1 || f[0].Object.Name != "log-agent" || len(f[0].Related) != 6 {
		t.Fatalf("want one finding for DaemonSet shop/log-agent with its six blue nodes: %+v", f)
	}
	base := "ztunnel/bluegreen/"
	lastDrain := stepsWithPrefix(p, base+"drain/")
	remove, release, empty, uninstall := index(t, p, base+"remove-blue-nodes"), index(t, p, base+"release-daemonset-nodes"), index(t, p, base+"blue-empty"), index(t, p, base+"blue/uninstall")
	if !(index(t, p, lastDrain[len(lastDrain)-1].ID) < release && release < remove && remove < empty && empty < uninstall) {
		t.Errorf("want: last drain, release the held nodes, ask for the nodes to go, wait until no ambient pod is left, uninstall blue; got %v", ids(p))
	}
	if st := p.Steps[remove]; st.Approval == nil || !strings.Contains(st.Approval.Message, "kubectl delete node") {
		t.Errorf("the approval must say what to do: %+v", st.Approval)
	}
	if st := p.Steps[empty]; st.WaitFor == nil || st.WaitFor.Check.Type != plan.CheckNoAmbientPods {
		t.Errorf("blue-empty must wait for no ambient pod on non-green nodes: %+v", st)
	}
	if pre := p.Steps[uninstall].Preconditions; len(pre) == 0 || pre[0].Type != plan.CheckNoAmbientPods {
		t.Errorf("the uninstall must be gated on no ambient pod left: %v", pre)
	}
	if _, ok := p.Step(base + "release"); ok {
		t.Error("every held node was released before blue-empty; nothing is left to release at the end")
	}
	// Without such a DaemonSet, no node removal is asked for.
	p = blueGreen(t, karpenterMesh(), ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}})
	if _, ok := p.Step(base + "remove-blue-nodes"); ok || len(findings(p, plan.CodeBlueGreenDaemonSetOnBlue)) > 0 {
		t.Error("no ambient DaemonSet runs on blue nodes; the plan must not ask for them to go")
	}
}

func TestGreenIsProvenBeforeTheFirstBlueCordon(t *testing.T) {
	base := "ztunnel/bluegreen/"
	for _, tc := range []struct {
		name string
		c    ztunnel.GreenCapacity
		min  int
	}{
		{name: "NodePools: Karpenter launches a green node for the probe, and the plan waits for it", c: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}, min: 1},
		{name: "relabelled nodes", c: ztunnel.GreenCapacity{Relabel: []string{"batch-5"}}, min: 1},
		{name: "nodes the caller adds", c: ztunnel.GreenCapacity{Nodes: 2}, min: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := blueGreen(t, karpenterMesh(), ztunnel.BlueGreen{Capacity: tc.c})
			capacity, _ := p.Step(base + "green-capacity")
			if a, err := plan.ArgsOf[plan.NodesReadyArgs](capacity.WaitFor.Check); err != nil || a.Min != tc.min {
				t.Errorf("green-capacity waits for %+v (%v), want %d", a, err, tc.min)
			}
			probe, ok := p.Step(base + "probe/captured")
			if !ok || probe.WaitFor.Check.Type != plan.CheckWorkloadsReady || len(probe.Postconditions) == 0 || probe.Postconditions[0].Type != plan.CheckPodsCaptured {
				t.Fatalf("want the probe waited for ready and verified captured: %+v", probe)
			}
			start, _ := p.Step(base + "probe/start")
			spec := start.ApplyObject.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			if sel := spec["nodeSelector"].(map[string]any); sel[ztunnel.DefaultColourLabel] != "green" {
				t.Errorf("the probe must run on green nodes only: %v", sel)
			}
			ns, _ := p.Step(base + "probe/namespace")
			if l := ns.ApplyObject.Object["metadata"].(map[string]any)["labels"].(map[string]any); l[mesh.LabelDataplaneMode] != "ambient" {
				t.Errorf("the probe's namespace must be ambient: %v", l)
			}
			proven := index(t, p, base+"probe/captured")
			for i, st := range p.Steps {
				if st.Cordon != nil && strings.HasPrefix(st.ID, base+"cordon/") && i < proven {
					t.Errorf("%s cordons a blue node before green is proven", st.ID)
				}
			}
			if index(t, p, base+"green-capacity") > index(t, p, base+"green-ready") || index(t, p, base+"green-ready") > proven {
				t.Error("want green-capacity, green-ready, then the probe captured")
			}
			if index(t, p, base+"probe/remove") < index(t, p, base+"blue/uninstall") {
				t.Error("the probe keeps a green node until blue is gone")
			}
		})
	}
	p := blueGreen(t, karpenterMesh(), ztunnel.BlueGreen{SkipProbe: true})
	if _, ok := p.Step(base + "probe/start"); ok {
		t.Error("SkipProbe leaves the probe out")
	}
	if _, ok := p.Step(base + "green-capacity"); !ok {
		t.Error("without the probe the plan still waits for a green node")
	}
}

func TestGreensPriorityClassNeedsItsQuotaWherePlatformsSaySo(t *testing.T) {
	quota := func(p *plan.Plan) any {
		st, _ := p.Step("ztunnel/bluegreen/install-green")
		rq, _ := st.HelmInstall.Values["resourceQuotas"].(map[string]any)
		return rq["enabled"]
	}
	p := blueGreen(t, karpenterMesh(), ztunnel.BlueGreen{})
	if f := findings(p, plan.CodeBlueGreenPriorityClassQuota); len(f) != 1 || !strings.Contains(f[0].Message, "system-node-critical") || quota(p) != nil {
		t.Errorf("off GKE the plan says green runs system-node-critical pods without a quota and leaves the values: %v, quota %v", f, quota(p))
	}
	gke := meshtest.Healthy("1.30.3", 4)
	for i := range gke.Nodes {
		gke.Nodes[i].Labels["cloud.google.com/gke-nodepool"] = gke.Nodes[i].Pool
	}
	p = blueGreen(t, gke, ztunnel.BlueGreen{})
	if quota(p) != true || len(findings(p, plan.CodeBlueGreenPriorityClassQuota)) != 1 {
		t.Errorf("on GKE green needs the chart's ResourceQuota for system-node-critical: resourceQuotas.enabled = %v", quota(p))
	}
	withQuota := karpenterMesh()
	for i := range withQuota.HelmReleases {
		if withQuota.HelmReleases[i].Chart == "ztunnel" {
			withQuota.HelmReleases[i].Values["resourceQuotas"] = map[string]any{"enabled": true}
		}
	}
	if p = blueGreen(t, withQuota, ztunnel.BlueGreen{}); len(findings(p, plan.CodeBlueGreenPriorityClassQuota)) != 0 || quota(p) != true {
		t.Error("blue's quota carries over to green; nothing to say")
	}
}
