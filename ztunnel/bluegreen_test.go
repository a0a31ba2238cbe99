package ztunnel_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// karpenterMesh is a healthy 1.30.3 mesh on six nodes, in Karpenter NodePools general and batch.
func karpenterMesh() *mesh.Snapshot {
	s := meshtest.Healthy("1.30.3", 6)
	s.NodePools = []mesh.NodePool{{Name: "batch", Limits: map[string]string{"cpu": "64"}}, {Name: "general"}}
	return s
}

func v(s string) mesh.Version { return mesh.MustParseVersion(s) }

func ids(p *plan.Plan) []string {
	var out []string
	for _, st := range p.Steps {
		out = append(out, st.ID)
	}
	return out
}

func index(t *testing.T, p *plan.Plan, id string) int {
	t.Helper()
	for i, st := range p.Steps {
		if st.ID == id {
			return i
		}
	}
	t.Fatalf("no step %s in %v", id, ids(p))
	return -1
}

func stepsWithPrefix(p *plan.Plan, prefix string) []plan.Step {
	var out []plan.Step
	for _, st := range p.Steps {
		if strings.HasPrefix(st.ID, prefix) {
			out = append(out, st)
		}
	}
	return out
}

func TestBlueGreenZtunnelRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*mesh.Snapshot)
		opts   ztunnel.BlueGreenOptions
		want   string
	}{
		{name: "no target is refused", opts: ztunnel.BlueGreenOptions{}, want: "Target"},
		{name: "a green older than 1.25.1 is refused, naming the version that can run beside blue",
			mutate: func(s *mesh.Snapshot) { meshtest.SetControlPlane(s, "1.25.0"); meshtest.SetDataPlane(s, "1.25.0") },
			opts:   ztunnel.BlueGreenOptions{Target: v("1.25.0")}, want: "only from 1.25.1"},
		{name: "a mesh without ztunnel is refused", mutate: func(s *mesh.Snapshot) { s.Ztunnels = nil },
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3")}, want: "found 0"},
		{name: "a mesh with two ztunnels is refused until the previous blue-green is finished",
			mutate: func(s *mesh.Snapshot) {
				z := s.Ztunnels[0]
				z.Namespace, z.Name, z.ServiceAccount = "ztunnel-green", "ztunnel-green", "ztunnel-green"
				s.Ztunnels = append(s.Ztunnels, z)
			},
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3")}, want: "finish or undo the previous blue-green"},
		{name: "a blue without a Helm release is refused",
			mutate: func(s *mesh.Snapshot) {
				s.Ztunnels[0].HelmRelease = ""
				s.HelmReleases = slices.DeleteFunc(s.HelmReleases, func(h mesh.HelmRelease) bool { return h.Chart == "ztunnel" })
			},
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3")}, want: "has no Helm release"},
		{name: "a NodePool asked for on a cluster without Karpenter is refused",
			mutate: func(s *mesh.Snapshot) { s.NodePools = nil; s.Observation.Skipped = []string{"karpenter.sh/NodePool"} },
			opts:   ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"general"}}}},
			want:   "is Karpenter installed?"},
		{name: "a NodePool that does not exist is refused with the ones that do",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"green"}}}},
			want: `NodePool "green" does not exist (NodePools: [batch general])`},
		{name: "a node to relabel that does not run blue is refused",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{Relabel: []string{"general-99"}}}},
			want: "node general-99 to relabel green does not run ztunnel"},
		{name: "relabelling every node is refused: nothing would be left to move off",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{
				Relabel: []string{"general-0", "batch-1", "general-2", "batch-3", "general-4", "batch-5"}}}},
			want: "leaves no node to move workloads off"},
		{name: "green in blue's namespace is refused: the chart always selects app=ztunnel",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Namespace: "istio-system"}},
			want: "adopt each other's pods"},
		{name: "green with blue's resourceName on OpenShift is refused: the ClusterRole is cluster-wide there",
			mutate: func(s *mesh.Snapshot) { setReleaseValue(s, "ztunnel", "platform", "openshift") },
			opts:   ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{ResourceName: "ztunnel"}},
			want:   "with platform=openshift the chart renders a cluster-scoped ClusterRole and ClusterRoleBinding"},
		{name: "a node running blue already labelled green is refused",
			mutate: func(s *mesh.Snapshot) { s.Nodes[0].Labels[ztunnel.DefaultColourLabel] = "green" },
			opts:   ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{BlueValue: "blue", GreenValue: "green"}},
			want:   "is already labelled ambientkit.io/ztunnel=green"},
		{name: "the same value for both colours is refused",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{BlueValue: "a", GreenValue: "a"}},
			want: `both "a"`},
		{name: "the reserved switching value is refused as a colour",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{GreenValue: "switching"}},
			want: "reserved"},
		{name: "a negative batch size is refused",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{BatchSize: -1}},
			want: "negative"},
		{name: "NodePools and relabelled nodes together are refused",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"general"}, Relabel: []string{"general-0"}}}},
			want: "not both"},
		{name: "an unknown jobs policy is refused",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Jobs: "kill"}},
			want: `jobs policy "kill"`},
		{name: "scaling down the NodePool that brings green is refused",
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"general"}}, ScaleDownNodePool: "general"}},
			want: "cannot also be scaled down"},
		{name: "a release green would reuse is refused",
			mutate: func(s *mesh.Snapshot) {
				s.HelmReleases = append(s.HelmReleases, mesh.HelmRelease{Name: "ztunnel-green", Namespace: "ztunnel-green", Chart: "ztunnel", ChartVersion: "1.30.3", Status: "deployed"})
			},
			opts: ztunnel.BlueGreenOptions{Target: v("1.30.3")}, want: "already exists"},
		{name: "an unknown waiver is refused", opts: ztunnel.BlueGreenOptions{Target: v("1.30.3"), Waive: []plan.Code{"NO_SUCH_CODE"}}, want: "unknown finding code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := karpenterMesh()
			if tc.mutate != nil {
				tc.mutate(s)
			}
			p, err := ztunnel.BlueGreenZtunnel(s, tc.opts)
			if !errors.Is(err, plan.ErrInvalidOptions) {
				t.Fatalf("err = %v, want ErrInvalidOptions", err)
			}
			if p != nil {
				t.Errorf("a plan came back with the error: %v", ids(p))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestBlueGreenZtunnelBlocksBeforeAnyChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*mesh.Snapshot)
		target string
		want   plan.Code
	}{
		{name: "a green newer than the control plane it connects to blocks", target: "1.31.0", want: plan.CodeZtunnelAheadOfControlPlane},
		{name: "discoverySelectors no new namespace can satisfy block",
			mutate: func(s *mesh.Snapshot) {
				for i := range s.HelmReleases {
					if s.HelmReleases[i].Chart == "istiod" {
						s.HelmReleases[i].Values["meshConfig"] = map[string]any{"discoverySelectors": []any{
							map[string]any{"matchExpressions": []any{map[string]any{"key": "team", "operator": "Gt", "values": []any{"3"}}}}}}
					}
				}
			}, target: "1.30.3", want: plan.CodeBlueGreenNamespaceNotDiscovered},
		{name: "an ambient node without a ready ztunnel blocks",
			mutate: func(s *mesh.Snapshot) { s.Ztunnels[0].Pods[0].Ready = false }, target: "1.30.3", want: plan.CodeAmbientNodeWithoutReadyZtunnel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := karpenterMesh()
			if tc.mutate != nil {
				tc.mutate(s)
			}
			p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v(tc.target)})
			if !errors.Is(err, plan.ErrBlocked) {
				t.Fatalf("err = %v, want ErrBlocked", err)
			}
			if p == nil || len(p.Steps) != 0 {
				t.Fatalf("a blocked plan must come back with its findings and no steps: %+v", p)
			}
			if !slices.Contains(plan.Codes(plan.Stopping(p.Findings)), tc.want) {
				t.Errorf("stopping codes %v lack %s", plan.Codes(plan.Stopping(p.Findings)), tc.want)
			}
		})
	}
}

