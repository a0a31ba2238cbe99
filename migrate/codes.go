package migrate

import "github.com/ambientkit/ambientkit/ambient/vocab/plan"

// Finding codes of a namespace's move to ambient (MigrateNamespace and its readiness report), which
// only this package raises. They are stable: tests, callers and waivers use them; messages may
// improve. init registers them in plan's catalog, so that plan.AllCodes and --list-codes list them.
const (
	CodeAuthzCallerRulesSeeWaypoint plan.Code = "AUTHZ_CALLER_RULES_SEE_WAYPOINT"
	CodeAuthzDryRunIgnored          plan.Code = "AUTHZ_DRY_RUN_IGNORED"
	CodeAuthzPolicyAllowsMore       plan.Code = "AUTHZ_POLICY_ALLOWS_MORE"
	CodeAuthzPolicyBecomesDenyAll   plan.Code = "AUTHZ_POLICY_BECOMES_DENY_ALL"
	CodeAuthzPolicyDeniesMore       plan.Code = "AUTHZ_POLICY_DENIES_MORE"
	CodeAuthzPolicyHasNoEffect      plan.Code = "AUTHZ_POLICY_HAS_NO_EFFECT"
	CodeAuthzPolicyLosesL7Rules     plan.Code = "AUTHZ_POLICY_LOSES_L7_RULES"
	// CodeCaptureExclusionIgnoredInAmbient details: annotations (comma-separated). Object is the workload.
	CodeCaptureExclusionIgnoredInAmbient plan.Code = "CAPTURE_EXCLUSION_IGNORED_IN_AMBIENT"
	CodeConfigAppliesOnlyToSidecars      plan.Code = "CONFIG_APPLIES_ONLY_TO_SIDECARS"
	CodeDestinationRuleNeedsWaypoint     plan.Code = "DESTINATION_RULE_NEEDS_WAYPOINT"
	// CodeIngressBypassesWaypoint details: waypoint. Object is the Service, Related the routes that
	// send ingress traffic to it and the policies that move to its waypoint.
	CodeIngressBypassesWaypoint          plan.Code = "INGRESS_BYPASSES_WAYPOINT"
	CodeIstiodAmbientDisabled            plan.Code = "ISTIOD_AMBIENT_DISABLED"
	CodeMigrationGatewayRevisionChanges  plan.Code = "MIGRATION_GATEWAY_REVISION_CHANGES"
	CodeMigrationNamespaceAlreadyAmbient plan.Code = "MIGRATION_NAMESPACE_ALREADY_AMBIENT"
	// Namespace migration.
	CodeMigrationNamespaceNotFound           plan.Code = "MIGRATION_NAMESPACE_NOT_FOUND"
	CodeMigrationNamespaceNotInMesh          plan.Code = "MIGRATION_NAMESPACE_NOT_IN_MESH"
	CodeMigrationNamespacePartlyAmbient      plan.Code = "MIGRATION_NAMESPACE_PARTLY_AMBIENT"
	CodeMigrationNamespaceRunsOnlyGateways   plan.Code = "MIGRATION_NAMESPACE_RUNS_ONLY_GATEWAYS"
	CodeMigrationNamespacesInjectedByDefault plan.Code = "MIGRATION_NAMESPACES_INJECTED_BY_DEFAULT"
	CodeMigrationPodLabelSelectsInjection    plan.Code = "MIGRATION_POD_LABEL_SELECTS_INJECTION"
	CodeMigrationWorkloadNotRestartable      plan.Code = "MIGRATION_WORKLOAD_NOT_RESTARTABLE"
	CodePeerAuthenticationDisable            plan.Code = "PEER_AUTHENTICATION_DISABLE"
	CodePolicyNotAcceptedByWaypoint          plan.Code = "POLICY_NOT_ACCEPTED_BY_WAYPOINT"
	CodePolicyNotEnforcedWithoutWaypoint     plan.Code = "POLICY_NOT_ENFORCED_WITHOUT_WAYPOINT"
	CodePolicySpecInvalid                    plan.Code = "POLICY_SPEC_INVALID"
	CodeRouteHasNoGatewayAPIEquivalent       plan.Code = "ROUTE_HAS_NO_GATEWAY_API_EQUIVALENT"
	CodeRouteHostNotResolved                 plan.Code = "ROUTE_HOST_NOT_RESOLVED"
	CodeRouteNeedsEgressWaypoint             plan.Code = "ROUTE_NEEDS_EGRESS_WAYPOINT"
	// CodeServiceEntryResolutionNoneUnsupported details: istiod (the oldest istiod version), fixedIn. Object is
	// the ServiceEntry.
	CodeServiceEntryResolutionNoneUnsupported plan.Code = "SERVICEENTRY_RESOLUTION_NONE_UNSUPPORTED"
	// CodeSidecarResourceNoEffect details: egressMode (outboundTrafficPolicy.mode when set). Object is
	// the Sidecar.
	CodeSidecarResourceNoEffect       plan.Code = "SIDECAR_RESOURCE_NO_EFFECT"
	CodeTelemetryCountsSpans          plan.Code = "TELEMETRY_COUNTS_SPANS"
	CodeTelemetryHTTPMetricsLost      plan.Code = "TELEMETRY_HTTP_METRICS_LOST"
	CodeTelemetryMayDependOnNamespace plan.Code = "TELEMETRY_MAY_DEPEND_ON_NAMESPACE"
	CodeTelemetryReporterChanges      plan.Code = "TELEMETRY_REPORTER_CHANGES"
	CodeTelemetryScrapesMergedMetrics plan.Code = "TELEMETRY_SCRAPES_MERGED_METRICS"
	CodeVirtualServiceNeedsHTTPRoute  plan.Code = "VIRTUAL_SERVICE_NEEDS_HTTPROUTE"
	CodeWaypointNeededButMissing      plan.Code = "WAYPOINT_NEEDED_BUT_MISSING"
	CodeWaypointNotReady              plan.Code = "WAYPOINT_NOT_READY"
	// CodeWorkloadCallsSidecarAgent details: calls (comma-separated endpoints). Object is the
	// workload.
	CodeWorkloadCallsSidecarAgent plan.Code = "WORKLOAD_CALLS_SIDECAR_AGENT"
)

