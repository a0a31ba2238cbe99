package execute_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// sameOutcome fails the test unless the world ended like the clean run, with every side effect made
// as many times as in the clean run (never twice where the clean run made it once).
func sameOutcome(t *testing.T, w *world, wantState executetest.State, wantEffects map[string]int) {
	t.Helper()
	if d := cmp.Diff(wantState, w.State()); d != "" {
		t.Errorf("end state differs from the clean run (-clean +this):\n%s", d)
	}
	if d := cmp.Diff(wantEffects, w.Effects()); d != "" {
		t.Errorf("side effects differ from the clean run (-clean +this):\n%s", d)
	}
}

// faultSeeds are the seeds of the fault-injection tests: fixed, so a run is repeatable; a failure
// names its seed, and -fault-seeds reruns exactly it (or tries more).
var faultSeeds = flag.String("fault-seeds", "1,2,3,4,5,6,7,8", "comma-separated seeds for the fault-injection tests")

func seeds(t *testing.T) []int64 {
	t.Helper()
	var out []int64
	list := strings.Split(*faultSeeds, ",")
	if testing.Short() && *faultSeeds == "1,2,3,4,5,6,7,8" {
		list = list[:3] // -short samples the sweep; the full one runs without it
	}
	for _, f := range list {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			t.Fatalf("-fault-seeds: %q is not a number", f)
		}
		out = append(out, n)
	}
	return out
}

func TestFaultsOnRandomCallsLeaveTheSameEndStateAndNoDoubleActions(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	wantState, wantEffects := cleanRun(t, 3)
	for _, seed := range seeds(t) {
		rate := 0.2
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Logf("seed %d, fault rate %.0f%% (rerun with -fault-seeds=%d)", seed, rate*100, seed)
			w := upgradeWorld(t, 3)
			p := upgradePlan(w)
			w.InjectFaults(rate, seed)
			if _, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
				t.Fatalf("seed %d: Apply: %v", seed, err)
			}
			if w.Faults() == 0 {
				t.Fatalf("seed %d: no fault was injected", seed)
			}
			t.Logf("seed %d: %d faults injected", seed, w.Faults())
			sameOutcome(t, w, wantState, wantEffects)
		})
	}
}

func TestLostResponsesToWritesAreNotRepeated(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	wantState, wantEffects := cleanRun(t, 3)
	for _, seed := range seeds(t) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Logf("seed %d (rerun with -fault-seeds=%d)", seed, seed)
			w := upgradeWorld(t, 3)
			p := upgradePlan(w)
			w.LoseResponses(0.3, seed)
			if _, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if w.Faults() == 0 {
				t.Fatal("no response was lost")
			}
			t.Logf("%d responses lost", w.Faults())
			sameOutcome(t, w, wantState, wantEffects)
		})
	}
}

func TestARunKilledAtEveryStepBoundaryResumesToTheSameEndState(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	wantState, wantEffects := cleanRun(t, 3)
	n := len(upgradePlan(upgradeWorld(t, 3)).Steps)
	for _, k := range sweep(1, n) {
		t.Run(fmt.Sprintf("killed after step %d", k), func(t *testing.T) {
			t.Parallel()
			killedAfter(t, k, wantState, wantEffects)
		})
	}
}

