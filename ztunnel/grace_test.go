package ztunnel_test

import (
	"strings"
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
		preStop int64 // -1: no hook; 0: a hook whose time cannot be read; else its sleep
		timeout time.Duration
		want    string // the remedy option's text; "" for no finding
	}{
		{"a 30-minute grace period against the default timeout", 1800, -1, 0, "NodeByNode.DrainTimeout: 31m0s"},
		{"a 30-minute grace period against a 40-minute timeout", 1800, -1, 40 * time.Minute, ""},
		{"the default grace period against a 10-second timeout", 0, -1, 10 * time.Second, "NodeByNode.DrainTimeout: 1m30s"},
		{"the default grace period against the default timeout", 0, -1, 0, ""},
		{"the default grace period against a 30-second timeout", 0, -1, 30 * time.Second, ""},
		{"a preStop sleep into the grace period's last 2 seconds passes a 30-second timeout", 0, 29, 30 * time.Second, "NodeByNode.DrainTimeout: 1m32s"},
		{"a preStop hook whose time cannot be read may too", 0, 0, 30 * time.Second, "NodeByNode.DrainTimeout: 1m32s"},
		{"a preStop sleep well inside the grace period adds nothing", 0, 20, 30 * time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 4)
			s.Workloads = []mesh.Workload{{Namespace: "data", Kind: "StatefulSet", Name: "kafka", Labels: map[string]string{"app": "kafka"}, Pods: 2, Ready: 2,
				Mode: mesh.ModeAmbient, Nodes: []string{"general-0", "general-2"}, TerminationGracePeriodSeconds: tc.grace,
				PreStopHook: tc.preStop >= 0, PreStopSleepSeconds: max(0, tc.preStop)}}
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
				if tc.preStop == 29 && !strings.Contains(f.Message, "preStop hook, which sleeps 29s of it") {
					t.Errorf("the message does not say the preStop hook adds the time: %s", f.Message)
				}
			}
		})
	}
}

// TestABudgetThatCanNeverAllowAnEvictionSaysSoAndThatScalingUpDoesNotHelp: maxUnavailable 0 and
// minAvailable equal to the pods are marked never; a budget at 0 only for now (one pod down) is not.
// A budget short of healthy pods also refuses its unready pods unless its
// unhealthyPodEvictionPolicy is AlwaysAllow, and says so with that remedy.
func TestABudgetThatCanNeverAllowAnEvictionSaysSoAndThatScalingUpDoesNotHelp(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		minAvailable, maxUnav  string
		healthy, desired, pods int32
		policy                 string
		never                  bool
		short                  string // Details["short"]: how many healthy pods short, when unready pods are refused too
	}{
		{"maxUnavailable 0", "", "0", 3, 3, 3, "", true, ""},
		{"minAvailable equal to the pods", "3", "", 3, 3, 3, "", true, ""},
		{"minAvailable 2 of 3 with one pod down", "2", "", 2, 2, 3, "", false, ""},
		{"a budget short of healthy pods refuses its unready pods under the default policy", "3", "", 1, 3, 4, "", false, "2"},
		{"a budget short of healthy pods refuses its unready pods under IfHealthyBudget", "3", "", 1, 3, 4, "IfHealthyBudget", false, "2"},
		{"a budget short of healthy pods evicts its unready pods under AlwaysAllow", "3", "", 1, 3, 4, "AlwaysAllow", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 4)
			s.Workloads = []mesh.Workload{{Namespace: "shop", Kind: "Deployment", Name: "api", Labels: map[string]string{"app": "api"}, Pods: 3, Ready: int(tc.healthy),
				Mode: mesh.ModeAmbient, Nodes: []string{"general-0", "general-2"}}}
			s.PodDisruptionBudgets = []mesh.PodDisruptionBudget{{Namespace: "shop", Name: "api", Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
				MinAvailable: tc.minAvailable, MaxUnavailable: tc.maxUnav, CurrentHealthy: tc.healthy, DesiredHealthy: tc.desired, ExpectedPods: tc.pods,
				UnhealthyPodEvictionPolicy: tc.policy}}
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
			if got := f.Details["short"]; got != tc.short {
				t.Errorf("short = %q, want %q: %s / %s", got, tc.short, f.Message, f.Remedy)
			}
			if tc.short != "" && !strings.Contains(f.Remedy, "unhealthyPodEvictionPolicy: AlwaysAllow") {
				t.Errorf("the remedy does not name the policy that lets unready pods go: %s", f.Remedy)
			}
		})
	}
}

// TestAJobThatMayOutliveTheDrainsThatWaitForItIsNamed: a blue-green whose drains wait for Jobs
// names the demo's Job batch/reindex-catalog when its activeDeadlineSeconds is longer than the
// drain timeout (waivable, with the timeout that would do and the evicting policy as remedies), as
// info when nothing bounds it, and not at all when its deadline fits or when the drains evict Jobs.
func TestAJobThatMayOutliveTheDrainsThatWaitForItIsNamed(t *testing.T) {
	pools := ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}
	for _, tc := range []struct {
		name     string
		deadline int64
		jobs     ztunnel.JobPolicy
		timeout  time.Duration
		want     plan.Severity // "" for no finding
		options  []string
	}{
		{"an hour's deadline against the default 10-minute timeout", 3600, "", 0, plan.Waivable,
			[]string{"BlueGreen.DrainTimeout: 1h1m30s", "BlueGreen.Jobs: evict"}},
		{"a 5-minute deadline against the default timeout", 300, "", 0, "", nil},
		{"a deadline that fits the timeout only without the pods' termination", 590, "", 0, plan.Waivable,
			[]string{"BlueGreen.DrainTimeout: 11m20s", "BlueGreen.Jobs: evict"}},
		{"an hour's deadline against a 2-hour timeout", 3600, ztunnel.JobsWait, 2 * time.Hour, "", nil},
		{"no deadline", 0, "", 0, plan.Info, []string{"BlueGreen.Jobs: evict"}},
		{"an hour's deadline when the drains evict Jobs", 3600, ztunnel.JobsEvict, 0, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := demoSnapshot(t)
			found := false
			for i := range s.Workloads {
				if w := &s.Workloads[i]; w.Kind == "Job" && w.Name == "reindex-catalog" {
					w.ActiveDeadlineSeconds, found = tc.deadline, true
				}
			}
			if !found {
				t.Fatal("the demo has no Job batch/reindex-catalog")
			}
			p := blueGreen(t, s, ztunnel.BlueGreen{BatchSize: 4, Jobs: tc.jobs, DrainTimeout: tc.timeout, Capacity: pools})
			var got *plan.Finding
			for _, f := range findings(p, plan.CodeJobMayOutliveDrainTimeout) {
				if f.Object.Name == "reindex-catalog" {
					got = &f
				}
			}
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("unexpected finding: %+v", *got)
			case tc.want == "":
				return
			case got == nil:
				t.Fatalf("no %s finding on Job batch/reindex-catalog", plan.CodeJobMayOutliveDrainTimeout)
			}
			var opts []string
			for _, o := range got.RemedyOptions {
				opts = append(opts, o.Text())
			}
			if got.Severity != tc.want || strings.Join(opts, " | ") != strings.Join(tc.options, " | ") {
				t.Errorf("severity %s, remedy options %q; want %s, %q (%s)", got.Severity, opts, tc.want, tc.options, got.Message)
			}
		})
	}
}