func init() {
	plan.RegisterCodes(map[plan.Code]plan.CodeInfo{
		CodeAuthzCallerRulesSeeWaypoint:           {Help: "an L4 rule matches callers, but behind a waypoint ztunnel sees the waypoint's identity", Severities: []plan.Severity{plan.Waivable}},
		CodeAuthzDryRunIgnored:                    {Help: "ztunnel ignores a dry-run AuthorizationPolicy unless istiod enables ambient dry run", Severities: []plan.Severity{plan.Info}},
		CodeAuthzPolicyAllowsMore:                 {Help: "ztunnel leaves fields of an ALLOW rule out (trustDomains), which then allows more than written", Severities: []plan.Severity{plan.Waivable}},
		CodeAuthzPolicyBecomesDenyAll:             {Help: "an ALLOW AuthorizationPolicy has only L7 rules; ztunnel drops them all and denies every request", Severities: []plan.Severity{plan.Blocking, plan.Waivable}},
		CodeAuthzPolicyDeniesMore:                 {Help: "ztunnel strips the L7 fields of a DENY rule, which then denies more than written", Severities: []plan.Severity{plan.Waivable}},
		CodeAuthzPolicyHasNoEffect:                {Help: "a DENY AuthorizationPolicy with only L7 rules has no effect under ztunnel", Severities: []plan.Severity{plan.Waivable}},
		CodeAuthzPolicyLosesL7Rules:               {Help: "ztunnel drops the L7 rules of an AuthorizationPolicy (ALLOW: their requests are denied; DENY: they stop denying)", Severities: []plan.Severity{plan.Blocking, plan.Waivable}},
		CodeCaptureExclusionIgnoredInAmbient:      {Help: "a workload excludes traffic from its sidecar with traffic.sidecar.istio.io annotations, which ambient ignores", Severities: []plan.Severity{plan.Waivable}},
		CodeDestinationRuleNeedsWaypoint:          {Help: "ztunnel does not apply DestinationRule traffic policies; only a waypoint serving the Service does", Severities: []plan.Severity{plan.Waivable}},
		CodeIngressBypassesWaypoint:               {Help: "ingress gateways send to a Service's pods directly, skipping the waypoint its L7 policies move to", Severities: []plan.Severity{plan.Waivable}},
		CodeIstiodAmbientDisabled:                 {Help: "no istiod revision runs with PILOT_ENABLE_AMBIENT, so ambient pods get no configuration", Severities: []plan.Severity{plan.Blocking}},
		CodeMigrationGatewayRevisionChanges:       {Help: "a gateway or waypoint relies on the namespace's istio.io/rev, so removing it hands the gateway to another revision (or its pods to another injector, or none)", Severities: []plan.Severity{plan.Blocking, plan.Waivable}},
		CodeMigrationNamespaceAlreadyAmbient:      {Help: "the namespace is already labelled for ambient and runs no sidecars", Severities: []plan.Severity{plan.Blocking}},
		CodeMigrationNamespaceNotFound:            {Help: "the namespace to migrate is not in the snapshot", Severities: []plan.Severity{plan.Blocking}},
		CodeMigrationNamespaceNotInMesh:           {Help: "the namespace to migrate has no sidecars and no mesh labels, so there is nothing to migrate", Severities: []plan.Severity{plan.Blocking}},
		CodeMigrationNamespacePartlyAmbient:       {Help: "the namespace is labelled for ambient but pods still run sidecars: a migration is under way", Severities: []plan.Severity{plan.Info}},
		CodeMigrationNamespaceRunsOnlyGateways:    {Help: "the namespace runs gateways and no sidecar workload: a gateway's proxy is not a sidecar, there is nothing to migrate", Severities: []plan.Severity{plan.Blocking}},
		CodeMigrationNamespacesInjectedByDefault:  {Help: "an injector injects namespaces without injection labels (enableNamespacesByDefault), so the migration labels istio-injection=disabled instead of removing the labels", Severities: []plan.Severity{plan.Info}},
		CodeMigrationPodLabelSelectsInjection:     {Help: "a workload's pods select sidecar injection themselves (pod label istio.io/rev or sidecar.istio.io/inject=true), so they come back with sidecars after the namespace label is removed", Severities: []plan.Severity{plan.Waivable}},
		CodeMigrationWorkloadNotRestartable:       {Help: "pods with sidecars belong to no Deployment, StatefulSet or DaemonSet, so the migration cannot restart them; they keep their sidecars until they are recreated", Severities: []plan.Severity{plan.Waivable}},
		CodePeerAuthenticationDisable:             {Help: "a PeerAuthentication disables mTLS, which ambient does not support; switch it to PERMISSIVE first", Severities: []plan.Severity{plan.Blocking}},
		CodePolicyNotAcceptedByWaypoint:           {Help: "istiod has not accepted a targetRefs policy on a waypoint (status WaypointAccepted)", Severities: []plan.Severity{plan.Waivable}},
		CodePolicyNotEnforcedWithoutWaypoint:      {Help: "a CUSTOM or AUDIT AuthorizationPolicy or a RequestAuthentication is enforced by nothing without a waypoint", Severities: []plan.Severity{plan.Waivable}},
		CodePolicySpecInvalid:                     {Help: "a policy's spec does not decode into its Istio type, so what ambient does with it cannot be told", Severities: []plan.Severity{plan.Blocking}},
		CodeRouteHasNoGatewayAPIEquivalent:        {Help: "a VirtualService or DestinationRule uses fields HTTPRoute cannot express", Severities: []plan.Severity{plan.Waivable}},
		CodeRouteNeedsEgressWaypoint:              {Help: "a VirtualService or DestinationRule (TLS origination among them) acts on a ServiceEntry host with no waypoint; after the move nothing applies it", Severities: []plan.Severity{plan.Waivable}},
		CodeRouteHostNotResolved:                  {Help: "a VirtualService or DestinationRule names a host that matches no Service or ServiceEntry of the snapshot, so what the move does to it cannot be told", Severities: []plan.Severity{plan.Waivable}},
		CodeServiceEntryResolutionNoneUnsupported: {Help: "a ServiceEntry with resolution NONE gives ztunnel no endpoints before Istio 1.28, so ambient clients cannot reach it", Severities: []plan.Severity{plan.Blocking}},
		CodeConfigAppliesOnlyToSidecars:           {Help: "an EnvoyFilter, WasmPlugin, Telemetry or ProxyConfig attached by selector or namespace applies only to sidecars; after the move nothing applies it to the pods (a namespace-wide Telemetry: only where a waypoint serves them)", Severities: []plan.Severity{plan.Waivable, plan.Info}},
		CodeSidecarResourceNoEffect:               {Help: "a Sidecar resource has no effect in ambient: its egress and ingress settings are lost", Severities: []plan.Severity{plan.Waivable}},
		CodeTelemetryCountsSpans:                  {Help: "a query counts trace spans; ambient emits one span per waypoint instead of two per hop", Severities: []plan.Severity{plan.Info}},
		CodeTelemetryHTTPMetricsLost:              {Help: "a query reads Istio HTTP metrics of workloads that will have no waypoint; ztunnel reports TCP metrics only", Severities: []plan.Severity{plan.Waivable}},
		CodeTelemetryMayDependOnNamespace:         {Help: "a query reads Istio metrics without naming a namespace, so it may depend on the migrated one", Severities: []plan.Severity{plan.Info}},
		CodeTelemetryReporterChanges:              {Help: "a query filters HTTP metrics by a sidecar reporter; waypoints report reporter=\"waypoint\"", Severities: []plan.Severity{plan.Waivable}},
		CodeTelemetryScrapesMergedMetrics:         {Help: "a PodMonitor or ServiceMonitor scrapes the sidecar's merged metrics, which ambient pods do not serve", Severities: []plan.Severity{plan.Waivable}},
		CodeVirtualServiceNeedsHTTPRoute:          {Help: "a VirtualService is applied only by sidecars; ambient clients need an HTTPRoute on a waypoint", Severities: []plan.Severity{plan.Waivable}},
		CodeWaypointNeededButMissing:              {Help: "policies or routes need a waypoint for the namespace, but none is configured", Severities: []plan.Severity{plan.Waivable}},
		CodeWaypointNotReady:                      {Help: "the waypoint the namespace or a Service uses does not exist or has no ready pods", Severities: []plan.Severity{plan.Waivable}},
		CodeWorkloadCallsSidecarAgent:             {Help: "a workload calls the sidecar agent's endpoints (quitquitquit), which do not exist without a sidecar", Severities: []plan.Severity{plan.Waivable}},
	})
}
