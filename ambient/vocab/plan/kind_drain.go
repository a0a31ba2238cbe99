package plan

import "fmt"

// NodeDrain evicts pods from a node through the Eviction API, respecting PodDisruptionBudgets.
type NodeDrain struct {
	Node string `json:"node"`
	// TimeoutSeconds bounds the drain; 0 means the executor's default.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
	// IgnoreDaemonSets leaves DaemonSet pods (always true for ambient node drains).
	IgnoreDaemonSets bool `json:"ignoreDaemonSets"`
	// DeleteEmptyDirData allows evicting pods with emptyDir volumes.
	DeleteEmptyDirData bool `json:"deleteEmptyDirData"`
	// MayHold lists what may hold the drain up, by name, for the reviewer, each as "<object>: <what
	// it does>" ("StatefulSet data/db: restarts elsewhere with the same identity"); the runbook
	// groups them by what they do. The executor does not read it.
	MayHold []string `json:"mayHold,omitempty"`
	// AmbientOnly evicts only the pods ambient captures when the drain runs (ambient namespace or pod
	// label, not opted out, no sidecar, not on the host network); every other pod stays. Node-by-node
	// ztunnel replacement drains so the nodes that ran no ambient pod when the plan was made: pods
	// evicted from earlier nodes may have been rescheduled onto them since.
	AmbientOnly bool `json:"ambientOnly,omitempty"`
	// KeepJobs leaves the pods of running Jobs alone: the drain waits until they finish (within its
	// timeout) instead of stopping their work.
	KeepJobs bool `json:"keepJobs,omitempty"`
	// Expect is what the drain is expected to evict, as the snapshot the plan was made from showed
	// the node, for the runbook's time estimate (EstimateTime). The executor does not read it.
	Expect *DrainExpect `json:"expect,omitempty"`
}

// DrainExpect is what a drain is expected to evict, in the few numbers the time model needs (a
// plan of a thousand nodes carries one per drain): the pods, the longest grace period of those no
// budget covers, and the pods each budget covers.
type DrainExpect struct {
	// Pods counts the pods it evicts.
	Pods int `json:"pods"`
	// GraceSeconds is the longest termination grace period of the pods no budget covers (0: the API
	// server's default, 30).
	GraceSeconds int64 `json:"graceSeconds,omitempty"`
	// Budgets are the pods budgets cover, by budget.
	Budgets []ExpectedBudget `json:"budgets,omitempty"`
}

// ExpectedBudget is the pods of a drain one PodDisruptionBudget covers.
type ExpectedBudget struct {
	// Budget is "namespace/name"; Allowed the disruptions it allowed.
	Budget  string `json:"budget"`
	Allowed int32  `json:"allowed,omitempty"`
	// Pods counts them; GraceSeconds is their longest grace period (0: the default, 30).
	Pods         int   `json:"pods"`
	GraceSeconds int64 `json:"graceSeconds,omitempty"`
	// Stateful is set when a StatefulSet owns them: it recreates a pod only once the old one is
	// gone, so each holds the budget for its grace period and its successor's start.
	Stateful bool `json:"stateful,omitempty"`
}

// drainTimeout is the drain's bound in seconds, the executor's default (10 minutes) when it sets none.
func drainTimeout(d *NodeDrain) int64 {
	if d.TimeoutSeconds > 0 {
		return d.TimeoutSeconds
	}
	return 600
}

// KindDrain is the kind of steps whose action is Step.Drain.
const KindDrain Kind = "Drain"

var drainKind = kindSpec{
	kind:    KindDrain,
	payload: payloadOf(func(s *Step) *NodeDrain { return s.Drain }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		mustNotBeEmpty(where, "drain.node", s.Drain.Node, bad)
		if s.Drain.TimeoutSeconds < 0 {
			bad("%s: drain.timeoutSeconds is negative", where)
		}
	},
	commands: func(s *Step) []string {
		d := s.Drain
		if d.AmbientOnly {
			// kubectl drain evicts every pod; kubectl has no command to evict some, so the Eviction
			// API is called as kubectl drain calls it (POST pods/<name>/eviction), for the pods
			// istio-cni marked captured, and each eviction is waited for.
			return []string{"# evict only the pods ambient captures on " + d.Node + " (istio-cni marks them ambient.istio.io/redirection=enabled; usually there are none), through the Eviction API as kubectl drain does",
				fmt.Sprintf(`kubectl get pods -A --field-selector spec.nodeName=%s -o jsonpath='%s' | while read -r ns pod; do `+
					`printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"namespace":"%%s","name":"%%s"}}' "$ns" "$pod" | kubectl create --raw "/api/v1/namespaces/$ns/pods/$pod/eviction" -f - >/dev/null && `+
					`kubectl wait --for=delete "pod/$pod" -n "$ns" --timeout=%ds || exit 1; done`,
					d.Node, rangeItems(`?(@.metadata.annotations.ambient\.istio\.io/redirection=="enabled")`, "{.metadata.namespace} {.metadata.name}"), drainTimeout(d))}
		}
		var out []string
		if d.KeepJobs {
			// Within the drain's timeout, as the executor waits for them.
			out = append(out, "# wait until the pods of running Jobs on "+d.Node+" have finished (the drain does not stop their work), then drain",
				bound{drainTimeout(d)}.until(fmt.Sprintf("[ -z \"$(kubectl get pods -A -l job-name --field-selector spec.nodeName=%s,status.phase!=Succeeded,status.phase!=Failed -o name)\" ]", d.Node),
					10, 600, "the pods of running Jobs on "+d.Node+" have finished"))
		}
		c := "kubectl drain " + d.Node
		if d.IgnoreDaemonSets {
			c += " --ignore-daemonsets"
		}
		if d.DeleteEmptyDirData {
			c += " --delete-emptydir-data"
		}
		if d.TimeoutSeconds > 0 {
			c += fmt.Sprintf(" --timeout=%ds", d.TimeoutSeconds)
		}
		return append(out, c)
	},
	node:        func(s *Step) string { return s.Drain.Node },
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
