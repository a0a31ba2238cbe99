//go:build e2e

package runbook

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
)

// The upgrade the node-by-node runbook carries out: istiod in place, ztunnel node by node.
const (
	targetVersion = "1.31.4"
	batchSize     = 3
)

// TestNodeByNodeRunbookRunsByHand plans an in-place upgrade 1.30.3 → 1.31.4 with ztunnel node by
// node (6 nodes, batches of 3) on a kwok cluster, renders its full Markdown runbook, and runs every
// command and printed check it extracts (Extract), in order, with bash, kubectl and the helm CLI: a
// command or check that exits non-zero fails the test (a "before:" check before its step, a
// "verify:" check once the step's commands ran). It then builds a twin cluster (same nodes, same
// installation, same fixtures), plans the same upgrade there and applies it with the executor
// (execute.New with the Helm SDK adapter, the e2e mesh-health probe, every approval granted), and
// compares the end states (endState): Helm releases (chart, version, revision count), istiod
// revisions, tags, CNI and ztunnel (version, image, the whole update strategy, ready pods per
// node), node schedulability and where the fixtures' pods run (pool, ready count). Health gates
// print no command (no probe is described to the runbook), so by hand they are not run.
func TestNodeByNodeRunbookRunsByHand(t *testing.T) {
	ctx := context.Background()
	byHand, byExecutor := runTwins(ctx, t, twins{
		name: "nbn", cidrs: [2]string{"127.97.0.0/16", "127.98.0.0/16"}, nodesPerPool: 3,
		plan: planNodeByNode,
		// Every node goes through cordon, drain, replace, wait and uncordon, each printing a command.
		minCommands: 6 * 5,
		boundedWait: true,
	})
	if byHand == nil || byExecutor == nil {
		return
	}
	if d := cmp.Diff(byExecutor, byHand); d != "" {
		t.Errorf("the state the runbook leaves differs from the executor's (-executor +by hand):\n%s", d)
	}
	// The state itself must be the upgraded one, so that two runs that both did nothing cannot pass.
	if byHand.Ztunnel.Version != targetVersion || byHand.Ztunnel.Strategy != (mesh.UpdateStrategy{Type: "RollingUpdate", MaxSurge: "1", MaxUnavailable: "0"}) {
		t.Errorf("ztunnel after the runbook: %+v, want version %s with the chart's strategy (surge 1, none unavailable)", byHand.Ztunnel, targetVersion)
	}
}

// planNodeByNode plans the upgrade of h's installation to targetVersion from the charts of
// ChartsDir stamped as that release, and fails the test unless the plan is runnable.
func planNodeByNode(ctx context.Context, t *testing.T, h *harness.Harness) *plan.Plan {
	t.Helper()
	paths, err := h.Helm.StampCharts(filepath.Join(h.Cluster.RunDir(), "charts-"+targetVersion), targetVersion)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
	if err != nil {
		t.Fatal(err)
	}
	next := charts.Istio{Namespace: harness.IstioNamespace, Revision: harness.Revision, Version: targetVersion, Hub: harness.IstioHub,
		GatewayNamespace: harness.GatewayNamespace, GatewayRelease: harness.GatewayRelease}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{
		Target:   mesh.MustParseVersion(targetVersion),
		Strategy: ambient.StrategyInPlace,
		Ztunnel:  ambient.ZtunnelNodeByNode{BatchSize: batchSize},
		Charts:   ambient.ChartSource{Paths: paths},
		Values: map[string]map[string]any{
			"istiod":  {"global": map[string]any{"hub": next.Hub, "tag": next.Version}},
			"cni":     next.CNIValues(),
			"ztunnel": {"hub": next.Hub, "tag": next.Version, "global": map[string]any{"hub": next.Hub, "tag": next.Version}},
			"gateway": next.GatewayValues(),
		},
		Today: time.Now(),
	})
	if err != nil {
		t.Fatalf("PlanUpgrade: %v", err)
	}
	if !p.Runnable() {
		for _, f := range p.Findings {
			t.Logf("finding %s %s: %s", f.Severity, f.Code, f.Message)
		}
		t.Fatalf("the plan is not runnable: stopping findings %v", plan.Stopping(p.Findings))
	}
	return p
}

// endState is what the comparison of the two runs looks at.
type endState struct {
	Releases  []string
	Revisions []string
	Tags      []string
	CNI       component
	Ztunnel   component
	// Cordoned are the unschedulable nodes.
	Cordoned []string
	// Pods counts, per fixture Deployment, its ready pods by pool.
	Pods map[string]map[string]int
}

// component is a DaemonSet of the mesh at the end of a run.
type component struct {
	Version  string
	Image    string
	Strategy mesh.UpdateStrategy
	// ReadyNodes are the nodes running one ready pod of it at Version.
	ReadyNodes []string
}

func captureState(ctx context.Context, t *testing.T, h *harness.Harness) *endState {
	t.Helper()
	s, err := observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
	if err != nil {
		t.Fatal(err)
	}
	st := &endState{Pods: map[string]map[string]int{}}
	for _, r := range s.HelmReleases {
		st.Releases = append(st.Releases, fmt.Sprintf("%s/%s %s %s revision %d", r.Namespace, r.Name, r.Chart, r.ChartVersion, r.Revision))
	}
	for _, r := range s.Revisions {
		st.Revisions = append(st.Revisions, fmt.Sprintf("%s %s %s %d/%d ready", r.Name, r.Version, r.Image, r.ReadyReplicas, r.Replicas))
	}
	for _, g := range s.Tags {
		st.Tags = append(st.Tags, g.Name+"→"+g.Revision)
	}
	if s.CNI != nil {
		st.CNI = component{Version: s.CNI.Version.String(), Image: s.CNI.Image, Strategy: s.CNI.UpdateStrategy, ReadyNodes: readyNodes(s.CNI.Pods, s.CNI.Version)}
	}
	if len(s.Ztunnels) != 1 {
		t.Fatalf("%d ztunnel DaemonSets at the end, want 1", len(s.Ztunnels))
	}
	z := s.Ztunnels[0]
	st.Ztunnel = component{Version: z.Version.String(), Image: z.Image, Strategy: z.UpdateStrategy, ReadyNodes: readyNodes(z.Pods, z.Version)}
	pool := map[string]string{}
	for _, n := range s.Nodes {
		pool[n.Name] = n.Pool
		if n.Unschedulable {
			st.Cordoned = append(st.Cordoned, n.Name)
		}
	}
	for _, ns := range []string{"shop", "orders"} {
		pods, err := h.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != "Running" {
				continue
			}
			key := ns + "/" + p.Labels["app"]
			if st.Pods[key] == nil {
				st.Pods[key] = map[string]int{}
			}
			st.Pods[key][pool[p.Spec.NodeName]]++
		}
	}
	for _, l := range [][]string{st.Releases, st.Revisions, st.Tags, st.Cordoned} {
		sort.Strings(l)
	}
	t.Logf("end state: %s", strings.ReplaceAll(fmt.Sprintf("%+v", *st), " ", " "))
	return st
}

func readyNodes(pods []mesh.NodePod, v mesh.Version) []string {
	var out []string
	for _, p := range pods {
		if p.Ready && !p.Terminating && p.Version == v {
			out = append(out, p.Node)
		}
	}
	sort.Strings(out)
	return out
}
