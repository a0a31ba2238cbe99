package plan

// Finding codes of version-bound hazards whose ranges come from the advisories data
// (ambient/knowledge/advisories); details name the advisory. The first two are the window between an istiod
// upgrade and ztunnel's (ambient/knowledge/compat/skew.go): a newer istiod sends what an older ztunnel does
// not understand.
const (
	// CodeServiceEntryNackedByOldZtunnel details: advisory, istiod, ztunnel, ztunnelFixedIn. Object
	// is the ServiceEntry, Related the ztunnel DaemonSet.
	CodeServiceEntryNackedByOldZtunnel Code = "SERVICEENTRY_NACKED_BY_OLD_ZTUNNEL"
	// CodeDryRunPolicyEnforcedByOldZtunnel details: advisory, istiod, ztunnel, ztunnelFixedIn.
	// Object is the AuthorizationPolicy, Related the ztunnel DaemonSet and the istiod Deployment.
	CodeDryRunPolicyEnforcedByOldZtunnel Code = "DRY_RUN_POLICY_ENFORCED_BY_OLD_ZTUNNEL"
	// CodeGatewayRevisionChangeDropsConfig details: advisory, revision, istiod, fixedIn (when the
	// line has a fix). Object is the Gateway, Related the old revision's istiod Deployment
	// (ambient/knowledge/compat/gatewayrev.go).
	CodeGatewayRevisionChangeDropsConfig Code = "GATEWAY_REVISION_CHANGE_DROPS_CONFIG"
)

func init() {
	for c, help := range map[Code]string{
		CodeServiceEntryNackedByOldZtunnel:   "istiod sends a resolution NONE ServiceEntry as a passthrough service, which a ztunnel older than 1.28 rejects",
		CodeDryRunPolicyEnforcedByOldZtunnel: "istiod sends a dry-run AuthorizationPolicy to a ztunnel older than 1.29, which enforces it for real",
		CodeGatewayRevisionChangeDropsConfig: "a gateway leaves a revision whose istiod drops its config at once, failing its requests for about 30 s",
	} {
		codeHelp[c] = help
	}
}