// killedAfter cancels a run once k steps finished, then resumes it in a new executor. The journal is
// in memory here (the ConfigMap journal is exercised by the other resume tests): the fake client's
// server-side apply is slow.
func killedAfter(t *testing.T, k int, wantState executetest.State, wantEffects map[string]int) {
	{
		w := upgradeWorld(t, 3)
		p := upgradePlan(w)
		journal := &execute.MemoryJournal{}
		ctx, cancel := context.WithCancel(context.Background())
		finished := 0
		e := w.Executor(func(o *execute.Options) {
			o.Journal = journal
			o.Observer = func(ev execute.Event) {
				if ev.Type == execute.EventStepFinished {
					if finished++; finished == k {
						cancel()
					}
				}
			}
		})
		_, err := e.Apply(ctx, p, execute.ApplyOptions{})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("killed after step %d: Apply returned %v, want context.Canceled", k, err)
		}
		// A new executor (a new process) resumes from the journal.
		res, err := w.Executor(func(o *execute.Options) { o.Journal = journal }).Apply(context.Background(), p, execute.ApplyOptions{Resume: true})
		if err != nil {
			t.Fatalf("resume after step %d: %v", k, err)
		}
		skipped := 0
		for _, sr := range res.Steps {
			if sr.Skipped {
				skipped++
			}
		}
		if !res.Resumed || skipped != k {
			t.Errorf("resume after step %d: resumed=%v, %d steps skipped, want %d", k, res.Resumed, skipped, k)
		}
		sameOutcome(t, w, wantState, wantEffects)
	}
}

func TestARunKilledInTheMiddleOfADrainResumesAfterItsLeaseExpires(t *testing.T) {
	wantState, wantEffects := cleanRun(t, 3)
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := w.Executor(func(o *execute.Options) {
		o.Identity = "first-process"
		o.Observer = func(ev execute.Event) {
			if ev.Type == execute.EventWaitingOnPDB {
				w.Kill() // the process dies: no call gets through any more, the Lease stays taken
				cancel()
			}
		}
	})
	if _, err := e.Apply(ctx, p, execute.ApplyOptions{}); err == nil {
		t.Fatal("the killed run finished")
	}
	w.Revive()
	var pod corev1.Pod
	if err := w.Base.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "db-0"}, &pod); err != nil {
		t.Fatalf("the drain should have stopped before db-0 went: %v", err)
	}

	second := w.Executor(func(o *execute.Options) { o.Identity = "second-process" })
	_, err := second.Apply(context.Background(), p, execute.ApplyOptions{Resume: true})
	if !errors.Is(err, execute.ErrLocked) || !strings.Contains(err.Error(), `"first-process"`) {
		t.Fatalf("while the dead run's Lease is valid: %v, want ErrLocked naming first-process", err)
	}
	w.Clock.Advance(execute.DefaultLeaseDuration + time.Second)
	res, err := second.Apply(context.Background(), p, execute.ApplyOptions{Resume: true})
	if err != nil {
		t.Fatalf("resume after the Lease expired: %v", err)
	}
	if !res.Resumed {
		t.Error("the second run did not resume from the journal")
	}
	sameOutcome(t, w, wantState, wantEffects)
}

func TestASecondConcurrentRunGetsErrLockedAndChangesNothing(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	var secondErr error
	var before, after map[string]int
	first := w.Executor(func(o *execute.Options) {
		o.Identity = "run-a"
		o.Observer = func(ev execute.Event) {
			if ev.Type == execute.EventStepStarted && ev.StepID == "cni/upgrade" {
				before = w.Effects()
				second := w.Executor(func(o *execute.Options) { o.Identity = "run-b" })
				_, secondErr = second.Apply(context.Background(), p, execute.ApplyOptions{})
				after = w.Effects()
			}
		}
	})
	if _, err := first.Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if !errors.Is(secondErr, execute.ErrLocked) || !strings.Contains(secondErr.Error(), `held by "run-a"`) {
		t.Fatalf("second run: %v, want ErrLocked naming run-a", secondErr)
	}
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("the locked-out run changed the cluster:\n%s", d)
	}
	var lease coordinationv1.Lease
	if err := w.Base.Get(context.Background(), client.ObjectKey{Namespace: "istio-system", Name: execute.LockName}, &lease); err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" {
		t.Errorf("the Lease is still held by %q after the run", h)
	}
}

