package plan

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// Restart rolls out the workloads again (kubectl rollout restart), in batches.
type Restart struct {
	Workloads []mesh.ObjectRef `json:"workloads"`
	BatchSize int              `json:"batchSize,omitempty"`
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
	commands: func(s *Step) []string {
		var out []string
		for _, w := range s.Restart.Workloads {
			out = append(out, fmt.Sprintf("kubectl rollout restart %s/%s -n %s", strings.ToLower(w.Kind), w.Name, w.Namespace))
		}
		return out
	},
	node:    noNode,
	summary: noSummary,
	timing:  func(t *timing, s *Step) { t.restarts += len(s.Restart.Workloads) },
	// action_restart.go: GET and merge-patch each workload's pod template, then GET it until it rolled
	// out. A dry run only describes the restart.
	permissions: func(s *Step, dry bool, n need) {
		if !dry {
			n.restart(s.Restart.Workloads)
		}
	},
	release: noRelease,
}
