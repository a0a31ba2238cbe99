package execute_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []execute.Event
}

func (r *recorder) observe(ev execute.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) of(t execute.EventType) []execute.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []execute.Event
	for _, e := range r.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// cleanRun applies the upgrade plan to a fresh world and returns the end state and side effects.
func cleanRun(t *testing.T, nodes int) (executetest.State, map[string]int) {
	t.Helper()
	w := upgradeWorld(t, nodes)
	p := upgradePlan(w)
	if _, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{}); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	return w.State(), w.Effects()
}

func TestApplyRunsTheWholeUpgradePlan(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	rec := &recorder{}
	e := w.Executor(func(o *execute.Options) { o.Observer = rec.observe })
	res, err := e.Apply(context.Background(), p, execute.ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !res.Done || res.Resumed || len(res.Steps) != len(p.Steps) {
		t.Fatalf("result: done=%v resumed=%v steps=%d of %d", res.Done, res.Resumed, len(res.Steps), len(p.Steps))
	}
	for _, sr := range res.Steps {
		if sr.Status != execute.StatusDone || sr.Skipped {
			t.Errorf("step %s: status %s skipped=%v", sr.StepID, sr.Status, sr.Skipped)
		}
	}
	st := w.State()
	for pod, where := range st.Pods {
		if strings.HasPrefix(pod, "istio-system/") && !strings.Contains(where, ":"+toV) {
			t.Errorf("node agent %s still runs %s", pod, where)
		}
	}
	for n, cordoned := range st.Nodes {
		if cordoned {
			t.Errorf("node %s is left cordoned", n)
		}
	}
	if got := st.Labels["MutatingWebhookConfiguration istio-revision-tag-prod"]; !strings.Contains(got, "istio.io/rev:"+toRev) {
		t.Errorf("tag prod: %s", got)
	}
	if _, ok := st.Labels["ConfigMap legacy/old-config"]; ok {
		t.Errorf("legacy/old-config was not deleted")
	}
	// Two steps each upgrade istio-base and ztunnel; everything else happens exactly once.
	twice := map[string]bool{"helm upgrade istio-system/istio-base": true, "helm upgrade istio-system/ztunnel": true}
	effects := w.Effects()
	for _, eff := range sortedKeys(effects) {
		want := 1
		if twice[eff] {
			want = 2
		}
		if n := effects[eff]; n != want {
			t.Errorf("%s happened %d times, want %d", eff, n, want)
		}
	}
	t.Logf("%d side effects, e.g. %s", len(effects), strings.Join(sortedKeys(effects)[:5], "; "))
	if n := len(rec.of(execute.EventStepFinished)); n != len(p.Steps) {
		t.Errorf("%d StepFinished events, want %d", n, len(p.Steps))
	}
	pdb := rec.of(execute.EventWaitingOnPDB)
	if len(pdb) == 0 || !cmp.Equal(pdb[0].PDBs, []string{"shop/db"}) || !cmp.Equal(pdb[0].Pods, []string{"shop/db-0"}) {
		t.Errorf("WaitingOnPDB events: %+v", pdb)
	}
	if sb := rec.of(execute.EventSandboxRetry); len(sb) != 1 || !cmp.Equal(sb[0].Pods, []string{"shop/cart-0"}) {
		t.Errorf("SandboxRetry events: %+v", sb)
	}
	var drained []string
	for _, ev := range rec.of(execute.EventStepProgress) {
		if strings.Contains(ev.Message, "drained (") {
			drained = append(drained, fmt.Sprintf("%d/%d", ev.Done, ev.Of))
		}
	}
	if !cmp.Equal(drained, []string{"1/3", "2/3", "3/3"}) {
		t.Errorf("node progress: %v", drained)
	}

	// Applying the finished plan again is a no-op.
	w.ResetCounts()
	res, err = w.Executor().Apply(context.Background(), p, execute.ApplyOptions{})
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if !res.Resumed {
		t.Errorf("second Apply did not resume from the journal")
	}
	for _, sr := range res.Steps {
		if !sr.Skipped {
			t.Errorf("step %s ran again", sr.StepID)
		}
	}
	if eff := w.Effects(); len(eff) != 0 {
		t.Errorf("second Apply changed the cluster: %v", eff)
	}
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

var _ = errors.Is
var _ = plan.KindDrain
