package plan

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// CheckType names a verification the executor knows how to run.
type CheckType string

// Check types.
const (
	CheckDeploymentReady        CheckType = "DeploymentReady"
	CheckDaemonSetRolledOut     CheckType = "DaemonSetRolledOut"
	CheckNodeAgentReady         CheckType = "NodeAgentReady"
	CheckPodsRedirected         CheckType = "PodsRedirected"
	CheckNoSandboxFailures      CheckType = "NoSandboxFailures"
	CheckTagPointsTo            CheckType = "TagPointsTo"
	CheckNoReferences           CheckType = "NoReferences"
	CheckGatewayOwner           CheckType = "GatewayOwner"
	CheckHelmReleaseVersion     CheckType = "HelmReleaseVersion"
	CheckNodeDrained            CheckType = "NodeDrained"
	CheckNodeSchedulable        CheckType = "NodeSchedulable"
	CheckWorkloadsOnRevision    CheckType = "WorkloadsOnRevision"
	CheckTrustedAccounts        CheckType = "TrustedAccounts"
	CheckFindingsClear          CheckType = "FindingsClear"
	CheckDefaultRevision        CheckType = "DefaultRevision"
	CheckBackupReadable         CheckType = "BackupReadable"
	CheckCRDsEstablished        CheckType = "CRDsEstablished"
	CheckRevisionExistsAndReady CheckType = "RevisionReady"
	CheckNodesReady             CheckType = "NodesReady"
	CheckNodeAgentAbsent        CheckType = "NodeAgentAbsent"
	CheckWorkloadsReady         CheckType = "WorkloadsReady"
	CheckNoAmbientPods          CheckType = "NoAmbientPods"
	CheckGatewayProgrammed      CheckType = "GatewayProgrammed"
	CheckWaypointAccepted       CheckType = "WaypointAccepted"
	CheckPodsCaptured           CheckType = "PodsCaptured"
	CheckNoSidecars             CheckType = "NoSidecars"
	CheckSidecarsInjected       CheckType = "SidecarsInjected"
	CheckBackupWritable         CheckType = "BackupWritable"
)

// Check is one verifiable condition, as data. Its arguments are typed (one *Args struct per check
// type, below) and travel as Params; NewCheck writes them, ArgsOf reads them back strictly, and
// Validate (so plan.Decode) refuses params a check type does not take or cannot parse.
type Check struct {
	Type CheckType `json:"type"`
	// Object the check is about, when there is one.
	Object mesh.ObjectRef `json:"object,omitzero"`
	// Params carry the check's arguments, encoded from its Args struct.
	Params map[string]string `json:"params,omitempty"`
	// Description says in words what must hold.
	Description string `json:"description"`
}

// Args is the argument struct of one check type. Each field is a param: tagged `param:"name"`
// (",required" when it must be set), of type string, bool, int or []string (a comma list).
type Args interface {
	// CheckType is the check the arguments belong to.
	CheckType() CheckType
}

// NewCheck returns a check of the arguments' type about obj (zero when none).
func NewCheck(obj mesh.ObjectRef, args Args, description string) Check {
	return Check{Type: args.CheckType(), Object: obj, Params: encodeParams(args), Description: description}
}

// ArgsOf decodes a check's params into its argument struct, strictly: the check's type must be
// T's, every param must be a field of T and parse as its type, and required fields must be set.
func ArgsOf[T Args](c Check) (T, error) {
	var a T
	if c.Type != a.CheckType() {
		return a, fmt.Errorf("%w: check %s does not take %T", ErrInvalidPlan, c.Type, a)
	}
	if err := decodeParams(c.Params, &a); err != nil {
		return a, fmt.Errorf("%w: check %s: %v", ErrInvalidPlan, c.Type, err)
	}
	return a, nil
}

// checkSpec is what the plan package knows about one check type.
type checkSpec struct {
	// args returns a pointer to the zero argument struct.
	args func() any
	// object is the kind the check's object must have ("" when it takes none or any).
	object string
	// command is what a person would run to see the condition, waiting for it up to the bound where it
	// waits; nil when there is none.
	command func(c Check, b bound) string
	// executorOnly says why only the executor can check the condition, for check types with no
	// command: the runbook prints it beside the check so that no one looks for a command.
	executorOnly string
}

