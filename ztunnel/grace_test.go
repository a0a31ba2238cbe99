package ztunnel_test

import (
	"testing"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// TestADrainTimeoutShorterThanAGracePeriodIsNamedWithTheTimeoutThePlanWouldNeed: a workload whose
// pods may take 30 minutes to terminate is named against a 10-minute drain timeout, with the
// timeout that would do (grace and a minute) as the remedy's option value; a timeout that long, or
// the default grace period, raises nothing.
func TestADrainTimeoutShorterThanAGracePeriodIsNamedWithTheTimeoutThePlanWouldNeed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grace   int64
		timeout time.Duration
		want    string // the remedy option's text; "" for no finding
	}{
		{"a 30-minute grace period against the default timeout", 1800, 0, "NodeByNode.DrainTimeout: 31m0s"},
		{"a 30-minute grace period against a 40-minute timeout", 1800, 40 * time.Minute, ""},
		{"the default grace period against a 10-second timeout", 0, 10 * time.Second, "NodeByNode.DrainTimeout: 1m30s"},
		{"the default grace period against the default timeout", 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 4)
			s.Workloads = []mesh.Workload{{Namespace: "data", Kind: "StatefulSet", Name: "kafka", Labels: map[string]string{"app": "kafka"}, Pods: 2, Ready: 2,
				Mode: mesh.ModeAmbient, Nodes: []string{"general-0", "general-2"}, TerminationGracePeriodSeconds: tc.grace}}
			s.Normalize()
			p := planZtunnel(t, s, ztunnel.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Strategy: ztunnel.NodeByNode{DrainTimeout: tc.timeout}}, nil)
			var got []plan.Finding
			for _, f := range p.Findings {
				if f.Code == plan.CodeDrainTimeoutBelowGracePeriod {
					got = append(got, f)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("unexpected finding: %+v", got)
			case tc.want != "" && len(got) != 1:
				t.Fatalf("%d findings, want one on StatefulSet data/kafka", len(got))
			case tc.want != "":
				f := got[0]
				if f.Object.Name != "kafka" || f.Details["nodes"] != "2" || len(f.RemedyOptions) != 1 || f.RemedyOptions[0].Text() != tc.want {
					t.Errorf("finding %+v, want it on kafka, 2 drains, remedy option %q", f, tc.want)
				}
			}
		})
	}
}

// TestABudgetThatCanNeverAllowAnEvictionSaysSoAndThatScalingUpDoesNotHelp: maxUnavailable 0 and
// minAvailable equal to the pods are marked never; a budget at 0 only for now (one pod down) is not.
func TestABudgetThatCanNeverAllowAnEvictionSaysSoAndThatScalingUpDoesNotHelp(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		minAvailable, maxUnav  string
		healthy, desired, pods int32
		never                  bool
	}{
		{"maxUnavailable 0", "", "0", 3, 3, 3, true},
		{"minAvailable equal to the pods", "3", "", 3, 3, 3, true},
		{"minAvailable 2 of 3 with one pod down", "2", "", 2, 2, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 4)
			s.Workloads = []mesh.Workload{{Namespace: "shop", Kind: "Deployment", Name: "api", Labels: map[string]string{"app": "api"}, Pods: 3, Ready: int(tc.healthy),
				Mode: mesh.ModeAmbient, Nodes: []string{"general-0", "general-2"}}}
			s.PodDisruptionBudgets = []mesh.PodDisruptionBudget{{Namespace: "shop", Name: "api", Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
				MinAvailable: tc.minAvailable, MaxUnavailable: tc.maxUnav, CurrentHealthy: tc.healthy, DesiredHealthy: tc.desired, ExpectedPods: tc.pods}}
			s.Normalize()
			p := planZtunnel(t, s, ztunnel.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Strategy: ztunnel.NodeByNode{}}, nil)
			var f *plan.Finding
			for i := range p.Findings {
				if p.Findings[i].Code == plan.CodePDBBlocksDrain {
					f = &p.Findings[i]
				}
			}
			if f == nil {
				t.Fatal("no PDB_BLOCKS_DRAIN")
			}
			if got := f.Details["never"] == "true"; got != tc.never {
				t.Errorf("never = %v, want %v: %s / %s", got, tc.never, f.Message, f.Remedy)
			}
		})
	}
}
