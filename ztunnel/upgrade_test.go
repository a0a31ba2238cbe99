package ztunnel_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// renameZtunnel gives the ztunnel DaemonSet, its account and its Helm release other names, and has
// istiod trust the account.
func renameZtunnel(s *mesh.Snapshot, name, account, release string) {
	z := &s.Ztunnels[0]
	old := z.HelmRelease
	z.Name, z.ServiceAccount, z.HelmRelease = name, account, release
	for i := range s.HelmReleases {
		if s.HelmReleases[i].Name == old {
			s.HelmReleases[i].Name = release
		}
	}
	s.Revisions[0].TrustedZtunnelAccounts = []string{"istio-system/" + account}
}

func planZtunnel(t *testing.T, s *mesh.Snapshot, opts ztunnel.UpgradeOptions, values map[string]map[string]any) *plan.Plan {
	t.Helper()
	p := plan.New(plan.Metadata{Name: "t", Operation: "upgrade", Fingerprint: s.Fingerprint()})
	b := steps.New(p, steps.Options{Values: values})
	if err := ztunnel.AddUpgrade(b, s, opts); err != nil {
		t.Fatalf("AddUpgrade: %v", err)
	}
	if err := b.Err(); err != nil {
		t.Fatalf("builder: %v", err)
	}
	return p
}