func TestCordonAllCordonsEveryBlueNodeBeforeTheFirstDrain(t *testing.T) {
	s := karpenterMesh()
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{
		BatchSize: 2, CordonAll: true, Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}}})
	if err != nil {
		t.Fatal(err)
	}
	base := "ztunnel/bluegreen/"
	cordons, drains := stepsWithPrefix(p, base+"cordon/"), stepsWithPrefix(p, base+"drain/")
	if len(cordons) == 0 || len(drains) == 0 || index(t, p, cordons[len(cordons)-1].ID) > index(t, p, drains[0].ID) {
		t.Fatalf("with CordonAll every blue node is cordoned before the first drain (%d cordons, %d drains)", len(cordons), len(drains))
	}
	for _, c := range cordons {
		if c.Wave != nil {
			t.Errorf("cordon %s is in wave %s; with CordonAll the cordons come before the waves", c.ID, c.Wave.ID)
		}
	}
	if p.Metadata.Options["cordon"] != "all" {
		t.Errorf("options %v do not record cordon=all", p.Metadata.Options)
	}
}

func TestBlueGreenZtunnelFollowsTheRunbook(t *testing.T) {
	s := karpenterMesh()
	s.Nodes[0].Labels["karpenter.sh/nodepool"] = "general" // already so; general-0 runs cart and the waypoint
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{
		BatchSize: 2, Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}}})
	if err != nil {
		t.Fatal(err)
	}
	base := "ztunnel/bluegreen/"
	order := []string{"prechecks", base + "label-blue", base + "pin-blue", base + "trust/istiod-1-30-3", base + "namespace", base + "install-green",
		base + "hold", base + "nodepool/general", base + "green-capacity", base + "green-ready", base + "probe/captured", base + "blue-empty", base + "blue/backup", base + "blue/uninstall",
		base + "trust-green-only/istiod-1-30-3", base + "unlabel-blue", base + "release"}
	last := -1
	for _, id := range order {
		i := index(t, p, id)
		if i <= last {
			t.Errorf("step %s comes before %s", id, p.Steps[last].ID)
		}
		last = i
	}
	// With NodePools the plan used to wait for no green node (Karpenter launches them for the
	// evicted pods), so its green-ready check passed with no green node at all and every blue node
	// was cordoned before any green ztunnel had run (issue 18). Now the probe pod makes Karpenter
	// launch one, and the plan waits for it before the first cordon.
	if st, ok := p.Step(base + "green-capacity"); !ok {
		t.Error("with NodePools the plan must still wait for a ready green node before the first cordon")
	} else if a, err := plan.ArgsOf[plan.NodesReadyArgs](st.WaitFor.Check); err != nil || a.Min < 1 {
		t.Errorf("green-capacity waits for %+v (%v), want at least one green node", a, err)
	}
	if index(t, p, base+"probe/start") > index(t, p, base+"green-capacity") || index(t, p, base+"probe/captured") < index(t, p, base+"green-ready") {
		t.Error("the probe starts before the wait for green nodes (it makes Karpenter launch one) and is captured after green is ready")
	}
	cordons, drains := stepsWithPrefix(p, base+"cordon/"), stepsWithPrefix(p, base+"drain/")
	if len(cordons) != 6 || len(drains) != 6 {
		t.Fatalf("want every blue node cordoned and drained: %d cordons, %d drains", len(cordons), len(drains))
	}
	if index(t, p, base+"probe/captured") > index(t, p, cordons[0].ID) {
		t.Error("no blue node may be cordoned before green is proven")
	}
	for i, d := range drains {
		c, ok := p.Step(base + "cordon/" + d.Drain.Node)
		if !ok || index(t, p, c.ID) > index(t, p, d.ID) || c.Wave == nil || d.Wave == nil || *c.Wave != *d.Wave || d.Wave.Node != d.Drain.Node {
			t.Errorf("drain %d (%s): its node is not cordoned right before it in the same wave unit (cordon %+v)", i, d.ID, c)
		}
	}
	if index(t, p, drains[len(drains)-1].ID) > index(t, p, base+"blue-empty") {
		t.Error("blue must be checked empty after the last drain")
	}
	// Stateless nodes go first; the node with the StatefulSet's local storage after them.
	var drained []string
	for _, d := range drains {
		drained = append(drained, d.Drain.Node)
	}
	if i, j := slices.Index(drained, "general-4"), slices.Index(drained, "general-2"); i > j {
		t.Errorf("drain order %v: stateless general-4 must go before general-2 (StatefulSet db)", drained)
	}
	for _, d := range drains {
		if d.Drain.KeepJobs {
			t.Errorf("%s keeps Jobs, but no Job runs on it", d.ID)
		}
	}
	// Health gates after each batch of two.
	gates := 0
	for _, st := range stepsWithPrefix(p, base+"batch/") {
		if st.HealthGate != nil {
			gates++
		}
	}
	if n := gates; n != 3 {
		t.Errorf("%d batch gates, want 3 for 6 nodes in batches of 2", n)
	}

	pin, _ := p.Step(base + "pin-blue")
	wantAffinity := map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "ambientkit.io/ztunnel", "operator": "NotIn", "values": []any{"green", "switching"}}}}}}}}
	if d := cmp.Diff(wantAffinity, pin.HelmUpgrade.Values["affinity"]); d != "" {
		t.Errorf("blue's pin affinity (-want +got):\n%s", d)
	}
	if us, _ := pin.HelmUpgrade.Values["updateStrategy"].(map[string]any); us["type"] != "OnDelete" {
		t.Errorf("blue's pin must hold its pods with OnDelete: %v", pin.HelmUpgrade.Values["updateStrategy"])
	}
	trust, _ := p.Step(base + "trust/istiod-1-30-3")
	env, _ := trust.HelmUpgrade.Values["env"].(map[string]any)
	if env["CA_TRUSTED_NODE_ACCOUNTS"] != "istio-system/ztunnel,ztunnel-green/ztunnel-green" {
		t.Errorf("trust both = %v", env["CA_TRUSTED_NODE_ACCOUNTS"])
	}
	only, _ := p.Step(base + "trust-green-only/istiod-1-30-3")
	env, _ = only.HelmUpgrade.Values["env"].(map[string]any)
	if env["CA_TRUSTED_NODE_ACCOUNTS"] != "ztunnel-green/ztunnel-green" {
		t.Errorf("trust green only = %v", env["CA_TRUSTED_NODE_ACCOUNTS"])
	}
	green, _ := p.Step(base + "install-green")
	if green.HelmInstall.Namespace != "ztunnel-green" || green.HelmInstall.Values["resourceName"] != "ztunnel-green" || green.HelmInstall.Values["revision"] != "1-30-3" {
		t.Errorf("green install: ns %s values %v", green.HelmInstall.Namespace, green.HelmInstall.Values)
	}
	hold, _ := p.Step(base + "hold")
	if len(hold.Annotate.Objects) != 6 {
		t.Errorf("hold annotates %v; want all six nodes (the green NodePools general and batch launched them)", hold.Annotate.Objects)
	}
	// The batch NodePool is green too; no finding says a NodePool stays uncoloured.
	if slices.Contains(plan.Codes(p.Findings), plan.CodeBlueGreenNodePoolNotGreen) {
		t.Errorf("every NodePool is green, yet: %v", p.Findings)
	}
	var longLived []plan.Finding
	for _, f := range p.Findings {
		if f.Code == plan.CodeBlueGreenLongLivedConnections {
			longLived = append(longLived, f)
		}
	}
	if len(longLived) != 1 {
		t.Fatalf("%d long-lived connection findings, want one for the plan: %v", len(longLived), longLived)
	}
	if f := longLived[0]; f.Object.Kind != "DaemonSet" || len(f.Related) == 0 || f.Details["nodes"] != strconv.Itoa(len(f.Related)) ||
		f.Details["longestGraceSeconds"] == "" || f.Related[0].Kind != "Node" {
		t.Errorf("the long-lived connection finding: %+v", f)
	}
	if !p.Runnable() {
		t.Errorf("plan is not runnable: %v", plan.Stopping(p.Findings))
	}
}