func TestAPlanForAnotherClusterIsStaleAndNothingChanges(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	// Someone upgraded istio-cni by hand after the plan was made.
	for i := range w.Model.HelmReleases {
		if w.Model.HelmReleases[i].Name == "istio-cni" {
			w.Model.HelmReleases[i].Revision = 2
		}
	}
	_, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{})
	if !errors.Is(err, execute.ErrPlanStale) {
		t.Fatalf("Apply: %v, want ErrPlanStale", err)
	}
	for _, want := range []string{"istio-system/istio-cni is at revision 2", "the plan expected revision 1", "re-plan"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if eff := w.Effects(); len(eff) != 0 {
		t.Errorf("a stale plan changed the cluster: %v", eff)
	}
	var cms corev1.ConfigMapList
	_ = w.Base.List(context.Background(), &cms, client.InNamespace("istio-system"))
	if len(cms.Items) != 0 {
		t.Errorf("a stale plan left a journal: %v", cms.Items[0].Name)
	}
}

func TestAHandEditedInvalidPlanIsRefusedBeforeAnyCall(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *plan.Plan)
		want error
		says string
	}{
		{name: "a step with two actions is invalid", want: plan.ErrInvalidPlan, says: "has 2 actions",
			edit: func(p *plan.Plan) { p.Steps[3].Cordon = &plan.NodeRef{Node: "general-0"} }},
		{name: "a dependency on a later step is invalid", want: plan.ErrInvalidPlan, says: "comes later",
			edit: func(p *plan.Plan) { p.Steps[1].DependsOn = []string{p.Steps[5].ID} }},
		{name: "a deletion without its backup step is invalid", want: plan.ErrInvalidPlan, says: "naming a backup step",
			edit: func(p *plan.Plan) { p.Steps[len(p.Steps)-1].DeleteObject.BackupStep = "" }},
		{name: "an unknown check type is invalid", want: plan.ErrInvalidPlan, says: `"Telepathy" is unknown`,
			edit: func(p *plan.Plan) { p.Steps[0].Verify.Checks[0].Type = "Telepathy" }},
		{name: "a removed fingerprint is invalid", want: plan.ErrInvalidPlan, says: "fingerprint is empty",
			edit: func(p *plan.Plan) { p.Metadata.Fingerprint = "" }},
		{name: "a blocked step stops the plan before anything runs", want: execute.ErrStepBlocked, says: "still referred to",
			edit: func(p *plan.Plan) { p.Steps[len(p.Steps)-2].Blocked = "revision 1-30-3 is still referred to" }},
		{name: "an unwaived blocking finding stops the plan", want: execute.ErrStepBlocked, says: "CNI_AHEAD_OF_CONTROL_PLANE",
			edit: func(p *plan.Plan) {
				p.Findings = append(p.Findings, plan.Finding{Code: plan.CodeCNIAheadOfControlPlane, Severity: plan.Blocking, Message: "cni ahead"})
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := upgradeWorld(t, 3)
			p := upgradePlan(w)
			tc.edit(p)
			_, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Apply: %v; want %v saying %q", err, tc.want, tc.says)
			}
			if c, b := w.CallCount(); c+b != 0 {
				t.Errorf("%d API calls were made for a refused plan: %v %v", c+b, w.Calls(), w.Bookkeeping())
			}
		})
	}
}

func TestAJournalCannotBeResumedByAnotherPlan(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	j := &execute.FileJournal{Path: t.TempDir() + "/journal.json"}
	e := w.Executor(func(o *execute.Options) { o.Journal = j })
	if _, err := e.Apply(context.Background(), p, execute.ApplyOptions{Until: "base/upgrade"}); err != nil {
		t.Fatal(err)
	}
	other := upgradePlan(w)
	other.Metadata.Name = "someone else's plan"
	_, err := e.Apply(context.Background(), other, execute.ApplyOptions{})
	if !errors.Is(err, execute.ErrJournalMismatch) {
		t.Fatalf("Apply of another plan on the journal: %v, want ErrJournalMismatch", err)
	}
	res, err := e.Apply(context.Background(), p, execute.ApplyOptions{Until: "istiod/1-31-4/install"})
	if err != nil || !res.Resumed {
		t.Fatalf("the plan resumes its own journal: resumed=%v err=%v", res != nil && res.Resumed, err)
	}
}

