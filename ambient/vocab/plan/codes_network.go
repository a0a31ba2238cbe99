package plan

// Finding codes of what ambient changes about the network a mesh runs in (ambient/knowledge/compat/network.go,
// cniconfig.go, waypointbind.go; migrate/ambientchanges.go): NetworkPolicies, the primary CNI,
// istio-cni's configuration, waypoint binding and routes, and what sidecars applied that ambient
// ignores.
const (
	// CodeNetworkPolicyBlocksHBONE details: namespace, ports (the TCP ports the policies admit).
	// Object is a NetworkPolicy, Related the workloads it isolates.
	CodeNetworkPolicyBlocksHBONE Code = "NETWORKPOLICY_BLOCKS_HBONE"
	// CodeNetworkPolicyBlocksAmbientProbes details: namespace, policies (comma-separated). Object is the
	// workload, Related the NetworkPolicies that isolate it.
	CodeNetworkPolicyBlocksAmbientProbes Code = "NETWORKPOLICY_BLOCKS_AMBIENT_PROBES"
	// CodePrimaryCNIIncompatible details: cni, setting, value, want. Object is the primary CNI's
	// ConfigMap.
	CodePrimaryCNIIncompatible Code = "PRIMARY_CNI_INCOMPATIBLE"
	// CodeCNIExcludesAmbientNamespace details: namespace, cniVersion, from (1.30.0). Object is the
	// Namespace, Related the istio-cni DaemonSet.
	CodeCNIExcludesAmbientNamespace Code = "CNI_EXCLUDES_AMBIENT_NAMESPACE"
	// CodeCNIEnvReferencesMissingKey details: env, configMap, key. Object is the istio-cni DaemonSet.
	CodeCNIEnvReferencesMissingKey Code = "CNI_ENV_REFERENCES_MISSING_KEY"
	// CodeCNIBinDirWrongForPlatform details: path, want, platform, nodes. Object is the istio-cni DaemonSet.
	CodeCNIBinDirWrongForPlatform Code = "CNI_BIN_DIR_WRONG_FOR_PLATFORM"
	// CodeWaypointDoesNotAllowNamespace details: waypoint, allowedFrom. Object is the Namespace or Service that
	// uses the waypoint, Related the waypoint Gateway.
	CodeWaypointDoesNotAllowNamespace Code = "WAYPOINT_DOES_NOT_ALLOW_NAMESPACE"
	// CodeWaypointNotProgrammed details: reason, message. Object is the waypoint Gateway.
	CodeWaypointNotProgrammed Code = "WAYPOINT_NOT_PROGRAMMED"
	// CodeRouteParentHasNoWaypoint details: service. Object is the route, Related the Service.
	CodeRouteParentHasNoWaypoint Code = "ROUTE_PARENT_HAS_NO_WAYPOINT"
)

func init() {
	for c, help := range map[Code]string{
		CodeNetworkPolicyBlocksHBONE:         "a NetworkPolicy admits the application's ports but not 15008, where ambient traffic arrives (HBONE)",
		CodeNetworkPolicyBlocksAmbientProbes: "a NetworkPolicy isolates pods from 169.254.7.127, the address istio-cni gives kubelet probes in ambient",
		CodePrimaryCNIIncompatible:           "the primary CNI is configured in a way that breaks istio-cni's plugin or ambient redirection",
		CodeCNIExcludesAmbientNamespace:      "istio-cni's excludeNamespaces lists an ambient namespace, whose pods leave the mesh from istio-cni 1.30",
		CodeCNIEnvReferencesMissingKey:       "the istio-cni DaemonSet reads a key istio-cni-config does not have, so its pods cannot start",
		CodeCNIBinDirWrongForPlatform:        "istio-cni writes its plugin to a CNI bin directory the platform's nodes do not use",
		CodeWaypointDoesNotAllowNamespace:    "a namespace or Service uses a waypoint of another namespace whose listener does not admit it, so its traffic bypasses the waypoint",
		CodeWaypointNotProgrammed:            "istiod reports a waypoint not Programmed: it does not serve traffic whatever its pods say",
		CodeRouteParentHasNoWaypoint:         "a route attached to a Service in ambient has no waypoint to apply it, so it is ignored",
	} {
		codeHelp[c] = help
	}
}
