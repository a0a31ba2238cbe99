package execute_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
)

// TestARunKilledAfterAnyWriteResumesToTheSameEndState kills the run right after its n-th write has
// taken effect, for every n of a whole plan: API writes, Helm changes, Lease and journal writes all
// count, so a crash can fall between an action and the journal write that records it. A new process
// (same identity, so it takes its Lease back) resumes from the journal; the end state and every side
// effect must be those of a clean run: nothing done twice, nothing left out.
// crashBatch is the crash test's batch size: one wave of two nodes at once, then one of one.
const crashBatch = 2

func TestARunKilledAfterAnyWriteResumesToTheSameEndState(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
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
	for _, n := range sweep(1, writes) {
		t.Run(fmt.Sprintf("killed after write %d of %d", n, writes), func(t *testing.T) {
			t.Parallel()
			w := upgradeWorld(t, 3)
			p := upgradePlanBatch(w, crashBatch)
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
			sameOutcomeInWaves(t, w, wantState, wantEffects)
		})
	}
}

// replacement matches the name of a pod a controller made for an evicted one ("cart-1-r2").
var replacement = regexp.MustCompile(`-r[0-9]+$`)

// sameOutcomeInWaves is sameOutcome for a plan whose nodes move at the same time: where a wave's
// evicted pods land depends on which of its nodes is uncordoned first, so a replacement may land on
// a node of a later wave and be evicted again there. It compares the controllers' pods by how many
// each has, and leaves out the evictions of replacements; every other pod, eviction and write must
// be the clean run's.
func sameOutcomeInWaves(t *testing.T, w *world, wantState executetest.State, wantEffects map[string]int) {
	t.Helper()
	norm := func(s executetest.State, eff map[string]int) (executetest.State, map[string]int) {
		pods, made := map[string]string{}, map[string][]string{}
		for k, v := range s.Pods {
			if replacement.MatchString(k) {
				base := replacement.ReplaceAllString(k, "-r*")
				made[base] = append(made[base], v)
				continue
			}
			pods[k] = v
		}
		for k, vs := range made {
			sort.Strings(vs)
			pods[k] = strings.Join(vs, " | ")
		}
		s.Pods = pods
		out := map[string]int{}
		for k, v := range eff {
			if !(strings.HasPrefix(k, "evict ") && replacement.MatchString(k)) {
				out[k] = v
			}
		}
		return s, out
	}
	ws, we := norm(wantState, wantEffects)
	gs, ge := norm(w.State(), w.Effects())
	if d := cmp.Diff(ws, gs); d != "" {
		t.Errorf("end state differs from the clean run (-clean +this):\n%s", d)
	}
	if d := cmp.Diff(we, ge); d != "" {
		t.Errorf("side effects differ from the clean run (-clean +this):\n%s", d)
	}
}