func TestAnApprovalStopsTheRunUntilSomeoneApproves(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	rec := &recorder{}
	noOne := w.Executor(func(o *execute.Options) { o.Approve = nil; o.Observer = rec.observe })
	_, err := noOne.Apply(context.Background(), p, execute.ApplyOptions{})
	var se *execute.StepError
	if !errors.Is(err, execute.ErrApprovalRequired) || !errors.As(err, &se) || se.StepID != "istiod/1-30-3/approve" {
		t.Fatalf("Apply without an approver: %v, want ErrApprovalRequired at istiod/1-30-3/approve", err)
	}
	if ev := rec.of(execute.EventApprovalNeeded); len(ev) != 1 || ev[0].Message != "remove revision 1-30-3" {
		t.Errorf("ApprovalNeeded events: %+v", ev)
	}
	if _, err := w.Helm.Get(context.Background(), "istiod-1-30-3", "istio-system"); err != nil {
		t.Fatalf("the old revision was removed without approval: %v", err)
	}
	asked := 0
	approver := w.Executor(func(o *execute.Options) {
		o.Approve = func(_ context.Context, st plan.Step) (bool, error) { asked++; return st.Approval != nil, nil }
	})
	res, err := approver.Apply(context.Background(), p, execute.ApplyOptions{})
	if err != nil || !res.Resumed || asked != 1 {
		t.Fatalf("Apply with an approver: err=%v resumed=%v asked=%d", err, res.Resumed, asked)
	}
	if _, err := w.Helm.Get(context.Background(), "istiod-1-30-3", "istio-system"); !errors.Is(err, execute.ErrReleaseNotFound) {
		t.Errorf("the old revision is still installed after approval: %v", err)
	}
}

func TestAnUnhealthyGateStopsTheRunAndOffersThePreviousRollback(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	rec := &recorder{}
	e := w.Executor(func(o *execute.Options) {
		o.Observer = rec.observe
		o.Probes = map[string]execute.Probe{"mesh-health": func(_ context.Context, scope string) (bool, string, error) {
			if scope == "tag prod" {
				return false, "5xx rate 4% on legacy/billing", nil
			}
			return true, "", nil
		}}
	})
	_, err := e.Apply(context.Background(), p, execute.ApplyOptions{})
	if !errors.Is(err, execute.ErrUnhealthy) || !strings.Contains(err.Error(), "5xx rate 4%") || !strings.Contains(err.Error(), `"tags/prod/move"`) {
		t.Fatalf("Apply: %v, want ErrUnhealthy offering tags/prod/move", err)
	}
	gates := rec.of(execute.EventGateUnhealthy)
	if len(gates) != 1 || gates[0].Rollback != "tags/prod/move" || gates[0].StepID != "tags/prod/health" {
		t.Fatalf("GateUnhealthy events: %+v", gates)
	}
	if _, err := e.Rollback(context.Background(), p, gates[0].Rollback); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if got := w.State().Labels["MutatingWebhookConfiguration istio-revision-tag-prod"]; !strings.Contains(got, "istio.io/rev:"+fromRev) {
		t.Errorf("after the rollback tag prod is %s", got)
	}
	_, err = e.Apply(context.Background(), p, execute.ApplyOptions{})
	if !errors.Is(err, execute.ErrRolledBack) {
		t.Errorf("Apply after a rollback: %v, want ErrRolledBack", err)
	}
}