func TestBlueGreenGreenKeepsBluesMeshValues(t *testing.T) {
	s := karpenterMesh()
	for i := range s.HelmReleases {
		if s.HelmReleases[i].Chart == "ztunnel" {
			s.HelmReleases[i].Values = map[string]any{"revision": "1-30-3", "profile": "ambient", "variant": "distroless",
				"global": map[string]any{"network": "net1", "multiCluster": map[string]any{"clusterName": "c1"}},
				"env":    map[string]any{"SKIP_VALIDATE_TRUST_DOMAIN": "true"}, "resourceQuotas": map[string]any{"enabled": true, "pods": 5000},
				"nodeSelector": map[string]any{"kubernetes.io/os": "linux"}, "xdsAddress": "istiod-1-30-3.istio-system.svc:15012",
				"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
					"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "arch", "operator": "In", "values": []any{"arm64"}}}}}}}}}
		}
	}
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Revision: "1-30-3"})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := p.Step("ztunnel/bluegreen/install-green")
	got := st.HelmInstall.Values
	for _, k := range []string{"profile", "variant", "global", "env", "resourceQuotas", "nodeSelector", "xdsAddress"} {
		if got[k] == nil {
			t.Errorf("green lacks blue's %s: %v", k, got)
		}
	}
	wantTerms := []any{map[string]any{"matchExpressions": []any{
		map[string]any{"key": "arch", "operator": "In", "values": []any{"arm64"}},
		map[string]any{"key": "ambientkit.io/ztunnel", "operator": "In", "values": []any{"green"}}}}}
	terms := got["affinity"].(map[string]any)["nodeAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)["nodeSelectorTerms"]
	if d := cmp.Diff(wantTerms, terms); d != "" {
		t.Errorf("green's affinity must be blue's narrowed to green nodes (-want +got):\n%s", d)
	}
	pin, _ := p.Step("ztunnel/bluegreen/pin-blue")
	terms = pin.HelmUpgrade.Values["affinity"].(map[string]any)["nodeAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)["nodeSelectorTerms"]
	if n := len(terms.([]any)[0].(map[string]any)["matchExpressions"].([]any)); n != 2 {
		t.Errorf("blue's pin must keep its own expression and add one: %v", terms)
	}
	// Connecting to another revision, green does not copy blue's explicit XDS address.
	p, err = ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Revision: "1-31-4"})
	if err != nil && !errors.Is(err, plan.ErrBlocked) {
		t.Fatal(err)
	}
	if errors.Is(err, plan.ErrBlocked) {
		return // 1-31-4 is not in the snapshot; the revision check does not apply
	}
	st, _ = p.Step("ztunnel/bluegreen/install-green")
	if _, ok := st.HelmInstall.Values["xdsAddress"]; ok || len(st.Notes) == 0 {
		t.Errorf("green on another revision kept blue's xdsAddress (notes %v)", st.Notes)
	}
}

