package plan

// Finding codes of node drains, whatever the strategy that drains.
const (
	// CodeDrainLosesEmptyDir details: pods (how many). Object is the DaemonSet whose replacement
	// drains the nodes; the message names every pod whose emptyDir data is lost, and the plan asks
	// for approval before the first drain that loses any (unless told to evict them).
	CodeDrainLosesEmptyDir Code = "DRAIN_LOSES_EMPTYDIR_DATA"
)

func init() {
	codeHelp[CodeDrainLosesEmptyDir] = "a node drain evicts pods with emptyDir volumes, whose data is deleted with them"
}
