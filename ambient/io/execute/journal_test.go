package execute_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func TestJournalsKeepTheRecordOfTheirOwnPlanOnly(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	rec := &execute.Record{PlanHash: "sha256:0123456789abcdef0123", PlanName: "p", Created: t0,
		Steps: map[string]*execute.StepRecord{"a": {Status: execute.StatusDone, Finished: t0, Changes: []string{"did a"}}}}
	dir := t.TempDir()
	journals := []struct {
		name string
		j    execute.Journal
	}{
		{name: "a ConfigMap journal", j: &execute.ConfigMapJournal{Client: w.Client, Namespace: "istio-system"}},
		{name: "a file journal", j: &execute.FileJournal{Path: filepath.Join(dir, "journal.json")}},
		{name: "a memory journal", j: &execute.MemoryJournal{}},
	}
	for _, tc := range journals {
		t.Run(tc.name+" reads back what it saved and refuses another plan", func(t *testing.T) {
			if got, err := tc.j.Load(ctx, rec.PlanHash); got != nil || err != nil {
				t.Fatalf("Load before Save: %v, %v", got, err)
			}
			if err := tc.j.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			got, err := tc.j.Load(ctx, rec.PlanHash)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(rec, got); d != "" {
				t.Errorf("Load (-saved +loaded):\n%s", d)
			}
			if _, ok := tc.j.(*execute.FileJournal); ok {
				if _, err := tc.j.Load(ctx, "sha256:ffff"); !errors.Is(err, execute.ErrJournalMismatch) {
					t.Errorf("Load of another plan's hash: %v, want ErrJournalMismatch", err)
				}
			}
		})
	}
	var cm corev1.ConfigMap
	if err := w.Base.Get(ctx, client.ObjectKey{Namespace: "istio-system", Name: "ambientkit-journal-0123456789ab"}, &cm); err != nil {
		t.Fatalf("the ConfigMap journal is not named after the plan hash: %v", err)
	}
	if len(cm.BinaryData["journal.json.gz"]) == 0 || cm.Labels["ambientkit.io/plan"] != "0123456789ab" {
		t.Errorf("journal ConfigMap: labels %v, binary keys %d", cm.Labels, len(cm.BinaryData))
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte("{"), 0o600)
	if _, err := (&execute.FileJournal{Path: bad}).Load(ctx, rec.PlanHash); err == nil || !strings.Contains(err.Error(), "move it away to start over") {
		t.Errorf("a corrupt journal file: %v", err)
	}
}

func TestARunRenewsItsLeaseThroughLongWaitsAndReleasesItAtTheEnd(t *testing.T) {
	w := newWorld(t, node("n1"))
	gate := plan.Step{ID: "gate", Description: "settle 10 minutes", HealthGate: &plan.HealthGate{Probe: "mesh-health", Scope: "all", SettleSeconds: 600}}
	p := stepsPlan(t, w, gate, plan.Step{ID: "cordon", Description: "cordon", Cordon: &plan.NodeRef{Node: "n1"}})
	var during error
	e := w.Executor(func(o *execute.Options) {
		o.Identity = "long-run"
		o.Observer = func(ev execute.Event) {
			if ev.Type == execute.EventStepStarted && ev.StepID == "cordon" {
				_, during = w.Executor(func(o *execute.Options) { o.Identity = "other" }).Apply(context.Background(), p, execute.ApplyOptions{})
			}
		}
	})
	start := w.Clock.Now()
	if _, err := e.Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if waited := w.Clock.Now().Sub(start); waited < 10*time.Minute {
		t.Fatalf("the gate settled for %s only", waited)
	}
	if !errors.Is(during, execute.ErrLocked) {
		t.Errorf("another run 10 minutes into a run with a 2-minute Lease: %v, want ErrLocked (the Lease is renewed)", during)
	}
	var lease coordinationv1.Lease
	if err := w.Base.Get(context.Background(), client.ObjectKey{Namespace: "istio-system", Name: execute.LockName}, &lease); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != "" || ptr.Deref(lease.Spec.LeaseTransitions, 0) != 1 {
		t.Errorf("Lease after the run: holder %q, transitions %d", ptr.Deref(lease.Spec.HolderIdentity, ""), ptr.Deref(lease.Spec.LeaseTransitions, 0))
	}
	if n := w.Bookkeeping()["update Lease"]; n < 5 {
		t.Errorf("%d Lease updates over a 10-minute wait; want a renewal every 40s or so", n)
	}
}