func spec[T Args](object string, command func(c Check, b bound) string) checkSpec {
	return checkSpec{args: func() any { var a T; return &a }, object: object, command: command}
}

// executorOnly is the spec of a check type no single command can show, with the reason.
func executorOnly[T Args](why string) checkSpec {
	return checkSpec{args: func() any { var a T; return &a }, executorOnly: why}
}

// checkSpecs is the table of check types. Each command, typed into a shell, exits 0 when the
// condition holds and non-zero (naming what does not hold) when it does not, on the cluster as the
// step leaves it; commands that wait (kubectl wait, rollout status, until loops) wait for it.
var checkSpecs = map[CheckType]checkSpec{
	CheckDeploymentReady: spec[DeploymentReadyArgs]("Deployment", func(c Check, b bound) string {
		return fmt.Sprintf("kubectl rollout status deployment/%s -n %s --timeout=%s", c.Object.Name, c.Object.Namespace, b.timeout(300))
	}),
	CheckDaemonSetRolledOut: spec[DaemonSetRolledOutArgs]("DaemonSet", func(c Check, b bound) string {
		// kubectl rollout status refuses a DaemonSet whose updateStrategy is OnDelete ("only
		// available for RollingUpdate"), which the node-by-node and blue-green upgrades set: wait on
		// the status the DaemonSet controller writes under either strategy.
		cmd := daemonSetWait(c.Object, "updatedNumberScheduled", b) + " && " + daemonSetWait(c.Object, "numberAvailable", b)
		if v := c.Params["version"]; v != "" {
			cmd += " && " + ownedPodsCheck(c.Object.Namespace, "", c.Object.Name, "{.spec.containers[0].image}",
				fmt.Sprintf("$1 !~ /:%s(-|$)/", regexpQuote(v)), "not at "+v+": ")
		}
		return cmd
	}),
	CheckNodeAgentReady: spec[NodeAgentReadyArgs]("DaemonSet", func(c Check, b bound) string {
		a, _ := ArgsOf[NodeAgentReadyArgs](c)
		if a.Node != "" {
			want := "^true"
			if a.Version != "" {
				want += "[|].*:" + regexpQuote(a.Version) + "(-|$)"
			}
			// grep without -q reads all its input: under pipefail a grep that quits early can fail
			// the pipeline with kubectl's SIGPIPE.
			return b.until(fmt.Sprintf("%s | grep -E '%s' >/dev/null", ownedPods(c.Object.Namespace, a.Node, c.Object.Name,
				"{.status.containerStatuses[0].ready}|{.spec.containers[0].image}"), want), 2, 300, c.Description)
		}
		cmd := daemonSetWait(c.Object, "numberReady", b)
		if a.Version != "" {
			cmd += " && " + ownedPodsCheck(c.Object.Namespace, "", c.Object.Name, "{.spec.nodeName}|{.spec.containers[0].image}",
				fmt.Sprintf("$2 !~ /:%s(-|$)/", regexpQuote(a.Version)), "not at "+a.Version+" on node ")
		}
		return cmd
	}),
	CheckPodsRedirected: spec[PodsRedirectedArgs]("", func(_ Check, b bound) string {
		return "for ns in $(kubectl get namespaces -l istio.io/dataplane-mode=ambient -o jsonpath='{.items[*].metadata.name}'); do " +
			"kubectl get pods -n \"$ns\" -l 'istio.io/dataplane-mode!=none' --field-selector status.phase=Running " +
			`-o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}|{.metadata.annotations.ambient\.istio\.io/redirection}|{.metadata.annotations.sidecar\.istio\.io/status}{"\n"}{end}'; ` +
			"done | " + failOn(`$2 != "enabled" && $3 == ""`, "not redirected: ", "$1")
	}),
	CheckNoSandboxFailures: spec[NoSandboxFailuresArgs]("", func(_ Check, b bound) string {
		return `kubectl get pods -A --field-selector status.phase=Pending -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}|{.status.containerStatuses[*].state.waiting.reason}{"\n"}{end}' | ` +
			failOn("/ContainerCreating/", "still creating its sandbox: ", "$1")
	}),
	CheckTagPointsTo: spec[TagPointsToArgs]("", func(c Check, b bound) string {
		name := c.Object.Name
		if name == "" {
			name = "istio-revision-tag-" + c.Params["tag"]
		}
		return fmt.Sprintf("kubectl wait mutatingwebhookconfiguration/%s --for=jsonpath='{.metadata.labels.istio\\.io/rev}'=%s --timeout=%s", name, c.Params["revision"], b.timeout(60))
	}),
	CheckNoReferences: executorOnly[NoReferencesArgs]("what refers to a revision is worked out from a whole observation of the cluster, as the planner does"),
	CheckGatewayOwner: executorOnly[GatewayOwnerArgs]("a gateway's owner follows its istio.io/rev label through the revision tags and the default revision"),
	CheckHelmReleaseVersion: spec[HelmReleaseVersionArgs]("HelmRelease", func(c Check, b bound) string {
		cond := `s != "deployed"`
		if v := c.Params["version"]; v != "" {
			cond += fmt.Sprintf(` || v != "%s"`, v)
		}
		return fmt.Sprintf(`helm get metadata %s -n %s | awk '$1 == "STATUS:" {s=$2} $1 == "VERSION:" {v=$2} END {if (%s) {print "release %s/%s: chart " v ", " s; exit 1}}'`,
			c.Object.Name, c.Object.Namespace, cond, c.Object.Namespace, c.Object.Name)
	}),
	CheckNodeDrained: spec[NodeDrainedArgs]("", func(c Check, b bound) string {
		a, _ := ArgsOf[NodeDrainedArgs](c)
		node := c.Node()
		if a.AmbientOnly {
			return fmt.Sprintf(`kubectl get pods -A --field-selector spec.nodeName=%s -o jsonpath='%s' | %s`, node,
				rangeItems(`?(@.metadata.annotations.ambient\.istio\.io/redirection=="enabled")`, "{.metadata.namespace}/{.metadata.name}"), failOn("", "ambient pod still on "+node+": ", "$0"))
		}
		// DaemonSet pods stay (kubectl drain --ignore-daemonsets); mirror pods name their Node.
		return fmt.Sprintf(`kubectl get pods -A --field-selector spec.nodeName=%s,status.phase!=Succeeded,status.phase!=Failed -o jsonpath='%s' | %s`, node,
			rangeItems("*", "{.metadata.namespace}/{.metadata.name}|{.metadata.ownerReferences[0].kind}"), failOn(`$2 != "DaemonSet" && $2 != "Node"`, "still on "+node+": ", "$1"))
	}),
	CheckNodeSchedulable: spec[NodeSchedulableArgs]("", func(c Check, b bound) string {
		return fmt.Sprintf("kubectl get node %s -o jsonpath='{.spec.unschedulable}' | %s", c.Node(), failOn(`$0 == "true"`, "", `"node `+c.Node()+` is cordoned"`))
	}),
	CheckWorkloadsOnRevision: executorOnly[WorkloadsOnRevisionArgs]("it reads the injecting revision from each restarted pod's sidecar.istio.io/status annotation (JSON)"),
	CheckTrustedAccounts:     executorOnly[TrustedAccountsArgs]("istiod's trusted ztunnel accounts may come from a ConfigMap or Secret through its environment"),
	CheckFindingsClear:       executorOnly[FindingsClearArgs]("it runs the planner's compatibility checks again on a fresh observation"),
	CheckDefaultRevision: spec[DefaultRevisionArgs]("", func(c Check, b bound) string {
		return fmt.Sprintf("kubectl wait validatingwebhookconfiguration/istiod-default-validator --for=jsonpath='{.metadata.labels.istio\\.io/rev}'=%s --timeout=%s", c.Params["revision"], b.timeout(60))
	}),
	CheckBackupReadable: executorOnly[BackupReadableArgs]("it reads its backup back from its store and checks the digest it recorded"),
	CheckCRDsEstablished: spec[CRDsEstablishedArgs]("", func(c Check, b bound) string {
		group := c.Params["group"]
		if group == "" {
			group = "istio.io"
		}
		return fmt.Sprintf("kubectl get crd -o name | grep -E '[./]%s$' | xargs kubectl wait --for=condition=Established --timeout=%s", regexpQuote(group), b.timeout(60))
	}),
	CheckRevisionExistsAndReady: spec[RevisionReadyArgs]("", func(c Check, b bound) string {
		// As the executor finds the Deployment (execute/check_revision_ready.go).
		ns, name := c.Object.Namespace, c.Object.Name
		if c.Object.Kind != "Deployment" || name == "" {
			rev := c.Params["revision"]
			if rev == "" {
				return ""
			}
			if name = "istiod-" + rev; rev == "default" {
				name = "istiod"
			}
		}
		if ns == "" {
			ns = "istio-system"
		}
		return fmt.Sprintf("kubectl rollout status deployment/%s -n %s --timeout=%s", name, ns, b.timeout(300))
	}),
	CheckNodesReady: spec[NodesReadyArgs]("", func(c Check, b bound) string {
		a, _ := ArgsOf[NodesReadyArgs](c)
		return b.until(fmt.Sprintf(`[ "$(kubectl get nodes -l '%s' -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True)" -ge %d ]`,
			a.Selector, max(a.Min, 1)), 5, 900, c.Description)
	}),
	CheckNodeAgentAbsent: spec[NodeAgentAbsentArgs]("DaemonSet", func(c Check, b bound) string {
		return b.until(fmt.Sprintf(`[ -z "$(%s)" ]`, ownedPods(c.Object.Namespace, c.Params["node"], c.Object.Name, "{.metadata.name}")), 2, 300, c.Description)
	}),
	CheckWorkloadsReady: spec[WorkloadsReadyArgs]("", func(c Check, b bound) string {
		a, _ := ArgsOf[WorkloadsReadyArgs](c)
		var cmds []string
		for _, w := range a.Workloads {
			parts := strings.SplitN(w, "/", 3)
			if len(parts) != 3 {
				continue
			}
			cmds = append(cmds, fmt.Sprintf("kubectl rollout status %s/%s -n %s --timeout=%s", strings.ToLower(parts[0]), parts[2], parts[1], b.timeout(300)))
		}
		return strings.Join(cmds, " && ")
	}),
	CheckNoAmbientPods: spec[NoAmbientPodsArgs]("", func(c Check, b bound) string {
		return fmt.Sprintf(`for n in $(kubectl get nodes -l '%s' -o jsonpath='{.items[*].metadata.name}'); do kubectl get pods -A --field-selector spec.nodeName=$n -o jsonpath='%s'; done | %s`,
			c.Params["selector"], rangeItems(`?(@.metadata.annotations.ambient\.istio\.io/redirection=="enabled")`, "{.metadata.namespace}/{.metadata.name} on {.spec.nodeName}"),
			failOn("", "ambient pod on a node labelled "+c.Params["selector"]+": ", "$0"))
	}),
	CheckGatewayProgrammed: spec[GatewayProgrammedArgs]("Gateway", func(c Check, b bound) string {
		return fmt.Sprintf("kubectl wait --for=condition=Programmed gateway/%s -n %s --timeout=%s", c.Object.Name, c.Object.Namespace, b.timeout(300))
	}),
	CheckWaypointAccepted: spec[WaypointAcceptedArgs]("", func(c Check, b bound) string {
		return fmt.Sprintf("kubectl wait --for=condition=WaypointAccepted %s/%s -n %s --timeout=%s", strings.ToLower(c.Object.Kind), c.Object.Name, c.Object.Namespace, b.timeout(120))
	}),
	CheckPodsCaptured: spec[PodsCapturedArgs]("Namespace", func(c Check, b bound) string {
		return fmt.Sprintf(`kubectl get namespace %s -o jsonpath='{.metadata.labels.istio\.io/dataplane-mode}' | awk '{m=$0} END {if (m != "ambient") {print "namespace %s is not labelled istio.io/dataplane-mode=ambient"; exit 1}}' && `, c.Object.Name, c.Object.Name) +
			fmt.Sprintf(`kubectl get pods -n %s -l 'istio.io/dataplane-mode!=none' --field-selector status.phase=Running -o jsonpath='%s' | %s`, c.Object.Name,
				rangeItems("*", `{.metadata.name}|{.metadata.annotations.ambient\.istio\.io/redirection}|{.metadata.annotations.sidecar\.istio\.io/status}`),
				failOn(`$2 != "enabled" && $3 == ""`, "not captured: ", "$1"))
	}),
	CheckNoSidecars: spec[NoSidecarsArgs]("Namespace", func(c Check, b bound) string {
		return fmt.Sprintf(`kubectl get pods -n %s -o jsonpath='%s' | %s`, c.Object.Name, podContainers, failOn(`$2 ~ /(^| )istio-proxy( |$)/`, "runs a sidecar: ", "$1"))
	}),
	CheckSidecarsInjected: spec[SidecarsInjectedArgs]("Namespace", func(c Check, b bound) string {
		return fmt.Sprintf(`kubectl get pods -n %s -l 'sidecar.istio.io/inject!=false' --field-selector status.phase=Running -o jsonpath='%s' | %s`, c.Object.Name,
			podContainers, failOn(`$2 !~ /(^| )istio-proxy( |$)/`, "runs no sidecar: ", "$1"))
	}),
	CheckBackupWritable: spec[BackupWritableArgs]("", func(c Check, b bound) string {
		dir := shellWord(filepath.Dir(c.Params["file"]))
		return fmt.Sprintf("test -d %s && test -w %s", dir, dir)
	}),
}

