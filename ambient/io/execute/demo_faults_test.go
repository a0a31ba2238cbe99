package execute_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/revision"
)

// demoWorld is the embedded demo cluster as a world: its objects, Deployments for its ReplicaSet
// pods (the dump holds only pods), and the postgres budget relaxed to one disruption, as the plan's
// PDB_BLOCKS_DRAIN finding tells an operator to do before draining.
func demoWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	objs, err := demo.Objects()
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, objs...)
	if err := w.PrepareDemo(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// demoPlan is ambient.PlanUpgrade's own plan for the world, made from observe.Live of it.
func demoPlan(t *testing.T, w *world) *plan.Plan {
	t.Helper()
	snap, err := w.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: mesh.MustParseVersion(toV), Today: t0,
		Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 3}, Waive: []plan.Code{plan.CodeNamespaceSidecarAndAmbient}})
	if err != nil {
		t.Fatalf("PlanUpgrade of the demo world: %v", err)
	}
	if !p.Runnable() {
		t.Fatalf("the demo plan is not runnable: %v", plan.Stopping(p.Findings))
	}
	return p
}

// checkUpgraded reads the world with observe.Live and checks the upgrade's end state on the real
// objects: one revision at the target, every tag and the default revision on it, the CNI and every
// ztunnel pod at the target, no node left cordoned, every sidecar injected by the new revision, and
// nothing referring to the old one. Nodes cordoned before the upgrade (cordonedBefore) stay so.
func checkUpgraded(t *testing.T, w *world, oldRev string, cordonedBefore map[string]bool) {
	t.Helper()
	s, err := w.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	target := mesh.MustParseVersion(toV)
	if len(s.Revisions) != 1 || s.Revisions[0].Name != toRev || s.Revisions[0].Version != target || !s.Revisions[0].Ready() {
		t.Errorf("revisions after the upgrade: %+v; want only %s at %s, ready", s.RevisionNames(), toRev, target)
	}
	for _, tag := range s.Tags {
		if tag.Revision != toRev {
			t.Errorf("tag %s points at %s, want %s", tag.Name, tag.Revision, toRev)
		}
	}
	if s.DefaultRevision != toRev {
		t.Errorf("default revision %q, want %s", s.DefaultRevision, toRev)
	}
	if s.CNI == nil || s.CNI.Version != target {
		t.Errorf("istio-cni: %+v", s.CNI)
	} else {
		for _, p := range s.CNI.Pods {
			if p.Version != target || !p.Ready {
				t.Errorf("istio-cni pod %s on %s: %s ready=%v", p.Pod, p.Node, p.Version, p.Ready)
			}
		}
	}
	for _, z := range s.Ztunnels {
		if z.Revision != toRev {
			t.Errorf("ztunnel %s points at revision %q, want %s", z.Name, z.Revision, toRev)
		}
		if len(z.Pods) != len(s.Nodes) {
			t.Errorf("ztunnel %s has %d pods on %d nodes", z.Name, len(z.Pods), len(s.Nodes))
		}
		for _, p := range z.Pods {
			if p.Version != target || !p.Ready {
				t.Errorf("ztunnel pod %s on %s: %s ready=%v", p.Pod, p.Node, p.Version, p.Ready)
			}
		}
		if z.UpdateStrategy.Type != "RollingUpdate" {
			t.Errorf("ztunnel %s update strategy %s, want RollingUpdate again", z.Name, z.UpdateStrategy.Type)
		}
	}
	for _, n := range s.Nodes {
		if n.Unschedulable != cordonedBefore[n.Name] {
			t.Errorf("node %s: cordoned=%v, before the upgrade %v", n.Name, n.Unschedulable, cordonedBefore[n.Name])
		}
	}
	for _, wl := range s.Workloads {
		for rev, n := range wl.SidecarRevisions {
			if rev != toRev {
				t.Errorf("%s: %d pod(s) with sidecars injected by %s", wl.Ref(), n, rev)
			}
		}
	}
	if refs := revision.References(s, oldRev); len(refs) > 0 {
		t.Errorf("the old revision %s is still referred to: %v", oldRev, refs)
	}
}

// TestTheDemoUpgradeUnderFaultsEndsUpgradedOnTheRealObjects applies the planner's own plan for the
// demo mesh to the demo world, cleanly and then with faults at 20% of all calls, and judges each
// end state from the objects (observe.Live), not from a model kept by the test.
func TestTheDemoUpgradeUnderFaultsEndsUpgradedOnTheRealObjects(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	clean := demoWorld(t)
	p := demoPlan(t, clean)
	before, err := clean.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cordoned := map[string]bool{}
	for _, n := range before.Nodes {
		cordoned[n.Name] = n.Unschedulable
	}
	if len(cordoned) == 0 || !cordoned["ip-10-0-1-18.ec2.internal"] {
		t.Fatalf("the demo should have a node cordoned before the upgrade: %v", cordoned)
	}
	if _, err := clean.Executor().Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
		t.Fatalf("clean run of the demo plan (%d steps): %v", len(p.Steps), err)
	}
	checkUpgraded(t, clean, "1-30-3", cordoned)
	wantState, wantEffects := clean.State(), clean.Effects()
	t.Logf("demo plan: %d steps; clean run: %d side effects", len(p.Steps), len(wantEffects))
	for _, seed := range seeds(t) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			t.Logf("rerun with -fault-seeds=%d", seed)
			w := demoWorld(t)
			p := demoPlan(t, w)
			w.InjectFaults(0.2, seed)
			if _, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
				t.Fatalf("seed %d: Apply: %v", seed, err)
			}
			if w.Faults() == 0 {
				t.Fatalf("seed %d: no fault was injected", seed)
			}
			t.Logf("seed %d: %d faults injected", seed, w.Faults())
			w.InjectFaults(0, seed) // the judge reads without faults
			checkUpgraded(t, w, "1-30-3", cordoned)
			sameOutcome(t, w, wantState, wantEffects)
		})
	}
}