func TestEveryZtunnelUpgradePinsTheRunningName(t *testing.T) {
	tests := []struct {
		name     string
		version  string
		rename   func(*mesh.Snapshot)
		target   string
		strategy ztunnel.Strategy
		want     map[string]any // resourceName of each HelmUpgrade step, by step ID
	}{
		{name: "a 1.25 release named istio-ztunnel keeps its name across the hop to 1.26", version: "1.25.3",
			rename: func(s *mesh.Snapshot) { renameZtunnel(s, "istio-ztunnel", "istio-ztunnel", "istio-ztunnel") },
			target: "1.26.8", strategy: ztunnel.NodeByNode{},
			want: map[string]any{"ztunnel/istio-ztunnel/on-delete": "istio-ztunnel", "ztunnel/istio-ztunnel/rolling-update": "istio-ztunnel"}},
		{name: "a ztunnel named ztunnel is pinned to ztunnel in place", version: "1.30.3", target: "1.31.4", strategy: ztunnel.InPlace{},
			want: map[string]any{"ztunnel/ztunnel/upgrade": "ztunnel"}},
		{name: "a hop to 1.25.0 of a ztunnel named ztunnel pins the name over the release name", version: "1.24.6",
			rename: func(s *mesh.Snapshot) { renameZtunnel(s, "ztunnel", "ztunnel", "istio-ztunnel") },
			target: "1.25.0", strategy: ztunnel.InPlace{},
			want: map[string]any{"ztunnel/ztunnel/upgrade": "ztunnel"}},
		{name: "a hop to a chart without the value sets none", version: "1.24.5", target: "1.24.6", strategy: ztunnel.InPlace{},
			want: map[string]any{"ztunnel/ztunnel/upgrade": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy(tc.version, 2)
			if tc.rename != nil {
				tc.rename(s)
			}
			p := planZtunnel(t, s, ztunnel.UpgradeOptions{Target: mesh.MustParseVersion(tc.target), Strategy: tc.strategy}, nil)
			got := map[string]any{}
			for _, st := range p.Steps {
				if st.HelmUpgrade != nil {
					got[st.ID] = st.HelmUpgrade.Values["resourceName"]
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("resourceName per upgrade step (-want +got):\n%s", d)
			}
			for _, f := range p.Findings {
				if f.Code == plan.CodeZtunnelUpgradeRenamesDaemonSet {
					t.Errorf("no rename expected, got %s", f)
				}
			}
		})
	}
}

func TestAZtunnelUpgradeThatWouldRenameItIsBlocking(t *testing.T) {
	tests := []struct {
		name    string
		version string
		rename  func(*mesh.Snapshot)
		target  string
		values  map[string]map[string]any
		want    map[string]string // the finding's details; nil means no finding
	}{
		{name: "a caller's resourceName that differs from the running name is blocking", version: "1.30.3", target: "1.31.4",
			values: map[string]map[string]any{"ztunnel": {"resourceName": "ztunnel-v2"}},
			want: map[string]string{"daemonSet": "ztunnel", "newDaemonSet": "ztunnel-v2", "serviceAccount": "ztunnel", "newServiceAccount": "ztunnel-v2",
				"chartVersion": "1.31.4", "resourceName": "ztunnel-v2"}},
		{name: "a hop to a chart without resourceName renames a ztunnel not named ztunnel", version: "1.24.5", target: "1.24.6",
			rename: func(s *mesh.Snapshot) { renameZtunnel(s, "zt-custom", "zt-custom", "zt-custom") },
			want: map[string]string{"daemonSet": "zt-custom", "newDaemonSet": "ztunnel", "serviceAccount": "zt-custom", "newServiceAccount": "ztunnel",
				"chartVersion": "1.24.6", "resourceName": ""}},
		{name: "a hop to 1.25.0 keeps the DaemonSet's name but runs it as service account ztunnel", version: "1.24.5", target: "1.25.0",
			rename: func(s *mesh.Snapshot) { renameZtunnel(s, "zt-custom", "zt-custom", "zt-custom") },
			want: map[string]string{"daemonSet": "zt-custom", "newDaemonSet": "zt-custom", "serviceAccount": "zt-custom", "newServiceAccount": "ztunnel",
				"chartVersion": "1.25.0", "resourceName": "zt-custom"}},
		{name: "leaving 1.25.0's fixed service account for one istiod does not trust is blocking", version: "1.25.0", target: "1.25.5",
			rename: func(s *mesh.Snapshot) { renameZtunnel(s, "istio-ztunnel", "ztunnel", "istio-ztunnel") },
			want: map[string]string{"daemonSet": "istio-ztunnel", "newDaemonSet": "istio-ztunnel", "serviceAccount": "ztunnel", "newServiceAccount": "istio-ztunnel",
				"chartVersion": "1.25.5", "resourceName": "istio-ztunnel"}},
		{name: "leaving 1.25.0's fixed service account for one istiod already trusts is fine", version: "1.25.0", target: "1.25.5",
			rename: func(s *mesh.Snapshot) {
				renameZtunnel(s, "istio-ztunnel", "ztunnel", "istio-ztunnel")
				s.Revisions[0].TrustedZtunnelAccounts = []string{"istio-system/ztunnel", "istio-system/istio-ztunnel"}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy(tc.version, 2)
			if tc.rename != nil {
				tc.rename(s)
			}
			p := planZtunnel(t, s, ztunnel.UpgradeOptions{Target: mesh.MustParseVersion(tc.target), Strategy: ztunnel.InPlace{}}, tc.values)
			var got []plan.Finding
			for _, f := range p.Findings {
				if f.Code == plan.CodeZtunnelUpgradeRenamesDaemonSet {
					got = append(got, f)
				}
			}
			if tc.want == nil {
				if len(got) > 0 {
					t.Fatalf("want no rename finding, got %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one %s finding, got %v", plan.CodeZtunnelUpgradeRenamesDaemonSet, got)
			}
			f := got[0]
			if f.Severity != plan.Blocking || f.Object != s.Ztunnels[0].Ref() || f.Remedy == "" {
				t.Errorf("finding %s: want blocking on %s with a remedy", f, s.Ztunnels[0].Ref())
			}
			if d := cmp.Diff(tc.want, f.Details); d != "" {
				t.Errorf("details (-want +got):\n%s", d)
			}
		})
	}
}

func TestChartNamesFollowTheChartOfEachVersion(t *testing.T) {
	tests := []struct {
		name, version, release, resourceName string
		daemonSet, serviceAccount            string
	}{
		{"1.24 names everything ztunnel", "1.24.6", "istio-ztunnel", "ignored", "ztunnel", "ztunnel"},
		{"1.25.0 defaults to the release name but runs as ztunnel", "1.25.0", "istio-ztunnel", "", "istio-ztunnel", "ztunnel"},
		{"1.25.1 defaults to the release name for both", "1.25.1", "istio-ztunnel", "", "istio-ztunnel", "istio-ztunnel"},
		{"1.26 defaults to ztunnel again", "1.26.0", "istio-ztunnel", "", "ztunnel", "ztunnel"},
		{"resourceName wins from 1.25.1", "1.31.4", "istio-ztunnel", "zt", "zt", "zt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, sa := ztunnel.ChartNames(mesh.MustParseVersion(tc.version), tc.release, tc.resourceName)
			if ds != tc.daemonSet || sa != tc.serviceAccount {
				t.Errorf("ChartNames = (%s, %s), want (%s, %s)", ds, sa, tc.daemonSet, tc.serviceAccount)
			}
		})
	}
}

func TestNodeByNodeRestoresTheWholeUpdateStrategyTheDaemonSetRanWith(t *testing.T) {
	tests := []struct {
		name     string
		strategy mesh.UpdateStrategy
		want     map[string]any
	}{
		{name: "the chart's surge strategy comes back whole, not as null",
			strategy: mesh.UpdateStrategy{Type: "RollingUpdate", MaxSurge: "1", MaxUnavailable: "0"},
			want:     map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": float64(1), "maxUnavailable": float64(0)}}},
		{name: "a percentage the user set comes back as the percentage",
			strategy: mesh.UpdateStrategy{Type: "RollingUpdate", MaxSurge: "0", MaxUnavailable: "25%"},
			want:     map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": float64(0), "maxUnavailable": "25%"}}},
		{name: "fields the observation left empty are the API server's defaults the DaemonSet had",
			strategy: mesh.UpdateStrategy{Type: "RollingUpdate"},
			want:     map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": float64(0), "maxUnavailable": float64(1)}}},
		{name: "a strategy that was not observed is the chart's",
			want: map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": float64(1), "maxUnavailable": float64(0)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 2)
			s.Ztunnels[0].UpdateStrategy = tc.strategy
			p := planZtunnel(t, s, ztunnel.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Strategy: ztunnel.NodeByNode{}}, nil)
			st, ok := p.Step("ztunnel/ztunnel/rolling-update")
			if !ok || st.HelmUpgrade == nil {
				t.Fatal("no rolling-update step")
			}
			if d := cmp.Diff(tc.want, st.HelmUpgrade.Values["updateStrategy"]); d != "" {
				t.Errorf("restored updateStrategy (-want +got):\n%s", d)
			}
			if on, _ := p.Step("ztunnel/ztunnel/on-delete"); on.HelmUpgrade.Values["updateStrategy"].(map[string]any)["type"] != "OnDelete" {
				t.Errorf("the on-delete step sets %v", on.HelmUpgrade.Values["updateStrategy"])
			}
		})
	}
}

// TestNodeByNodeWavesLeaveEveryEvictedWorkloadANodeOfItsPool plans node by node in batches of 3 on
// the cluster of the e2e runbook suite: 3 general and 3 batch nodes, an ambient Deployment on every
// general node only, under a budget. A wave of the 3 general nodes cordons every node its evicted
// pods can run on; with two budgets they can hold each other's drains for good.
func TestNodeByNodeWavesLeaveEveryEvictedWorkloadANodeOfItsPool(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 6) // general-0, batch-1, general-2, batch-3, general-4, batch-5
	general := []string{"general-0", "general-2", "general-4"}
	s.Workloads = []mesh.Workload{
		{Namespace: "shop", Kind: "Deployment", Name: "orders", Labels: map[string]string{"app": "orders"}, Pods: 3, Ready: 3,
			Mode: mesh.ModeAmbient, Nodes: general},
		{Namespace: "shop", Kind: "Deployment", Name: "web", Labels: map[string]string{"app": "web"}, Pods: 2, Ready: 2,
			Mode: mesh.ModeAmbient, Nodes: general[:2]},
	}
	s.PodDisruptionBudgets = []mesh.PodDisruptionBudget{
		{Namespace: "shop", Name: "orders", Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "orders"}},
			MinAvailable: "2", DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3},
		{Namespace: "shop", Name: "web", Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: "1", DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2},
	}
	s.Normalize()
	p := planZtunnel(t, s, ztunnel.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Strategy: ztunnel.NodeByNode{BatchSize: 3}}, nil)
	waves := map[string][]string{}
	var ids []string
	for _, st := range p.Steps {
		if st.Wave != nil && st.Cordon != nil {
			if waves[st.Wave.ID] == nil {
				ids = append(ids, st.Wave.ID)
			}
			waves[st.Wave.ID] = append(waves[st.Wave.ID], st.Wave.Node)
		}
	}
	var got [][]string
	for _, id := range ids {
		got = append(got, waves[id])
	}
	want := [][]string{{"batch-1", "batch-3", "batch-5"}, {"general-0", "general-2"}, {"general-4"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("waves by cordon (-want +got):\n%s", d)
	}
	var gates []string
	for _, st := range p.Steps {
		if st.HealthGate != nil && st.HealthGate.Scope == "ztunnel batch" {
			gates = append(gates, st.Description)
		}
	}
	if n := len(gates); n != 3 || gates[n-1] != "health gate after ztunnel batch 3 of 3" {
		t.Errorf("ztunnel batch gates: %q, want 3, the last of batch 3 of 3", gates)
	}
	var room []plan.Finding
	for _, f := range p.Findings {
		if f.Code == plan.CodeWaveKeepsRoomForEvictedPods {
			room = append(room, f)
		}
	}
	if len(room) != 1 {
		t.Fatalf("%d %s findings, want 1: %+v", len(room), plan.CodeWaveKeepsRoomForEvictedPods, room)
	}
	wantDetails := map[string]string{"pools": "general", "schedulable": "3", "workloads": "1", "waves": "3", "batch": "3"}
	if d := cmp.Diff(wantDetails, room[0].Details); d != "" {
		t.Errorf("details (-want +got):\n%s", d)
	}
	if room[0].Severity != plan.Info || len(room[0].Related) != 1 || room[0].Related[0].Name != "orders" {
		t.Errorf("finding: %+v", room[0])
	}
}
