package plan

import "fmt"

// HealthGate asks the caller's probe whether the mesh is healthy (error rate, resets, latency) and stops
// the run if not.
type HealthGate struct {
	// Probe names the probe the caller registered with the executor.
	Probe string `json:"probe"`
	// Scope says what the gate watches ("tag prod-stable", "node pool-a-3").
	Scope string `json:"scope"`
	// SettleSeconds is how long to wait after the previous step before asking.
	SettleSeconds int64 `json:"settleSeconds,omitempty"`
}

// KindHealthGate is the kind of steps whose action is Step.HealthGate.
const KindHealthGate Kind = "HealthGate"

var healthGateKind = kindSpec{
	kind:    KindHealthGate,
	payload: payloadOf(func(s *Step) *HealthGate { return s.HealthGate }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		mustNotBeEmpty(where, "healthGate.probe", s.HealthGate.Probe, bad)
		if s.HealthGate.SettleSeconds < 0 {
			bad("%s: healthGate.settleSeconds is negative", where)
		}
	},
	commands: func(s *Step) []string {
		return []string{fmt.Sprintf("# health gate %q on %s: check error rate, TCP resets and latency before going on", s.HealthGate.Probe, s.HealthGate.Scope)}
	},
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
	readOnly:    true,
	keepsMesh:   true,
}