func TestADryRunChangesNothingAndSaysWhatEachStepWouldDo(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	before := w.State()
	res, err := w.Executor(func(o *execute.Options) { o.DryRun = true }).Apply(context.Background(), p, execute.ApplyOptions{})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if !res.DryRun || len(res.Steps) != len(p.Steps) {
		t.Fatalf("dry run result: %+v", res)
	}
	for _, sr := range res.Steps {
		if sr.Status != execute.StatusWouldRun || len(sr.Changes) == 0 {
			t.Errorf("step %s: %s %v", sr.StepID, sr.Status, sr.Changes)
		}
	}
	// What each step would change, as objects (and what would hold it back), not as sentences.
	type would struct {
		Kind    plan.Kind
		Objects []string
		Held    []string
	}
	refs := func(objs []mesh.ObjectRef) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.String())
		}
		sort.Strings(out)
		return out
	}
	got := map[string]would{}
	for _, sr := range res.Steps {
		got[sr.StepID] = would{sr.Kind, refs(sr.Objects), refs(sr.Held)}
	}
	want := map[string]would{
		"base/upgrade":                    {plan.KindHelmUpgrade, []string{"HelmRelease istio-system/istio-base"}, nil},
		"istiod/1-31-4/install":           {plan.KindHelmInstall, []string{"HelmRelease istio-system/istiod-1-31-4"}, nil},
		"ztunnel/node/batch-1/drain":      {plan.KindDrain, []string{"Node batch-1", "Pod legacy/billing-0", "Pod shop/cart-0"}, nil},
		"ztunnel/node/general-0/drain":    {plan.KindDrain, []string{"Node general-0", "Pod shop/cart-1", "Pod shop/db-0"}, []string{"PodDisruptionBudget shop/db"}},
		"ztunnel/node/general-0/replace":  {plan.KindDeletePod, []string{"Pod istio-system/ztunnel-general-0"}, nil},
		"ztunnel/node/general-0/cordon":   {plan.KindCordon, []string{"Node general-0"}, nil},
		"ztunnel/node/general-0/uncordon": {plan.KindUncordon, []string{"Node general-0"}, nil},
		"tags/prod/move":                  {plan.KindMoveTag, []string{"MutatingWebhookConfiguration istio-revision-tag-prod"}, nil},
		"tags/prod/restart":               {plan.KindRestart, []string{"Deployment legacy/billing"}, nil},
		"namespaces/shop/waypoint":        {plan.KindPatchLabels, []string{"Namespace shop"}, nil},
		"istiod/1-30-3/backup":            {plan.KindBackup, []string{"ConfigMap legacy/old-config", "Deployment istio-system/istiod-1-30-3", "HelmRelease istio-system/istiod-1-30-3"}, nil},
		"istiod/1-30-3/remove":            {plan.KindHelmUninstall, []string{"HelmRelease istio-system/istiod-1-30-3"}, nil},
		"legacy/old-config/delete":        {plan.KindDeleteObject, []string{"ConfigMap legacy/old-config"}, nil},
		"istiod/1-30-3/approve":           {plan.KindApproval, nil, nil},
		"ztunnel/batch/1/health":          {plan.KindHealthGate, nil, nil},
	}
	for id, wv := range want {
		if d := cmp.Diff(wv, got[id]); d != "" {
			t.Errorf("step %s would change (-want +got):\n%s", id, d)
		}
	}
	if eff := w.Effects(); len(eff) != 0 {
		t.Errorf("the dry run changed the cluster: %v", eff)
	}
	if d := cmp.Diff(before, w.State()); d != "" {
		t.Errorf("the dry run changed the cluster (-before +after):\n%s", d)
	}
	for call := range w.Bookkeeping() {
		if !strings.HasPrefix(call, "get ") {
			t.Errorf("the dry run wrote to the journal, Lease or backups: %v", w.Bookkeeping())
		}
	}
}

var _ = rand.Int

// sweep is the points from, from+1, ..., to-1 a resilience sweep kills a run at: all of them, or
// with -short a sample of at most 16 spread over the range, the first and the last among them. The
// full sweep runs without -short (go test ./ambient/io/execute).
func sweep(from, to int) []int {
	var out []int
	step := 1
	if testing.Short() && to-from > 16 {
		step = (to - from + 15) / 16
	}
	for k := from; k < to; k += step {
		out = append(out, k)
	}
	if last := to - 1; len(out) > 0 && out[len(out)-1] != last {
		out = append(out, last)
	}
	return out
}
