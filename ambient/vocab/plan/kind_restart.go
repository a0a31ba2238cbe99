package plan

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Restart rolls out the workloads again (kubectl rollout restart), in batches.
type Restart struct {
	Workloads []mesh.ObjectRef `json:"workloads"`
	BatchSize int              `json:"batchSize,omitempty"`
}

// restartCommands restart the workloads batch by batch, each batch waited for until it rolled out,
// as the executor does.
func restartCommands(ws []mesh.ObjectRef, batch int) []string {
	if batch <= 0 {
		batch = 1
	}
	var out []string
	for i := 0; i < len(ws); i += batch {
		part := ws[i:min(i+batch, len(ws))]
		for _, w := range part {
			out = append(out, fmt.Sprintf("kubectl rollout restart %s/%s -n %s", strings.ToLower(w.Kind), w.Name, w.Namespace))
		}
		for _, w := range part {
			out = append(out, fmt.Sprintf("kubectl rollout status %s/%s -n %s --timeout=10m", strings.ToLower(w.Kind), w.Name, w.Namespace))
		}
	}
	return out
}

// KindRestart is the kind of steps whose action is Step.Restart.
const KindRestart Kind = "Restart"

var restartKind = kindSpec{
	kind:    KindRestart,
	payload: payloadOf(func(s *Step) *Restart { return s.Restart }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		if len(s.Restart.Workloads) == 0 {
			bad("%s: restart names no workload", where)
		}
		for _, w := range s.Restart.Workloads {
			switch w.Kind {
			case "Deployment", "StatefulSet", "DaemonSet":
			default:
				bad("%s: restart of %s: only Deployments, StatefulSets and DaemonSets roll out", where, w)
			}
		}
		if s.Restart.BatchSize < 0 {
			bad("%s: restart.batchSize is negative", where)
		}
	},
	commands:    func(s *Step) []string { return restartCommands(s.Restart.Workloads, s.Restart.BatchSize) },
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