func TestBlueGreenCapacityModes(t *testing.T) {
	t.Run("nodes the caller adds are waited for before anything moves", func(t *testing.T) {
		p, err := ztunnel.BlueGreenZtunnel(karpenterMesh(), ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{Nodes: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		st, ok := p.Step("ztunnel/bluegreen/green-capacity")
		if !ok {
			t.Fatalf("no green-capacity wait in %v", ids(p))
		}
		args, err := plan.ArgsOf[plan.NodesReadyArgs](st.WaitFor.Check)
		if err != nil || args.Min != 3 || args.Selector != "ambientkit.io/ztunnel=green" {
			t.Errorf("wait = %+v (%v)", args, err)
		}
		if _, ok := p.Step("ztunnel/bluegreen/hold"); ok {
			t.Error("no NodePool is used: nothing to hold")
		}
	})
	t.Run("a relabelled node is drained, emptied of blue, then made green, never running two", func(t *testing.T) {
		p, err := ztunnel.BlueGreenZtunnel(karpenterMesh(), ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{Relabel: []string{"batch-5"}}}})
		if err != nil {
			t.Fatal(err)
		}
		pre := "ztunnel/bluegreen/relabel/batch-5/"
		last := index(t, p, "ztunnel/bluegreen/install-green")
		for _, id := range []string{"cordon", "drain", "switching", "blue-gone", "green", "green-ready", "uncordon"} {
			i := index(t, p, pre+id)
			if i <= last {
				t.Errorf("relabel step %s out of order", id)
			}
			last = i
		}
		if i := index(t, p, "ztunnel/bluegreen/green-capacity"); i < last {
			t.Error("the capacity wait must come after the relabelling")
		}
		for _, d := range stepsWithPrefix(p, "ztunnel/bluegreen/drain/") {
			if d.Drain.Node == "batch-5" {
				t.Error("the relabelled node is green at the end; it must not be drained with the blue ones")
			}
		}
	})
	t.Run("an uncoloured NodePool is named when others bring green", func(t *testing.T) {
		p, err := ztunnel.BlueGreenZtunnel(karpenterMesh(), ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{Capacity: ztunnel.GreenCapacity{NodePools: []string{"general"}}}})
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, f := range p.Findings {
			if f.Code == plan.CodeBlueGreenNodePoolNotGreen && f.Object.Name == "batch" && f.Severity == plan.Waivable {
				found = true
			}
		}
		if !found || p.Runnable() {
			t.Errorf("want a waivable finding on NodePool batch that stops the plan: %v", p.Findings)
		}
	})
	t.Run("scaling the old NodePool down is undone to its own limit", func(t *testing.T) {
		p, err := ztunnel.BlueGreenZtunnel(karpenterMesh(), ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{
			Capacity: ztunnel.GreenCapacity{NodePools: []string{"general"}}, ScaleDownNodePool: "batch"}})
		if err != nil {
			t.Fatal(err)
		}
		st, ok := p.Step("ztunnel/bluegreen/scale-down/batch")
		if !ok {
			t.Fatalf("no scale-down step: %v", ids(p))
		}
		limits := st.Rollback.ApplyObject.Object["spec"].(map[string]any)["limits"].(map[string]any)
		if limits["cpu"] != "64" {
			t.Errorf("undo sets limits %v, want the pool's own cpu 64", limits)
		}
	})
}