// podContainers prints each pod as "name|containers native-sidecars": from 1.27 istiod injects
// istio-proxy as an init container with restartPolicy Always where the cluster supports it
// (ENABLE_NATIVE_SIDECARS=auto, istio/istio@release-1.31 pilot/pkg/features/pilot.go), so a
// check that read only spec.containers would miss a sidecar that runs.
var podContainers = rangeItems("*", `{.metadata.name}|{.spec.containers[*].name} {.spec.initContainers[?(@.restartPolicy=="Always")].name}`)

// waits reports whether a check command waits for its condition itself (kubectl wait, rollout
// status, a loop) rather than looking once.
func waits(cmd string) bool {
	for _, p := range []string{"kubectl wait ", "kubectl rollout status ", "ok=; for i in $(seq ", "until ", "while "} {
		if strings.HasPrefix(cmd, p) {
			return true
		}
	}
	return false
}

// rangeItems is a kubectl jsonpath that prints fields for each item the filter selects ("*" for
// all), one line each.
func rangeItems(filter, fields string) string {
	return "{range .items[" + filter + "]}" + fields + "{\"\\n\"}{end}"
}

// ownedPods is the command that lists, one line each, fields of the pods of DaemonSet owner in
// namespace ns (on node, when set): its pods name it first among their owners.
func ownedPods(ns, node, owner, fields string) string {
	sel := ""
	if node != "" {
		sel = " --field-selector spec.nodeName=" + node
	}
	return fmt.Sprintf("kubectl get pods -n %s%s -o jsonpath='%s'", ns, sel, rangeItems(fmt.Sprintf("?(@.metadata.ownerReferences[0].name==%q)", owner), fields))
}

