package plan

// Finding codes of node drains, whatever the strategy that drains.
const (
	// CodeDrainLosesEmptyDirData details: pods (how many). Object is the DaemonSet whose replacement
	// drains the nodes; the message names every pod whose emptyDir data is lost, and the plan asks
	// for approval before the first drain that loses any (unless told to evict them).
	CodeDrainLosesEmptyDirData Code = "DRAIN_LOSES_EMPTYDIR_DATA"
	// CodeWaveKeepsRoomForEvictedPods details: pools (comma-separated, "" for nodes without a pool label),
	// schedulable (their schedulable nodes), workloads (how many needed the room), waves (the
	// plan's waves of the DaemonSet), batch. Object is the DaemonSet whose replacement drains the
	// nodes, Related the workloads. Some waves hold fewer nodes than the batch size, so that no
	// wave cordons every node the pods it evicts can move to.
	CodeWaveKeepsRoomForEvictedPods Code = "WAVE_KEEPS_ROOM_FOR_EVICTED_PODS"
	// CodeDrainTimeoutBelowGracePeriod details: grace (how long the workload's pods may take to
	// terminate: mesh.Workload's TerminationSeconds), timeout (the plan's drain timeout), needed (the timeout the plan would need),
	// nodes (how many of the plan's drains evict its pods). Object is the workload.
	CodeDrainTimeoutBelowGracePeriod Code = "DRAIN_TIMEOUT_BELOW_GRACE_PERIOD"
	// CodeJobMayOutliveDrainTimeout details: deadline (the longest activeDeadlineSeconds bounding
	// its pods, "" when none does), timeout (the plan's drain timeout), needed (the timeout the plan
	// would need, when bounded: the deadline, the pods' termination and a minute), nodes (how many of the plan's drains wait for its pods). Object is
	// the Job or CronJob. Waivable when its bound exceeds the timeout; info when nothing bounds it.
	CodeJobMayOutliveDrainTimeout Code = "JOB_MAY_OUTLIVE_DRAIN_TIMEOUT"
	// CodeEvictedPodFitsNowhere details: pod, from (the node whose drain evicts it), requests, why
	// (the nodes refused, by reason). Object is the pod's workload. Waivable: the pod stays Pending
	// until the wave ends, its workload short of a replica, and a budget waiting for it holds the
	// wave's other drains.
	CodeEvictedPodFitsNowhere Code = "EVICTED_POD_FITS_NOWHERE"
	// CodePlacementNotAssessed: the snapshot lacks what placing evicted pods needs (steps.
	// PlacementAssessed), so waves are cut by counting nodes. Info.
	CodePlacementNotAssessed Code = "PLACEMENT_NOT_ASSESSED"
)

func init() {
	codeHelp[CodeDrainLosesEmptyDirData] = "a node drain evicts pods with emptyDir volumes, whose data is deleted with them"
	codeHelp[CodeDrainTimeoutBelowGracePeriod] = "a workload's pods may take longer to terminate than the plan's drain timeout, so its drains time out with pods still terminating"
	codeHelp[CodeJobMayOutliveDrainTimeout] = "a drain waits for a Job's pods to finish, and they may run longer than its timeout"
	codeHelp[CodeEvictedPodFitsNowhere] = "a pod a drain evicts fits on no node left schedulable (requests, selectors, affinity, taints, volumes, spread), so it stays Pending until room is made"
	codeHelp[CodePlacementNotAssessed] = "the snapshot does not hold node capacity and pod requests, so waves are not planned against capacity"
	codeHelp[CodeWaveKeepsRoomForEvictedPods] = "a wave holds fewer nodes than the batch size, so that the pods it evicts keep a schedulable node of their pool to move to"
}
