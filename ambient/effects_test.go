package ambient_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// meshFacts are what the planner's simulation of a hop says of the mesh it leaves (simulate.go):
// the revisions with their versions and trusted ztunnel accounts, the tags and the default
// revision, the node agents' versions, the gateways' revisions and versions, and the revisions
// whose sidecars workloads run (their proxies' versions: proxiesNeverNewer). Observed counts and readiness are left out: the simulation does not model them.
func meshFacts(s *mesh.Snapshot) map[string]string {
	out := map[string]string{"default revision": s.DefaultRevision}
	for _, r := range s.Revisions {
		acc := slices.Clone(r.TrustedZtunnelAccounts)
		sort.Strings(acc)
		out["revision "+r.Name] = fmt.Sprintf("%s ambient=%t trusts %v", r.Version, r.Ambient, acc)
	}
	for _, t := range s.Tags {
		out["tag "+t.Name] = t.Revision
	}
	if s.CNI != nil {
		out["istio-cni"] = s.CNI.Version.String()
	}
	for _, z := range s.Ztunnels {
		out["ztunnel "+z.Namespace+"/"+z.Name] = z.Version.String() + " as " + z.ServiceAccount
	}
	for _, g := range s.Gateways {
		out["gateway "+g.Namespace+"/"+g.Name] = fmt.Sprintf("label %q revision %q versions %v", g.RevisionLabel, g.Revision, g.Versions)
	}
	for _, w := range s.Workloads {
		if len(w.SidecarRevisions) == 0 {
			continue
		}
		var revs []string
		for r := range w.SidecarRevisions {
			revs = append(revs, r)
		}
		sort.Strings(revs)
		out["sidecars of "+w.Namespace+"/"+w.Kind+"/"+w.Name] = strings.Join(revs, ",")
	}
	return out
}

// proxiesNeverNewer reports the workloads whose sidecars the simulation says run a newer proxy
// than some pod of the cluster does. The simulation keeps sidecar pods a drain replaces at their old
// proxy (the upgraded istiod injects the new one into their replacements, on whichever nodes the
// drains reach): that only overstates how far behind they are, which the next hop's precheck reads
// from the live cluster; a simulation newer than the cluster would hide a skew.
func proxiesNeverNewer(sim, got *mesh.Snapshot) []string {
	oldest := map[string]mesh.Version{}
	for _, w := range got.Workloads {
		for i, v := range w.ProxyVersions {
			k := w.Namespace + "/" + w.Kind + "/" + w.Name
			if i == 0 || v.Less(oldest[k]) {
				oldest[k] = v
			}
		}
	}
	var bad []string
	for _, w := range sim.Workloads {
		k := w.Namespace + "/" + w.Kind + "/" + w.Name
		o, ok := oldest[k]
		if !ok {
			continue
		}
		for _, v := range w.ProxyVersions {
			if o.Less(v) {
				bad = append(bad, fmt.Sprintf("%s: simulated %s, a pod of the cluster runs %s", k, v, o))
			}
		}
	}
	return bad
}

// TestTheSimulatedMeshAfterAnUpgradeIsTheOneTheFakeClusterEndsIn holds the planner's model of
// what an upgrade's steps do (simulate.go, which later hops and the removal of old revisions are
// planned on) to the fake cluster's (executetest: the charts' effects, injection, the controllers):
// the demo mesh's upgrade is planned with the simulation returned, run to its end on a fake cluster
// holding the demo's objects, and the cluster observed; both must say the same of the mesh.
func TestTheSimulatedMeshAfterAnUpgradeIsTheOneTheFakeClusterEndsIn(t *testing.T) {
	for _, strategy := range []ambient.Strategy{ambient.StrategyRevision, ambient.StrategyInPlace} {
		t.Run(string(strategy), func(t *testing.T) {
			ctx := context.Background()
			objs, err := demo.Objects()
			if err != nil {
				t.Fatal(err)
			}
			w := executetest.NewWorld(t, objs...)
			if err := w.PrepareDemo(ctx); err != nil { // the postgres budget, relaxed: the run can end
				t.Fatal(err)
			}
			before, err := observe.Live(ctx, w.Base, observe.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p, after, err := ambient.PlanUpgradeSimulated(before, ambient.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Strategy: strategy,
				Waive: []plan.Code{plan.CodeNamespaceSidecarAndAmbient, plan.CodePDBBlocksDrain}})
			if err != nil {
				t.Fatalf("PlanUpgrade: %v", err)
			}
			if len(after) != 1 {
				t.Fatalf("the plan has %d hops, want one", len(after))
			}
			if _, err := w.Executor().Apply(ctx, p, execute.ApplyOptions{}); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			got, err := observe.Live(ctx, w.Base, observe.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(meshFacts(after[0]), meshFacts(got)); d != "" {
				t.Errorf("the planner's simulation and the fake cluster disagree on the mesh after the upgrade (-simulated +cluster):\n%s", d)
			}
			for _, b := range proxiesNeverNewer(after[0], got) {
				t.Errorf("the simulation is newer than the cluster: %s", b)
			}
		})
	}
}
