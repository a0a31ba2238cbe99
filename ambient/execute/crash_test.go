package execute_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/execute"
)

// TestARunKilledAfterAnyWriteResumesToTheSameEndState kills the run right after its n-th write has
// taken effect, for every n of a whole plan: API writes, Helm changes, Lease and journal writes all
// count, so a crash can fall between an action and the journal write that records it. A new process
// (same identity, so it takes its Lease back) resumes from the journal; the end state and every side
// effect must be those of a clean run: nothing done twice, nothing left out.
func TestARunKilledAfterAnyWriteResumesToTheSameEndState(t *testing.T) {
	clean := upgradeWorld(t, 3)
	journal := clean.Journal()
	p := upgradePlan(clean)
	if _, err := clean.Executor(func(o *execute.Options) { o.Journal = journal }).Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	wantState, wantEffects, writes := clean.State(), clean.Effects(), clean.Writes()
	if writes < 50 {
		t.Fatalf("the clean run made only %d writes; the test would prove little", writes)
	}
	t.Logf("a clean run makes %d writes; killing after each of them", writes)
	for n := 1; n < writes; n++ {
		t.Run(fmt.Sprintf("killed after write %d of %d", n, writes), func(t *testing.T) {
			t.Parallel()
			w := upgradeWorld(t, 3)
			p := upgradePlan(w)
			journal := w.Journal()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w.KillAfterWrites(n, cancel)
			_, err := w.Executor(func(o *execute.Options) { o.Journal = journal }).Apply(ctx, p, execute.ApplyOptions{})
			if err == nil {
				t.Fatalf("the run killed after write %d finished anyway", n)
			}
			w.Revive()
			hash, _ := execute.PlanHash(p)
			had, _ := journal.Load(context.Background(), hash)
			// Apply continues the journal when there is one (a crash before the first journal write
			// leaves none: the plan then starts afresh).
			res, err := w.Executor(func(o *execute.Options) { o.Journal = journal }).Apply(context.Background(), p, execute.ApplyOptions{})
			if errors.Is(err, execute.ErrLocked) {
				t.Fatalf("the restarted process could not take its own Lease back: %v", err)
			}
			if err != nil {
				t.Fatalf("resume after write %d: %v", n, err)
			}
			if had != nil && !res.Resumed {
				t.Errorf("the killed run had written its journal, but the new one did not continue it")
			}
			sameOutcome(t, w, wantState, wantEffects)
		})
	}
}