// ownedPodsCheck fails when a line of ownedPods matches bad (an awk condition), naming the pod.
func ownedPodsCheck(ns, node, owner, fields, bad, say string) string {
	return ownedPods(ns, node, owner, "{.metadata.name}|"+fields) + " | " + failOn(shiftFields(bad), say, "$0")
}

// shiftFields renumbers awk fields $1, $2, ... by one, for lines that start with the pod's name.
func shiftFields(cond string) string {
	return strings.NewReplacer("$1", "$2", "$2", "$3", "$3", "$4").Replace(cond)
}

// daemonSetWait waits until the DaemonSet's status field counts every pod it should run.
func daemonSetWait(ds mesh.ObjectRef, field string, b bound) string {
	return fmt.Sprintf(`kubectl wait daemonset/%s -n %s --for=jsonpath='{.status.%s}'="$(kubectl get daemonset/%s -n %s -o jsonpath='{.status.desiredNumberScheduled}')" --timeout=%s`,
		ds.Name, ds.Namespace, field, ds.Name, ds.Namespace, b.timeout(300))
}

// failOn is an awk program that prints say and what of every input line matching cond (every
// line when cond is empty) and exits 1 when any did: a check that passes on no such line.
func failOn(cond, say, what string) string {
	if say != "" {
		what = fmt.Sprintf("%q %s", say, what)
	}
	return fmt.Sprintf("awk -F'|' '%s {print %s; bad=1} END {exit bad}'", cond, what)
}

