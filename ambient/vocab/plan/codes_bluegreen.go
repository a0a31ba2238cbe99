package plan

// Finding codes of ztunnel placement and blue-green replacement.
const (
	CodeZtunnelTwoOnOneNode             Code = "ZTUNNEL_TWO_ON_ONE_NODE"
	CodeZtunnelPlacementOverlap         Code = "ZTUNNEL_PLACEMENT_OVERLAP"
	CodeBlueGreenPinRestartsBlue        Code = "BLUEGREEN_PIN_RESTARTS_BLUE"
	CodeBlueGreenNamespaceNotDiscovered Code = "BLUEGREEN_NAMESPACE_NOT_DISCOVERED"
	// CodeBlueGreenLongLivedConnections details: nodes (how many), longestGraceSeconds, longestOn (the node),
	// drainedLast (the node drained last, when it is one of them). Object is the blue DaemonSet,
	// Related are the nodes; one finding per plan, each node's pods are in the runbook's waves.
	CodeBlueGreenLongLivedConnections Code = "BLUEGREEN_LONG_LIVED_CONNECTIONS"
	// CodeBlueGreenLocalStorageLost details: pods (how many). The message names every pod of the plan
	// whose emptyDir data a drain loses.
	CodeBlueGreenLocalStorageLost  Code = "BLUEGREEN_LOCAL_STORAGE_LOST"
	CodeBlueGreenNodesToRemove     Code = "BLUEGREEN_NODES_TO_REMOVE"
	CodeBlueGreenNodePoolDriftHeld Code = "BLUEGREEN_NODEPOOL_DRIFT_HELD"
	CodeBlueGreenNodePoolNotGreen  Code = "BLUEGREEN_NODEPOOL_NOT_GREEN"
	// CodeBlueGreenDaemonSetOnBlue details: nodes (how many). Object is the DaemonSet, Related the
	// blue nodes its ambient pods run on; one finding per DaemonSet.
	CodeBlueGreenDaemonSetOnBlue Code = "BLUEGREEN_DAEMONSET_ON_BLUE"
	// CodeBlueGreenCapacityNeeded details: waves, nodes (blue nodes drained in all), byWave (comma-separated:
	// the blue nodes drained once each wave is done), greenNodesAdded (when the evicted pods were placed:
	// the new green nodes they need in all). Object is the blue DaemonSet.
	CodeBlueGreenCapacityNeeded Code = "BLUEGREEN_CAPACITY_NEEDED"
	// CodeBlueGreenPodPinnedToBlue details: pods (how many), pod (the first), node (its blue node),
	// why (what pins it: "node selector or affinity names its node", "volume data-db-0 is bound to
	// its node", "local volume data-db-0"). Object is the workload, Related the blue DaemonSet. No
	// green node can ever take the pod, so its drain leaves it Pending for good.
	CodeBlueGreenPodPinnedToBlue Code = "BLUEGREEN_POD_PINNED_TO_BLUE"
	// CodeBlueGreenPriorityClassQuota: Object is green's namespace.
	CodeBlueGreenPriorityClassQuota Code = "BLUEGREEN_PRIORITY_CLASS_QUOTA"
)

func init() {
	for c, help := range map[Code]string{
		// istio/istio@1.30.3: cni/pkg/nodeagent/ztunnelserver.go, "add pod goes to newest connection".
		CodeZtunnelTwoOnOneNode:             "two ztunnel pods run on one node; istio-cni hands new pods to the newest, so traffic is split between them",
		CodeZtunnelPlacementOverlap:         "two ztunnel DaemonSets can schedule pods onto the same node",
		CodeBlueGreenPinRestartsBlue:        "pinning the running ztunnel to its nodes changes its template, and its chart cannot hold the pods (no updateStrategy before 1.26): every node's ztunnel restarts once",
		CodeBlueGreenNamespaceNotDiscovered: "istiod's discoverySelectors would not select the new ztunnel's namespace",
		CodeBlueGreenLongLivedConnections:   "pods of StatefulSets and long-running Jobs on a node hold long-lived connections its drain will end",
		CodeBlueGreenLocalStorageLost:       "pods with emptyDir volumes lose their data when their node is drained",
		CodeBlueGreenNodesToRemove:          "the nodes of the old ztunnel can be removed once it is gone",
		CodeBlueGreenNodePoolDriftHeld:      "the plan labels the old nodes' own NodePool, so Karpenter would replace them as drifted; the plan holds drift disruptions during the move",
		CodeBlueGreenNodePoolNotGreen:       "a Karpenter NodePool keeps launching nodes that run the old ztunnel while workloads move",
		CodeBlueGreenDaemonSetOnBlue:        "an ambient DaemonSet's pods stay on the old ztunnel's nodes through their drains; the nodes must go before the old ztunnel does",
		CodeBlueGreenCapacityNeeded:         "how many old nodes' worth of pods the new ztunnel's nodes must take by each wave",
		CodeBlueGreenPodPinnedToBlue:        "a pod that must move off the old ztunnel's nodes can run on no new node: its node selector, affinity or volume holds it to its old node",
		CodeBlueGreenPriorityClassQuota:     "the new ztunnel's system-node-critical pods run outside kube-system, which some platforms admit only under a ResourceQuota",
	} {
		codeHelp[c] = help
	}
}
