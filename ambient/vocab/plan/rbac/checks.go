package rbac

import (
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkPermissions is what each check type needs when the executor runs it; a test fails when a
// check type has no entry. The comments name the executor's file that does the requests. Checks
// answered from a fresh snapshot (FindingsClear, NoReferences, GatewayOwner, WorkloadsOnRevision,
// TrustedAccounts) need only what Options.Snapshot reads, which the executor adds.
var checkPermissions = map[plan.CheckType]func(c plan.Check, n need){
	// check_deployment_ready.go: one GET.
	plan.CheckDeploymentReady: func(c plan.Check, n need) { n.add("get", "apps", "deployments", c.Object.Namespace, c.Object.Name) },
	// check_daemonset_rolled_out.go: one GET; under OnDelete with a version, one LIST of the pods.
	plan.CheckDaemonSetRolledOut: checkArgs(func(c plan.Check, a plan.DaemonSetRolledOutArgs, n need) {
		n.add("get", "apps", "daemonsets", c.Object.Namespace, c.Object.Name)
		if a.Version != "" {
			n.add("list", "", "pods", c.Object.Namespace, "")
		}
	}),
	// check_node_agent_ready.go: one node: a LIST of the namespace's pods on it, and a GET of the node
	// when none of the DaemonSet's is there (is it gone?); all nodes: a GET of the DaemonSet, a LIST of
	// the nodes and one of its pods.
	plan.CheckNodeAgentReady: checkArgs(func(c plan.Check, a plan.NodeAgentReadyArgs, n need) {
		n.add("list", "", "pods", c.Object.Namespace, "")
		if !a.All {
			n.add("get", "", "nodes", "", a.Node)
			return
		}
		n.add("get", "apps", "daemonsets", c.Object.Namespace, c.Object.Name)
		n.add("list", "", "nodes", "", "")
	}),
	// check_pods_redirected.go: one LIST of the namespaces, one paged LIST of every pod.
	plan.CheckPodsRedirected: func(_ plan.Check, n need) {
		n.add("list", "", "namespaces", "", "")
		n.add("list", "", "pods", "", "")
	},
	// check_no_sandbox_failures.go: one LIST of the core Events with reason FailedCreatePodSandBox.
	plan.CheckNoSandboxFailures: func(_ plan.Check, n need) { n.add("list", "", "events", "", "") },
	// check_tag_points_to.go: one GET of the tag's MutatingWebhookConfiguration.
	plan.CheckTagPointsTo: checkArgs(func(c plan.Check, a plan.TagPointsToArgs, n need) {
		name := "istio-revision-tag-" + a.Tag
		if c.Object.Kind == "MutatingWebhookConfiguration" && c.Object.Name != "" {
			name = c.Object.Name
		}
		n.add("get", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", name)
	}),
	plan.CheckNoReferences:        func(plan.Check, need) {},
	plan.CheckGatewayOwner:        func(plan.Check, need) {},
	plan.CheckFindingsClear:       func(plan.Check, need) {},
	plan.CheckTrustedAccounts:     func(plan.Check, need) {},
	plan.CheckWorkloadsOnRevision: func(plan.Check, need) {},
	// check_helm_release_version.go: the Helm read of the release, a LIST of its records.
	plan.CheckHelmReleaseVersion: func(c plan.Check, n need) { n.add("list", "", "secrets", c.Object.Namespace, "", srcHelmStorage) },
	// check_node_drained.go: one LIST of the node's pods in every namespace (and of the namespaces for
	// ambient-only drains), a GET of the node when pods are left (is it gone?).
	plan.CheckNodeDrained: checkArgs(func(c plan.Check, a plan.NodeDrainedArgs, n need) {
		n.add("list", "", "pods", "", "")
		if a.AmbientOnly {
			n.add("list", "", "namespaces", "", "")
		}
		n.add("get", "", "nodes", "", c.Node())
	}),
	// check_node_schedulable.go: one GET of the node.
	plan.CheckNodeSchedulable: func(c plan.Check, n need) { n.add("get", "", "nodes", "", c.Node()) },
	// check_default_revision.go: one GET of istiod-default-validator.
	plan.CheckDefaultRevision: func(_ plan.Check, n need) {
		n.add("get", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "istiod-default-validator")
	},
	// check_backup_readable.go reads the executor's backup store, which the executor adds.
	plan.CheckBackupReadable: func(plan.Check, need) {},
	// check_crds_established.go: one LIST of the CRDs.
	plan.CheckCRDsEstablished: func(_ plan.Check, n need) { n.add("list", "apiextensions.k8s.io", "customresourcedefinitions", "", "") },
	// check_revision_ready.go: one GET of istiod-<revision> (or the check's Deployment).
	plan.CheckRevisionExistsAndReady: checkArgs(func(c plan.Check, a plan.RevisionReadyArgs, n need) {
		ns, name := c.Object.Namespace, c.Object.Name
		if c.Object.Kind != "Deployment" || name == "" {
			name = "istiod-" + a.Revision
			if a.Revision == "default" {
				name = "istiod"
			}
		}
		if ns == "" {
			ns = "istio-system" // the executor's DefaultNamespace
		}
		n.add("get", "apps", "deployments", ns, name)
	}),
	// check_nodes_ready.go: one LIST of the nodes by labels.
	plan.CheckNodesReady: func(_ plan.Check, n need) { n.add("list", "", "nodes", "", "") },
	// check_node_agent_absent.go: one LIST of the namespace's pods on the node.
	plan.CheckNodeAgentAbsent: func(c plan.Check, n need) { n.add("list", "", "pods", c.Object.Namespace, "") },
	// check_workloads_ready.go: one GET per Deployment and StatefulSet listed.
	plan.CheckWorkloadsReady: checkArgs(func(_ plan.Check, a plan.WorkloadsReadyArgs, n need) {
		for _, w := range a.Workloads {
			parts := strings.SplitN(w, "/", 3)
			if len(parts) == 3 && (parts[0] == "Deployment" || parts[0] == "StatefulSet") {
				n.add("get", "apps", kindResource(parts[0]), parts[1], parts[2])
			}
		}
	}),
	// check_no_ambient_pods.go: one LIST of the nodes, one of the namespaces, one paged LIST of pods.
	plan.CheckNoAmbientPods: func(_ plan.Check, n need) {
		n.add("list", "", "nodes", "", "")
		n.add("list", "", "namespaces", "", "")
		n.add("list", "", "pods", "", "")
	},
	// check_gateway_programmed.go: one GET of the Gateway.
	plan.CheckGatewayProgrammed: func(c plan.Check, n need) {
		n.add("get", "gateway.networking.k8s.io", "gateways", c.Object.Namespace, c.Object.Name)
	},
	// check_waypoint_accepted.go: one GET of the policy, in its apiVersion or the kind's default.
	plan.CheckWaypointAccepted: checkArgs(func(c plan.Check, a plan.WaypointAcceptedArgs, n need) {
		api := a.APIVersion
		if api == "" {
			api = waypointPolicyAPIVersions[c.Object.Kind]
		}
		g, res := Resource(api, c.Object.Kind)
		n.add("get", g, res, c.Object.Namespace, c.Object.Name)
	}),
	// check_pods_captured.go: one GET of the namespace, one LIST of its pods.
	plan.CheckPodsCaptured: func(c plan.Check, n need) {
		n.add("get", "", "namespaces", "", c.Object.Name)
		n.add("list", "", "pods", c.Object.Name, "")
	},
	// check_no_sidecars.go and check_sidecars_injected.go: one LIST of the namespace's pods.
	plan.CheckNoSidecars:       func(c plan.Check, n need) { n.add("list", "", "pods", c.Object.Name, "") },
	plan.CheckSidecarsInjected: func(c plan.Check, n need) { n.add("list", "", "pods", c.Object.Name, "") },
	// check_backup_writable.go looks at a local file only.
	plan.CheckBackupWritable: func(plan.Check, need) {},
}

// waypointPolicyAPIVersions are the versions WaypointAccepted reads a policy in when the check names
// none (execute: check_waypoint_accepted.go).
var waypointPolicyAPIVersions = map[string]string{
	"AuthorizationPolicy":   "security.istio.io/v1",
	"RequestAuthentication": "security.istio.io/v1",
	"PeerAuthentication":    "security.istio.io/v1",
	"Telemetry":             "telemetry.istio.io/v1",
	"WasmPlugin":            "extensions.istio.io/v1alpha1",
}

// checkArgs adapts a permission function over a check's typed arguments; a check whose params do
// not decode needs nothing (the plan does not validate, and the executor refuses it).
func checkArgs[T plan.Args](f func(c plan.Check, a T, n need)) func(plan.Check, need) {
	return func(c plan.Check, n need) {
		a, err := plan.ArgsOf[T](c)
		if err != nil {
			return
		}
		f(c, a, n)
	}
}