// regexpQuote escapes the dots of a version or a group for grep -E and awk.
func regexpQuote(s string) string { return strings.ReplaceAll(s, ".", "\\.") }

// CheckTypes returns every check type, sorted.
func CheckTypes() []CheckType {
	out := make([]CheckType, 0, len(checkSpecs))
	for t := range checkSpecs {
		out = append(out, t)
	}
	sortStringsOf(out)
	return out
}

// KnownCheck reports whether t is a check type of this library.
func KnownCheck(t CheckType) bool { _, ok := checkSpecs[t]; return ok }

// CheckCommand returns the kubectl or helm command that shows whether a check holds, waiting for it
// up to the check type's own bound where it waits; "" when there is none (CheckExecutorOnly says why).
func CheckCommand(c Check) string { return checkCommand(c, bound{}) }

// CheckExecutorOnly says why only the executor can check c, for a check type with no command; ""
// for one with a command.
func CheckExecutorOnly(c Check) string { return checkSpecs[c.Type].executorOnly }

func checkCommand(c Check, b bound) string {
	s, ok := checkSpecs[c.Type]
	if !ok || s.command == nil {
		return ""
	}
	return s.command(c, b)
}

// bound is how long a check's command waits for its condition, in seconds: a WaitFor step's timeout,
// or 0 for the check type's own default.
type bound struct{ seconds int64 }