func TestBlueGreenTheNextUpgradeAlternatesColours(t *testing.T) {
	// The mesh a first blue-green leaves: one ztunnel, ztunnel-green, on nodes labelled green.
	s := karpenterMesh()
	z := &s.Ztunnels[0]
	z.Namespace, z.Name, z.ServiceAccount, z.HelmRelease = "ztunnel-green", "ztunnel-green", "ztunnel-green", "ztunnel-green"
	z.NodeAffinity = []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: ztunnel.DefaultColourLabel, Operator: "In", Values: []string{"green"}}}}}
	for i := range s.Nodes {
		s.Nodes[i].Labels[ztunnel.DefaultColourLabel] = "green"
	}
	s.Revisions[0].TrustedZtunnelAccounts = []string{"ztunnel-green/ztunnel-green"}
	for i := range s.HelmReleases {
		if s.HelmReleases[i].Chart == "ztunnel" {
			s.HelmReleases[i].Name, s.HelmReleases[i].Namespace = "ztunnel-green", "ztunnel-green"
			s.HelmReleases[i].Values["resourceName"] = "ztunnel-green"
		}
	}
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3")})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := p.Step("ztunnel/bluegreen/install-green")
	if st.HelmInstall.Namespace != "ztunnel-blue" || st.HelmInstall.Values["resourceName"] != "ztunnel-blue" {
		t.Errorf("the next green must be ztunnel-blue: %s %v", st.HelmInstall.Namespace, st.HelmInstall.Values["resourceName"])
	}
	if _, ok := p.Step("ztunnel/bluegreen/label-blue"); ok {
		t.Error("the nodes already carry this blue-green's blue value (green); none needs labelling")
	}
	only, _ := p.Step("ztunnel/bluegreen/trust-green-only/istiod-1-30-3")
	if env := only.HelmUpgrade.Values["env"].(map[string]any); env["CA_TRUSTED_NODE_ACCOUNTS"] != "ztunnel-blue/ztunnel-blue" {
		t.Errorf("trust at the end = %v", env)
	}
}

