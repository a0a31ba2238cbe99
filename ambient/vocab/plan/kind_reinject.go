package plan

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Reinject sets a namespace's sidecar injection labels again and restarts its workloads, in
// batches, so that their pods come back with sidecars: the rollback of a sidecar → ambient
// migration once its pods were restarted ("re-add the injection label, then kubectl rollout
// restart"). One step does both because the restart means nothing without the labels.
type Reinject struct {
	Namespace string `json:"namespace"`
	// Labels are the injection labels to set (istio-injection, istio.io/rev) as they were.
	Labels map[string]string `json:"labels"`
	// Remove are labels to take off the namespace first: istio-injection=disabled, which a
	// migration sets where injectors inject unlabelled namespaces, and which would keep every
	// istio.io/rev webhook from injecting (they select istio-injection DoesNotExist).
	Remove []string `json:"remove,omitempty"`
	// Workloads to restart (Deployments, StatefulSets, DaemonSets).
	Workloads []mesh.ObjectRef `json:"workloads,omitempty"`
	BatchSize int              `json:"batchSize,omitempty"`
}

// KindReinject is the kind of steps whose action is Step.Reinject.
const KindReinject Kind = "Reinject"

var reinjectKind = kindSpec{
	kind:    KindReinject,
	payload: payloadOf(func(s *Step) *Reinject { return s.Reinject }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		r := s.Reinject
		mustNotBeEmpty(where, "reinject.namespace", r.Namespace, bad)
		if len(r.Labels) == 0 && len(r.Remove) == 0 {
			bad("%s: reinject changes no injection label", where)
		}
		for _, k := range r.Remove {
			if _, both := r.Labels[k]; both {
				bad("%s: reinject both sets and removes label %s", where, k)
			}
		}
		for _, w := range r.Workloads {
			switch w.Kind {
			case "Deployment", "StatefulSet", "DaemonSet":
			default:
				bad("%s: reinject restart of %s: only Deployments, StatefulSets and DaemonSets roll out", where, w)
			}
		}
		if r.BatchSize < 0 {
			bad("%s: reinject.batchSize is negative", where)
		}
	},
	commands: func(s *Step) []string {
		r := s.Reinject
		var args []string
		for _, k := range sortedKeys(r.Labels) {
			args = append(args, k+"="+r.Labels[k])
		}
		for _, k := range r.Remove {
			args = append(args, k+"-")
		}
		out := []string{fmt.Sprintf("kubectl label --overwrite namespace %s %s", r.Namespace, strings.Join(args, " "))}
		return append(out, restartCommands(r.Workloads, r.BatchSize)...)
	},
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