func (b bound) or(def int64) int64 {
	if b.seconds > 0 {
		return b.seconds
	}
	return def
}

// timeout is the --timeout of a kubectl wait or rollout status.
func (b bound) timeout(def int64) string {
	s := b.or(def)
	if s%60 != 0 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm", s/60)
}

// until is a loop that tests cond every `every` seconds up to the bound (def seconds when it has
// none). Reaching it, the loop says on stderr what still does not hold and what to do, and fails;
// typed at a prompt it ends, and no shell is closed (false, not exit).
func (b bound) until(cond string, every, def int64, what string) string {
	within := b.or(def)
	gaveUp := fmt.Sprintf("gave up after %s: %s still does not hold; find out why, fix it, and run this again", seconds(within), what)
	return fmt.Sprintf(`ok=; for i in $(seq %d); do if %s; then ok=1; break; fi; sleep %d; done; [ -n "$ok" ] || { echo %s >&2; false; }`,
		max(within/every, 1), cond, every, shellWord(gaveUp))
}

func validateCheck(c Check, where string, bad func(string, ...any)) {
	s, ok := checkSpecs[c.Type]
	if !ok {
		bad("%s: check type %q is unknown", where, c.Type)
		return
	}
	if err := decodeParams(c.Params, s.args()); err != nil {
		bad("%s: check %s: %v", where, c.Type, err)
	}
	if s.object != "" && (c.Object.Kind != s.object || c.Object.Name == "") {
		bad("%s: check %s needs an object of kind %s with a name (got %q)", where, c.Type, s.object, c.Object.String())
	}
}

// Node is the node a check is about: its "node" parameter, else its object's name.
func (c Check) Node() string {
	if n := c.Params["node"]; n != "" {
		return n
	}
	return c.Object.Name
}

// ---- argument structs, one per check type ----

// DeploymentReadyArgs: the Deployment (the check's object) has every replica updated, ready and
// available, and its controller has seen its latest generation.
type DeploymentReadyArgs struct{}

// DaemonSetRolledOutArgs: the DaemonSet (the check's object) has every desired pod updated, ready and
// available; with Version, its template and (under OnDelete) every pod run that version.
type DaemonSetRolledOutArgs struct {
	Version string `param:"version"`
}

// NodeAgentReadyArgs: a ready, non-terminating pod of the DaemonSet (the check's object) runs on Node,
// or with All on every ready node the DaemonSet selects; at Version when given. Exactly one of Node
// and All.
type NodeAgentReadyArgs struct {
	Node    string `param:"node"`
	Version string `param:"version"`
	All     bool   `param:"all"`
}

// PodsRedirectedArgs: ambient pods carry ambient.istio.io/redirection=enabled; with Since
// "step-start", only pods created since the step started.
type PodsRedirectedArgs struct {
	Since string `param:"since"`
}

// NoSandboxFailuresArgs: no pod keeps failing sandbox creation through Plugin (default istio-cni) for
// longer than RetryWindowSeconds (default 120).
type NoSandboxFailuresArgs struct {
	RetryWindowSeconds int    `param:"retryWindowSeconds"`
	Plugin             string `param:"plugin"`
}

// TagPointsToArgs: the tag's webhook configuration (the check's object, or istio-revision-tag-<tag>)
// is labelled with Revision.
type TagPointsToArgs struct {
	Tag      string `param:"tag,required"`
	Revision string `param:"revision,required"`
}