func TestBlueGreenOldChartsAreNamed(t *testing.T) {
	s := meshtest.Healthy("1.25.2", 4)
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.25.2")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(plan.Codes(plan.Stopping(p.Findings)), plan.CodeBlueGreenPinRestartsBlue) {
		t.Errorf("a 1.25 blue restarts when pinned (no updateStrategy value); the plan must say so and wait for a waiver: %v", plan.Codes(p.Findings))
	}
	pin, _ := p.Step("ztunnel/bluegreen/pin-blue")
	if _, ok := pin.HelmUpgrade.Values["updateStrategy"]; ok {
		t.Error("the 1.25 chart has no updateStrategy value; the pin must not set one")
	}
}

func TestPlacementChecks(t *testing.T) {
	two := func(mutate func(blue, green *mesh.Ztunnel)) *mesh.Snapshot {
		s := karpenterMesh()
		g := s.Ztunnels[0]
		g.Namespace, g.Name, g.ServiceAccount, g.Pods = "ztunnel-green", "ztunnel-green", "ztunnel-green", nil
		s.Ztunnels = append(s.Ztunnels, g)
		mutate(&s.Ztunnels[0], &s.Ztunnels[1])
		s.Normalize()
		return s
	}
	notGreen := []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: "c", Operator: "NotIn", Values: []string{"green"}}}}}
	onGreen := []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: "c", Operator: "In", Values: []string{"green"}}}}}
	for _, tc := range []struct {
		name string
		s    *mesh.Snapshot
		want map[plan.Code]plan.Severity
	}{
		{name: "two ztunnels pinned apart are fine", s: two(func(b, g *mesh.Ztunnel) { b.NodeAffinity, g.NodeAffinity = notGreen, onGreen }), want: map[plan.Code]plan.Severity{}},
		{name: "two unpinned ztunnels meet on every node", s: two(func(b, g *mesh.Ztunnel) {}),
			want: map[plan.Code]plan.Severity{plan.CodeZtunnelPlacementOverlap: plan.Blocking}},
		{name: "a green that could meet blue on a new node is waivable", s: two(func(b, g *mesh.Ztunnel) { g.NodeAffinity = onGreen }),
			want: map[plan.Code]plan.Severity{plan.CodeZtunnelPlacementOverlap: plan.Waivable}},
		{name: "a node running pods of both blocks", s: two(func(b, g *mesh.Ztunnel) {
			b.NodeAffinity, g.NodeAffinity = notGreen, onGreen
			g.Pods = []mesh.NodePod{{Node: "general-0", Pod: "ztunnel-green-x", Version: g.Version, Ready: true}}
		}), want: map[plan.Code]plan.Severity{plan.CodeZtunnelTwoOnOneNode: plan.Blocking}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[plan.Code]plan.Severity{}
			for _, f := range gate(tc.s) {
				if f.Code == plan.CodeZtunnelPlacementOverlap || f.Code == plan.CodeZtunnelTwoOnOneNode {
					got[f.Code] = f.Severity
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("placement findings (-want +got):\n%s", d)
			}
		})
	}
}

