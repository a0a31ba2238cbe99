package estimate

import (
	"fmt"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/words"
)

// Waits adds up what a run of steps waits for, as their kinds say (kinds.go): the Phases table of
// the runbook and the time model read it. Settle and Timeouts are seconds.
type Waits struct {
	Settle, Timeouts int64
	// defaults counts drains and waits that leave their timeout to the executor.
	Defaults int
	// waits are counts by what is waited for ("health gate 30s"), in the order first seen.
	waits     []string
	waitCount map[string]int
	// helm, restarts and approvals take as long as they take.
	Helm, Restarts, Approvals int
}

// Add adds what the step waits for, as its kind says.
func (t *Waits) Add(s *plan.Step) {
	if k, ok := kindTimes[s.Kind()]; ok {
		k.waits(t, s)
	}
}

// count counts one wait for what.
func (t *Waits) count(what string) {
	if t.waitCount == nil {
		t.waitCount = map[string]int{}
	}
	if t.waitCount[what] == 0 {
		t.waits = append(t.waits, what)
	}
	t.waitCount[what]++
}

// bound counts a wait for what bounded by a timeout of sec seconds, 0 for the executor's default.
func (t *Waits) bound(what string, sec int64) {
	if sec > 0 {
		t.Timeouts += sec
		t.count(fmt.Sprintf("%s ≤ %s", what, words.Seconds(sec)))
	} else {
		t.Defaults++
		t.count(what + " (executor's timeout)")
	}
}

// helmWaits is the timing of a Helm change: it takes as long as its rollout.
func helmWaits(t *Waits, _ *plan.Step) { t.Helm++ }

// Merge adds o's counts (not its list of waits).
func (t *Waits) Merge(o Waits) {
	t.Settle += o.Settle
	t.Timeouts += o.Timeouts
	t.Defaults += o.Defaults
	t.Helm += o.Helm
	t.Restarts += o.Restarts
	t.Approvals += o.Approvals
}

// List names what is waited for, with counts ("2× health gate 30s"), "–" for nothing.
func (t Waits) List() string {
	var out []string
	for _, w := range t.waits {
		if n := t.waitCount[w]; n > 1 {
			out = append(out, fmt.Sprintf("%d× %s", n, w))
		} else {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return "–"
	}
	return strings.Join(out, ", ")
}

// kindTime is what the time model knows of one action kind: what its steps wait for (waits), and
// what a step outside a wave takes beyond its waits (takes): a typical time no timeout bounds (a Helm
// change, a restart), or a time bounded by the step's timeout of timeout seconds (a drain, new nodes
// joining).
type kindTime struct {
	waits func(t *Waits, s *plan.Step)
	takes func(s *plan.Step, o Options) (typical, bounded time.Duration, timeout int64)
}

// takesNothing is the takes of kinds that take no time beyond their waits.
func takesNothing(*plan.Step, Options) (typical, bounded time.Duration, timeout int64) {
	return 0, 0, 0
}

// noWaits is the timing of kinds that neither wait nor take a time the Phases table names.
func noWaits(*Waits, *plan.Step) {}

// kindTimes is what each action kind's steps wait for and take; a test fails when a kind of
// plan.Kinds has no entry.
var kindTimes = map[plan.Kind]kindTime{
	plan.KindAnnotate:    {waits: noWaits, takes: takesNothing},
	plan.KindApplyObject: {waits: noWaits, takes: takesNothing},
	plan.KindApproval: {waits: func(t *Waits, _ *plan.Step) {
		t.Approvals++
		t.count("approval")
	}, takes: takesNothing},
	plan.KindBackup:       {waits: noWaits, takes: takesNothing},
	plan.KindCordon:       {waits: noWaits, takes: takesNothing},
	plan.KindDeleteObject: {waits: noWaits, takes: takesNothing},
	plan.KindDeletePod:    {waits: noWaits, takes: takesNothing},
	plan.KindDrain:        {waits: func(t *Waits, s *plan.Step) { t.bound("drain", s.Drain.TimeoutSeconds) }, takes: drainTakes},
	plan.KindHealthGate: {waits: func(t *Waits, s *plan.Step) {
		t.Settle += s.HealthGate.SettleSeconds
		t.count(fmt.Sprintf("health gate %s", words.Seconds(s.HealthGate.SettleSeconds)))
	}, takes: takesNothing},
	plan.KindHelmInstall:   {waits: helmWaits, takes: helmTakes},
	plan.KindHelmRollback:  {waits: helmWaits, takes: helmTakes},
	plan.KindHelmUninstall: {waits: helmWaits, takes: helmTakes},
	plan.KindHelmUpgrade:   {waits: helmWaits, takes: helmTakes},
	plan.KindMoveTag:       {waits: noWaits, takes: takesNothing},
	plan.KindPatchLabels:   {waits: noWaits, takes: takesNothing},
	plan.KindReinject:      {waits: noWaits, takes: takesNothing},
	plan.KindRestart:       {waits: func(t *Waits, s *plan.Step) { t.Restarts += len(s.Restart.Workloads) }, takes: restartTakes},
	plan.KindRestore:       {waits: noWaits, takes: takesNothing},
	plan.KindUncordon:      {waits: noWaits, takes: takesNothing},
	plan.KindVerify:        {waits: noWaits, takes: takesNothing},
	plan.KindWaitFor:       {waits: func(t *Waits, s *plan.Step) { t.bound("wait", s.WaitFor.TimeoutSeconds) }, takes: waitForTakes},
}

// helmTakes: a Helm install, upgrade, rollback or uninstall takes its rollout's typical time.
func helmTakes(_ *plan.Step, o Options) (typical, bounded time.Duration, timeout int64) {
	return o.HelmChange, 0, 0
}

// restartTakes: the executor restarts BatchSize workloads at a time (at least one), each batch its
// rollout.
func restartTakes(s *plan.Step, o Options) (typical, bounded time.Duration, timeout int64) {
	size := max(1, s.Restart.BatchSize)
	return time.Duration((len(s.Restart.Workloads)+size-1)/size) * o.Restart, 0, 0
}

// waitForTakes: a wait for new nodes takes their provisioning, within its timeout.
func waitForTakes(s *plan.Step, o Options) (typical, bounded time.Duration, timeout int64) {
	if s.WaitFor.Check.Type != plan.CheckNodesReady {
		return 0, 0, 0
	}
	return 0, o.NodeProvisioning, s.WaitFor.TimeoutSeconds
}

// drainTakes: a drain takes what the model says of the pods it is expected to evict, within its
// timeout.
func drainTakes(s *plan.Step, o Options) (typical, bounded time.Duration, timeout int64) {
	d := s.Drain
	return 0, Limit(LimitInput{Waves: []LimitWave{{Nodes: []LimitNode{limitNode(d, o, true)}}}, Allowed: allowedBy(d.Expect)}).Total, d.TimeoutSeconds
}