// NoReferencesArgs: nothing refers to Revision (revision.References); with Gone, its istiod is gone
// too.
type NoReferencesArgs struct {
	Revision string `param:"revision,required"`
	Gone     bool   `param:"gone"`
}

// GatewayOwnerArgs: the gateway (the check's object) is owned by Revision (a revision or a tag).
type GatewayOwnerArgs struct {
	Revision string `param:"revision,required"`
}

// HelmReleaseVersionArgs: the release (the check's object) is deployed, at chart Version when given.
type HelmReleaseVersionArgs struct {
	Version string `param:"version"`
}

// NodeDrainedArgs: only DaemonSet, mirror and finished pods are left on the node (Node, or the check's
// object); with AmbientOnly, no ambient pod is left.
type NodeDrainedArgs struct {
	Node        string `param:"node"`
	AmbientOnly bool   `param:"ambientOnly"`
}

// NodeSchedulableArgs: the node (Node, or the check's object) is not cordoned.
type NodeSchedulableArgs struct {
	Node string `param:"node"`
}

// WorkloadsOnRevisionArgs: every pod of the step's restarted workloads (or of the workloads the tag
// reaches) runs a sidecar injected by Revision.
type WorkloadsOnRevisionArgs struct {
	Tag      string `param:"tag"`
	Revision string `param:"revision,required"`
}

// TrustedAccountsArgs: every revision (or Revision) trusts Accounts ("namespace/serviceaccount"), or
// every running ztunnel's account when Accounts is empty; with Only, it trusts no other account.
type TrustedAccountsArgs struct {
	Accounts []string `param:"accounts"`
	Revision string   `param:"revision"`
	Only     bool     `param:"only"`
}

// NodesReadyArgs: at least Min ready nodes carry the labels of Selector ("key=value,key2=value2").
type NodesReadyArgs struct {
	Selector string `param:"selector,required"`
	Min      int    `param:"min"`
}

// NodeAgentAbsentArgs: no pod of the DaemonSet (the check's object), not even a terminating one, is
// on Node, or on any node when Node is empty.
type NodeAgentAbsentArgs struct {
	Node string `param:"node"`
}

// WorkloadsReadyArgs: every listed workload ("Kind/namespace/name": Deployments, StatefulSets) has
// all its replicas updated, ready and available.
type WorkloadsReadyArgs struct {
	Workloads []string `param:"workloads,required"`
}

// NoAmbientPodsArgs: no pod that ambient captures runs on a node carrying the labels of Selector;
// DaemonSet and mirror pods count (drains leave them), finished pods do not.
type NoAmbientPodsArgs struct {
	Selector string `param:"selector,required"`
}

// FindingsClearArgs: ComputeCompatibility of the live mesh reports nothing that stops an upgrade to
// Target (or Version) with Strategy. With Component "control-plane", a ready control plane at
// Version's minor or newer runs instead.
type FindingsClearArgs struct {
	Target    string `param:"target"`
	Version   string `param:"version"`
	Strategy  string `param:"strategy"`
	Component string `param:"component"`
}

// DefaultRevisionArgs: istiod-default-validator is labelled istio.io/rev=Revision.
type DefaultRevisionArgs struct {
	Revision string `param:"revision,required"`
}

// BackupReadableArgs: the backup written by Step (default: the step the check belongs to) reads back
// equal. Revision names what was backed up, for the reader.
type BackupReadableArgs struct {
	Revision string `param:"revision"`
	Step     string `param:"step"`
}

// CRDsEstablishedArgs: every CRD of Group or a subgroup (default istio.io) is Established.
type CRDsEstablishedArgs struct {
	Group string `param:"group"`
}

// RevisionReadyArgs: the istiod Deployment of Revision (the check's object, or istiod-<revision>) is
// ready.
type RevisionReadyArgs struct {
	Revision string `param:"revision,required"`
}

// GatewayProgrammed: the Gateway (the check's object) has condition Programmed=True written for its
// current generation (what kubectl shows as READY, and what istiod writes once the waypoint's
// Deployment and Service are up).
type GatewayProgrammedArgs struct{}

// WaypointAccepted: istiod has written condition WaypointAccepted=True on the policy (the check's
// object: an AuthorizationPolicy, RequestAuthentication, ... attached with targetRefs) for its
// current generation. APIVersion is the policy's (default security.istio.io/v1).
type WaypointAcceptedArgs struct {
	APIVersion string `param:"apiVersion"`
}