func TestBlueGreenTrustGoesWhereTheChartReadsIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string // the path of CA_TRUSTED_NODE_ACCOUNTS in the trust step's values
	}{
		{name: "a release without a trust value gets env", values: map[string]any{"revision": "1-30-3"}, want: []string{"env"}},
		{name: "a release that set it under pilot.env keeps it there, since pilot.* wins",
			values: map[string]any{"revision": "1-30-3", "pilot": map[string]any{"env": map[string]any{"CA_TRUSTED_NODE_ACCOUNTS": "istio-system/ztunnel"}}},
			want:   []string{"pilot", "env"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := karpenterMesh()
			for i := range s.HelmReleases {
				if s.HelmReleases[i].Chart == "istiod" {
					s.HelmReleases[i].Values = tc.values
				}
			}
			p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3")})
			if err != nil {
				t.Fatal(err)
			}
			st, ok := p.Step("ztunnel/bluegreen/trust/istiod-1-30-3")
			if !ok {
				t.Fatalf("no trust step: %v", ids(p))
			}
			m := st.HelmUpgrade.Values
			for _, k := range tc.want {
				m, _ = m[k].(map[string]any)
			}
			if m["CA_TRUSTED_NODE_ACCOUNTS"] != "istio-system/ztunnel,ztunnel-green/ztunnel-green" {
				t.Errorf("values %v: no trust list under %v", st.HelmUpgrade.Values, tc.want)
			}
		})
	}
}
