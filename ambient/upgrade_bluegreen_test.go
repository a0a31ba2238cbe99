package ambient_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

// demoBlueGreen moves the demo mesh's ztunnel onto nodes its two Karpenter NodePools launch green.
var demoBlueGreen = ambient.ZtunnelBlueGreen{BatchSize: 3, Capacity: ambient.ZtunnelGreenCapacity{NodePools: []string{"general", "batch"}}}

func TestBlueGreenZtunnelOfTheDemoMesh(t *testing.T) {
	snap, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ztunnel.BlueGreenZtunnel(snap, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: demoBlueGreen})
	if err != nil {
		t.Fatal(err)
	}
	y, err := plan.EncodeYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "bluegreen/demo-ztunnel-1.30.plan.yaml", y)
	var md strings.Builder
	if err := runbook.Render(&md, p); err != nil {
		t.Fatal(err)
	}
	golden(t, "bluegreen/demo-ztunnel-1.30.plan.md", []byte(md.String()))
	back, err := plan.Decode(y)
	if err != nil {
		t.Fatalf("the plan does not read back: %v", err)
	}
	if len(back.Steps) != len(p.Steps) {
		t.Errorf("read back %d steps of %d", len(back.Steps), len(p.Steps))
	}
}

func TestPlanUpgradeWithBlueGreenZtunnel(t *testing.T) {
	snap, err := demo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: demoBlueGreen, Today: today})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := runbook.Render(&md, p); err != nil {
		t.Fatal(err)
	}
	golden(t, "upgrade/demo-revision-bluegreen-1.30-to-1.31.plan.md", []byte(md.String()))
	assertHopsComplete(t, p)
	install, ok := p.Step("ztunnel/bluegreen/install-green")
	if !ok {
		t.Fatal("no green install")
	}
	if install.HelmInstall.Values["revision"] != "1-31-4" || install.HelmInstall.Chart.Version != "1.31.4" {
		t.Errorf("green must run 1.31.4 against the new revision: %v %v", install.HelmInstall.Chart.Version, install.HelmInstall.Values["revision"])
	}
	// Both revisions trust both ztunnels while blue runs; the old revision is still removed at the
	// end, since green connects to the new one.
	for _, id := range []string{"ztunnel/bluegreen/trust/istiod-1-31-4", "ztunnel/bluegreen/trust/istiod-1-30-3", "istiod/1-30-3/remove"} {
		if st, ok := p.Step(id); !ok || st.Blocked != "" {
			t.Errorf("step %s missing or blocked", id)
		}
	}
	if slices.ContainsFunc(p.Steps, func(st plan.Step) bool {
		return strings.HasPrefix(st.ID, "ztunnel/upgrade") || strings.HasPrefix(st.ID, "ztunnel/nodes")
	}) {
		t.Error("blue-green replaces the in-place or node-by-node ztunnel steps")
	}
	if p.Metadata.Options["ztunnel"] != ztunnel.NameBlueGreen {
		t.Errorf("metadata options %v", p.Metadata.Options)
	}
}

func TestPlanUpgradeRefusesAChainedBlueGreen(t *testing.T) {
	s := meshtest.Healthy("1.29.2", 4)
	_, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: ambient.ZtunnelBlueGreen{}, Today: today})
	if !errors.Is(err, ambient.ErrInvalidOptions) || !strings.Contains(err.Error(), "blue-green replaces ztunnel once") {
		t.Fatalf("err = %v", err)
	}
}

func TestTheUpgradeAfterABlueGreenMovesGreenNodeByNode(t *testing.T) {
	// The mesh a blue-green leaves: one ztunnel, ztunnel-green in its own namespace, pinned to the
	// green nodes, trusted alone.
	s := meshtest.Healthy("1.30.3", 4)
	z := &s.Ztunnels[0]
	z.Namespace, z.Name, z.ServiceAccount, z.HelmRelease = "ztunnel-green", "ztunnel-green", "ztunnel-green", "ztunnel-green"
	z.NodeAffinity = []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: ztunnel.DefaultColourLabel, Operator: "In", Values: []string{"green"}}}}}
	for i := range s.Nodes {
		s.Nodes[i].Labels[ztunnel.DefaultColourLabel] = "green"
	}
	s.Revisions[0].TrustedZtunnelAccounts = []string{"ztunnel-green/ztunnel-green"}
	for i := range s.HelmReleases {
		switch s.HelmReleases[i].Chart {
		case "ztunnel":
			s.HelmReleases[i].Name, s.HelmReleases[i].Namespace = "ztunnel-green", "ztunnel-green"
			s.HelmReleases[i].Values["resourceName"] = "ztunnel-green"
		case "istiod":
			s.HelmReleases[i].Values["env"] = map[string]any{"CA_TRUSTED_NODE_ACCOUNTS": "ztunnel-green/ztunnel-green"}
		}
	}
	s.Normalize()
	p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: v("1.31.4"), Today: today})
	if err != nil {
		t.Fatal(err)
	}
	var zt []plan.Step
	for _, st := range p.Steps {
		if h := st.HelmUpgrade; h != nil && h.Release == "ztunnel-green" {
			zt = append(zt, st)
		}
	}
	if len(zt) == 0 {
		t.Fatalf("no step upgrades ztunnel-green: %v", p.Steps)
	}
	for _, st := range zt {
		if st.HelmUpgrade.Namespace != "ztunnel-green" || st.HelmUpgrade.Values["resourceName"] != "ztunnel-green" {
			t.Errorf("%s: upgrades %s/%s with resourceName %v, want ztunnel-green kept", st.ID, st.HelmUpgrade.Namespace, st.HelmUpgrade.Release, st.HelmUpgrade.Values["resourceName"])
		}
	}
	if _, ok := p.Step("ztunnel/node/" + s.Nodes[0].Name + "/drain"); !ok {
		t.Errorf("want the node-by-node drain of %s; steps: %d", s.Nodes[0].Name, len(p.Steps))
	}
	install, _ := p.Step("istiod/1-31-4/install")
	if env, _ := install.HelmInstall.Values["env"].(map[string]any); env["CA_TRUSTED_NODE_ACCOUNTS"] != "ztunnel-green/ztunnel-green" {
		t.Errorf("the new revision must trust green as the old one does: %v", install.HelmInstall.Values["env"])
	}
}