// PodsCaptured: the namespace (the check's object) is labelled istio.io/dataplane-mode=ambient, and
// every pod of it that ambient captures carries ambient.istio.io/redirection=enabled. A pod counts
// when it is running (or pending) and not terminating, not on the host network, not labelled
// istio.io/dataplane-mode=none, and runs no injected sidecar: istio-cni never captures a pod with a
// sidecar (sidecar.istio.io/status), so right after the namespace is labelled only its pods without
// sidecars must be captured; the sidecar pods are counted in the reason and left to the restart.
type PodsCapturedArgs struct{}

// NoSidecars: no pod of the namespace (the check's object), terminating ones included, runs an
// injected sidecar (annotation sidecar.istio.io/status, or a container istio-proxy on a pod that is
// not a gateway's). Gateway pods injected with the gateway template and finished pods do not count.
type NoSidecarsArgs struct{}

// SidecarsInjected: every running pod of the step's workloads (a Reinject or Restart step; every pod
// of the namespace, the check's object, otherwise) runs an injected sidecar, no pod of them is left
// that runs without one, and none is redirected to ztunnel. Pods that opt out of injection
// (sidecar.istio.io/inject=false) and gateway pods do not count.
type SidecarsInjectedArgs struct{}

// BackupWritable: File can be written by the process that runs the executor: its directory exists
// and takes a new file, and File either does not exist or holds the backup Step of this very plan
// (a resumed run writes it again). It is checked before anything changes.
type BackupWritableArgs struct {
	File string `param:"file,required"`
	Step string `param:"step"`
}

// CheckType implementations.

func (DeploymentReadyArgs) CheckType() CheckType     { return CheckDeploymentReady }
func (DaemonSetRolledOutArgs) CheckType() CheckType  { return CheckDaemonSetRolledOut }
func (NodeAgentReadyArgs) CheckType() CheckType      { return CheckNodeAgentReady }
func (PodsRedirectedArgs) CheckType() CheckType      { return CheckPodsRedirected }
func (NoSandboxFailuresArgs) CheckType() CheckType   { return CheckNoSandboxFailures }
func (TagPointsToArgs) CheckType() CheckType         { return CheckTagPointsTo }
func (NoReferencesArgs) CheckType() CheckType        { return CheckNoReferences }
func (GatewayOwnerArgs) CheckType() CheckType        { return CheckGatewayOwner }
func (HelmReleaseVersionArgs) CheckType() CheckType  { return CheckHelmReleaseVersion }
func (NodeDrainedArgs) CheckType() CheckType         { return CheckNodeDrained }
func (NodeSchedulableArgs) CheckType() CheckType     { return CheckNodeSchedulable }
func (WorkloadsOnRevisionArgs) CheckType() CheckType { return CheckWorkloadsOnRevision }
func (TrustedAccountsArgs) CheckType() CheckType     { return CheckTrustedAccounts }
func (FindingsClearArgs) CheckType() CheckType       { return CheckFindingsClear }
func (DefaultRevisionArgs) CheckType() CheckType     { return CheckDefaultRevision }
func (BackupReadableArgs) CheckType() CheckType      { return CheckBackupReadable }
func (CRDsEstablishedArgs) CheckType() CheckType     { return CheckCRDsEstablished }
func (RevisionReadyArgs) CheckType() CheckType       { return CheckRevisionExistsAndReady }
func (NodesReadyArgs) CheckType() CheckType          { return CheckNodesReady }
func (NodeAgentAbsentArgs) CheckType() CheckType     { return CheckNodeAgentAbsent }
func (WorkloadsReadyArgs) CheckType() CheckType      { return CheckWorkloadsReady }
func (NoAmbientPodsArgs) CheckType() CheckType       { return CheckNoAmbientPods }
func (GatewayProgrammedArgs) CheckType() CheckType   { return CheckGatewayProgrammed }
func (WaypointAcceptedArgs) CheckType() CheckType    { return CheckWaypointAccepted }
func (PodsCapturedArgs) CheckType() CheckType        { return CheckPodsCaptured }
func (NoSidecarsArgs) CheckType() CheckType          { return CheckNoSidecars }
func (SidecarsInjectedArgs) CheckType() CheckType    { return CheckSidecarsInjected }
func (BackupWritableArgs) CheckType() CheckType      { return CheckBackupWritable }
