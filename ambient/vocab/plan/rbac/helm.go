package rbac

import (
	"fmt"
	"strings"
)

// The permissions of Helm steps are those the Helm v3 SDK (helm.sh/helm/v3@v3.22.0, through
// package execute/helmsdk with its default Secret storage) needs for the release:
//
//   - its records, Secrets sh.helm.release.v1.<release>.v<revision> in the release namespace
//     (pkg/storage/driver/secrets.go): every read of a release LISTs them by label
//     (pkg/storage/storage.go History, Last, Deployed); installs, upgrades and rollbacks create the new
//     record and update the old ones; upgrades and rollbacks prune records beyond MaxHistory and
//     uninstalls purge them (a GET of each, then a DELETE);
//   - the objects the chart renders (pkg/kube/client.go): an install GETs each (pkg/action/validate.go,
//     existingResourceConflict) and creates it, and creates the release namespace (pkg/action/install.go,
//     CreateNamespace); an upgrade or rollback GETs each, creates the new ones, patches the others and
//     deletes those the chart no longer renders unless they carry helm.sh/resource-policy: keep
//     (client.go, update); an uninstall deletes them (pkg/action/uninstall.go);
//   - to create or change a ClusterRole or Role the executor does not itself hold every rule of, RBAC
//     needs escalate on it, and to create or change a binding, bind on the role it names
//     (k8s.io/kubernetes@v1.37.2 pkg/registry/rbac/escalation_check.go: RoleEscalationAuthorized asks
//     escalate with the request's name, BindingAuthorized asks bind with the roleRef's name).
//     Every verb but create and list is granted by name: the names the charts render are known at
//     plan time (roleNames), and the release records' too. Escalate is asked without a name on
//     create, so a run that installs a chart with roles (or upgrades one across chart versions,
//     which may add roles) can create a role with any permission; every other run can change only
//     the chart's own roles and bindings.
//
// A dry run reads the release (LIST) and, for installs and upgrades, GETs the objects it would create.

// Helm operations, as the kinds do them.
type helmOp int

const (
	helmInstallOp helmOp = iota
	helmUpgradeOp
	helmRollbackOp
	helmUninstallOp
)

const (
	srcHelmStorage = "helm.sh/helm/v3@v3.22.0 pkg/storage/driver/secrets.go, pkg/storage/storage.go"
	srcHelmObjects = "helm.sh/helm/v3@v3.22.0 pkg/kube/client.go (Create, update, rdelete), pkg/action/validate.go (existingResourceConflict)"
	srcHelmNS      = "helm.sh/helm/v3@v3.22.0 pkg/action/install.go (CreateNamespace, set by ambient/io/execute/helmsdk)"
	srcEscalation  = "k8s.io/kubernetes@v1.37.2 pkg/registry/rbac/escalation_check.go (RoleEscalationAuthorized, BindingAuthorized)"
	istioCharts    = "istio/istio@1.30.3 manifests/charts/"
)

// helmRecordName is the name of the Secret holding one revision of a release.
func helmRecordName(release string, revision int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, revision)
}

// helm adds what one Helm operation on a release needs. Every verb but create (and list) is asked
// for named objects, and is granted by name when the names are known: the release's records up to the
// highest revision the plan reaches, and the roles and bindings the chart renders for the values
// (roleNames). newObjects says whether an upgrade may create objects the release does not hold yet
// (its chart version changes, or is not known): creating a role asks escalate without a name.
func (n need) helm(op helmOp, ns, release, chart string, values map[string]any, reuse, dry, newObjects bool) {
	// The executor reads the release before (and after) it acts, and every Helm action reads it.
	n.add("list", "", "secrets", ns, "", srcHelmStorage)
	if !dry {
		n.records(op, ns, release)
	}
	var verbs []string
	switch {
	case dry && (op == helmInstallOp || op == helmUpgradeOp):
		verbs = []string{"get"}
	case dry:
		return
	case op == helmInstallOp:
		verbs = []string{"get", "create"}
		n.add("create", "", "namespaces", "", "", srcHelmNS)
	case op == helmUninstallOp:
		verbs = []string{"delete"}
	default:
		verbs = []string{"get", "create", "patch", "delete"}
	}
	v := chartValues{values: values, reuse: reuse}
	objs, ok := chartObjects(chart, v)
	if !ok {
		n.d.ps.AddUnknown(fmt.Sprintf("Helm release %s/%s (chart %q): the objects of a chart that is not one of Istio's are not known; grant what it renders yourself", ns, release, chart))
		return
	}
	istioNS := chartValues{values: values}.str("istio-system", "global.istioNamespace")
	for _, o := range objs {
		where := ""
		switch o.scope {
		case inRelease:
			where = ns
		case inIstioNamespace:
			where = istioNS
		case inDefault:
			where = "default"
		}
		src := istioCharts + o.source
		if o.rbac != notRBAC {
			n.rbacObjects(o, v, release, ns, where, verbs, op == helmInstallOp || newObjects)
			continue
		}
		for _, verb := range verbs {
			if verb == "delete" && o.keep {
				continue
			}
			n.add(verb, o.group, o.resource, where, "", src, srcHelmObjects)
		}
	}
}

// records adds what Helm does to the release's record Secrets: it creates the new one (no name: a
// create is never asked by name), updates the current and the new one, reads and deletes old ones
// (pruning beyond MaxHistory, purging on uninstall). Those are named sh.helm.release.v1.<release>.v1
// to .v<n>, n the highest revision the plan reaches; when it is not known, every Secret of the
// namespace is granted, as before names could be given.
func (n need) records(op helmOp, ns, release string) {
	var verbs []string
	switch op {
	case helmInstallOp:
		verbs = []string{"update"}
	case helmUpgradeOp, helmRollbackOp:
		verbs = []string{"update", "get", "delete"}
	case helmUninstallOp:
		verbs = []string{"update", "get", "delete"}
	}
	if op != helmUninstallOp {
		n.add("create", "", "secrets", ns, "", srcHelmStorage)
	}
	rev := n.d.known[ns+"/"+release].revision
	if op == helmRollbackOp {
		rev = 0 // a rollback makes a revision past any the plan's steps say
	}
	for _, verb := range verbs {
		if rev == 0 {
			n.add(verb, "", "secrets", ns, "", srcHelmStorage)
			continue
		}
		for r := 1; r <= rev; r++ {
			n.add(verb, "", "secrets", ns, helmRecordName(release, r), srcHelmStorage)
		}
	}
}

// rbacObjects adds what Helm does to a role or binding the chart renders: by name when the chart's
// names are known for the values (roleNames), create and, when the step may create a role, escalate
// without one (the API server asks escalate with the request's name, which a create has not). Bind
// is asked on the role a binding names (roleRef), so it is named too.
func (n need) rbacObjects(o chartObject, v chartValues, release, ns, where string, verbs []string, creates bool) {
	src := istioCharts + o.source
	names, roles, known := roleNames(o, v, release, ns)
	if !known {
		names, roles = []string{""}, []string{""}
	}
	for _, verb := range verbs {
		switch {
		case verb == "create":
			n.add("create", o.group, o.resource, where, "", src, srcHelmObjects)
		case verb == "delete" && o.keep:
		default:
			for _, name := range names {
				n.add(verb, o.group, o.resource, where, name, src, srcHelmObjects)
			}
		}
		if verb == "get" || verb == "delete" {
			continue
		}
		switch o.rbac {
		case rbacRole:
			if verb == "create" && creates {
				n.add("escalate", "rbac.authorization.k8s.io", o.resource, where, "", src, srcEscalation)
			}
			if verb == "patch" {
				for _, name := range names {
					n.add("escalate", "rbac.authorization.k8s.io", o.resource, where, name, src, srcEscalation)
				}
			}
		case rbacBinding:
			role := "clusterroles"
			if o.resource == "rolebindings" {
				role = "roles"
			}
			for _, r := range roles {
				n.add("bind", "rbac.authorization.k8s.io", role, where, r, src, srcEscalation)
			}
		}
	}
}

// objectScope says where a chart object lands.
type objectScope int

const (
	cluster          objectScope = iota // cluster-scoped
	inRelease                           // the release namespace
	inIstioNamespace                    // global.istioNamespace (default istio-system)
	inDefault                           // namespace default
)

// rbacKind marks the RBAC kinds, whose writes need escalate or bind.
type rbacKind int

const (
	notRBAC rbacKind = iota
	rbacRole
	rbacBinding
)

// chartObject is one kind a chart template renders.
type chartObject struct {
	group, resource string
	scope           objectScope
	rbac            rbacKind
	// keep: the objects carry helm.sh/resource-policy: keep; Helm never deletes them.
	keep bool
	// source is the template, under manifests/charts/.
	source string
	// when, if set, says whether the template renders for the values.
	when func(v chartValues) bool
}

// chartObjects lists the kinds the Istio chart renders for the values (the templates of
// istio/istio@1.30.3 manifests/charts; the same files and conditions hold for 1.31). ok is false for
// a chart that is not one of Istio's.
func chartObjects(chart string, v chartValues) ([]chartObject, bool) {
	var table []chartObject
	switch chart {
	case "base":
		table = baseObjects
	case "istiod", "istio-discovery":
		table = istiodObjects
	case "cni", "istio-cni":
		table = cniObjects
	case "ztunnel":
		table = ztunnelObjects
	case "gateway":
		table = gatewayObjects(v)
	default:
		return nil, false
	}
	var out []chartObject
	for _, o := range table {
		if o.when == nil || o.when(v) {
			out = append(out, o)
		}
	}
	return out, true
}

var baseObjects = []chartObject{
	{group: "apiextensions.k8s.io", resource: "customresourcedefinitions", keep: true, source: "base/templates/crds.yaml and base/files/crd-all.gen.yaml (helm.sh/resource-policy: keep)"},
	{group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", source: "base/templates/defaultrevision-validatingwebhookconfiguration.yaml",
		when: func(v chartValues) bool {
			return v.str("default", "defaultRevision") != "" || !v.known("defaultRevision")
		}},
	{group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", source: "base/templates/defaultrevision-validatingadmissionpolicy.yaml", when: stableValidation},
	{group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicybindings", source: "base/templates/defaultrevision-validatingadmissionpolicy.yaml", when: stableValidation},
	{resource: "serviceaccounts", scope: inIstioNamespace, source: "base/templates/reader-serviceaccount.yaml",
		when: func(v chartValues) bool { return v.flag(true, "global.enableReaderRBAC") }},
}

const istiodDir = "istio-control/istio-discovery/templates/"

var istiodObjects = []chartObject{
	{group: "rbac.authorization.k8s.io", resource: "clusterroles", rbac: rbacRole, source: istiodDir + "clusterrole.yaml, reader-clusterrole.yaml"},
	{group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", rbac: rbacBinding, source: istiodDir + "clusterrolebinding.yaml, reader-clusterrolebinding.yaml"},
	{group: "rbac.authorization.k8s.io", resource: "roles", scope: inIstioNamespace, rbac: rbacRole, source: istiodDir + "role.yaml"},
	{group: "rbac.authorization.k8s.io", resource: "rolebindings", scope: inIstioNamespace, rbac: rbacBinding, source: istiodDir + "rolebinding.yaml"},
	{resource: "serviceaccounts", scope: inIstioNamespace, source: istiodDir + "serviceaccount.yaml"},
	{resource: "configmaps", scope: inRelease, source: istiodDir + "configmap.yaml, configmap-values.yaml, istiod-injector-configmap.yaml, gateway-class-configmap.yaml"},
	{resource: "services", scope: inRelease, source: istiodDir + "service.yaml"},
	{group: "apps", resource: "deployments", scope: inRelease, source: istiodDir + "deployment.yaml"},
	{group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", source: istiodDir + "mutatingwebhook.yaml",
		when: func(v chartValues) bool {
			return !v.flag(false, "global.operatorManageWebhooks") || !v.known("global.operatorManageWebhooks")
		}},
	{group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", source: istiodDir + "validatingwebhookconfiguration.yaml",
		when: func(v chartValues) bool { return v.flag(true, "global.configValidation") }},
	{group: "autoscaling", resource: "horizontalpodautoscalers", scope: inRelease, source: istiodDir + "autoscale.yaml", when: istiodAutoscale},
	{group: "policy", resource: "poddisruptionbudgets", scope: inRelease, source: istiodDir + "poddisruptionbudget.yaml", when: istiodPDB},
	{group: "networking.k8s.io", resource: "networkpolicies", scope: inRelease, source: istiodDir + "networkpolicy.yaml", when: networkPolicy},
	{group: "discovery.k8s.io", resource: "endpointslices", scope: inRelease, source: istiodDir + "remote-istiod-endpointslices.yaml",
		when: func(v chartValues) bool {
			return (v.str("", "global.remotePilotAddress") != "" || !v.known("global.remotePilotAddress")) && v.flag(false, "istiodRemote.enabled")
		}},
	{group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", source: istiodDir + "validatingadmissionpolicy.yaml", when: stableValidation},
	{group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicybindings", source: istiodDir + "validatingadmissionpolicy.yaml", when: stableValidation},
}

var cniObjects = []chartObject{
	{group: "rbac.authorization.k8s.io", resource: "clusterroles", rbac: rbacRole, source: "istio-cni/templates/clusterrole.yaml"},
	{group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", rbac: rbacBinding, source: "istio-cni/templates/clusterrolebinding.yaml"},
	{resource: "serviceaccounts", scope: inRelease, source: "istio-cni/templates/serviceaccount.yaml"},
	{resource: "configmaps", scope: inRelease, source: "istio-cni/templates/configmap-cni.yaml"},
	{group: "apps", resource: "daemonsets", scope: inRelease, source: "istio-cni/templates/daemonset.yaml"},
	{resource: "resourcequotas", scope: inRelease, source: "istio-cni/templates/resourcequota.yaml", when: resourceQuotas},
	{group: "networking.k8s.io", resource: "networkpolicies", scope: inRelease, source: "istio-cni/templates/networkpolicy.yaml", when: networkPolicy},
	{group: "k8s.cni.cncf.io", resource: "network-attachment-definitions", scope: inDefault, source: "istio-cni/templates/network-attachment-definition.yaml",
		when: func(v chartValues) bool {
			def := "default"
			if v.platform() == "openshift" { // files/profile-platform-openshift.yaml
				def = "multus"
			}
			return v.str(def, "provider", "cni.provider") == "multus" || !v.known("provider", "cni.provider")
		}},
}

var ztunnelObjects = []chartObject{
	{group: "apps", resource: "daemonsets", scope: inRelease, source: "ztunnel/templates/daemonset.yaml"},
	{resource: "serviceaccounts", scope: inRelease, source: "ztunnel/templates/serviceaccount.yaml"},
	{group: "rbac.authorization.k8s.io", resource: "clusterroles", rbac: rbacRole, source: "ztunnel/templates/rbac.yaml", when: openshift},
	{group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", rbac: rbacBinding, source: "ztunnel/templates/rbac.yaml", when: openshift},
	{resource: "resourcequotas", scope: inRelease, source: "ztunnel/templates/resourcequota.yaml", when: resourceQuotas},
	{group: "networking.k8s.io", resource: "networkpolicies", scope: inRelease, source: "ztunnel/templates/networkpolicy.yaml", when: networkPolicy},
}

// gatewayObjects depend on the workload kind the values choose (templates/deployment.yaml: kind:
// {{ .Values.kind | default "Deployment" }}).
func gatewayObjects(v chartValues) []chartObject {
	kind := v.str("Deployment", "kind")
	workloads := []string{kindResource(kind)}
	if !v.known("kind") {
		workloads = []string{"daemonsets", "deployments"}
	}
	out := []chartObject{
		{resource: "services", scope: inRelease, source: "gateway/templates/service.yaml",
			when: func(v chartValues) bool {
				return v.str("LoadBalancer", "service.type") != "None" || !v.known("service.type")
			}},
		{resource: "serviceaccounts", scope: inRelease, source: "gateway/templates/serviceaccount.yaml",
			when: func(v chartValues) bool { return v.flag(true, "serviceAccount.create") }},
		{group: "rbac.authorization.k8s.io", resource: "roles", scope: inRelease, rbac: rbacRole, source: "gateway/templates/role.yaml",
			when: func(v chartValues) bool { return v.flag(true, "rbac.enabled") }},
		{group: "rbac.authorization.k8s.io", resource: "rolebindings", scope: inRelease, rbac: rbacBinding, source: "gateway/templates/role.yaml",
			when: func(v chartValues) bool { return v.flag(true, "rbac.enabled") }},
		{group: "autoscaling", resource: "horizontalpodautoscalers", scope: inRelease, source: "gateway/templates/hpa.yaml",
			when: func(v chartValues) bool {
				return v.flag(true, "autoscaling.enabled") && (kind == "Deployment" || !v.known("kind"))
			}},
		{group: "policy", resource: "poddisruptionbudgets", scope: inRelease, source: "gateway/templates/poddisruptionbudget.yaml",
			when: func(v chartValues) bool {
				m, _ := v.get("podDisruptionBudget")
				pdb, _ := m.(map[string]any)
				return len(pdb) > 0 || !v.known("podDisruptionBudget")
			}},
		{group: "networking.k8s.io", resource: "networkpolicies", scope: inRelease, source: "gateway/templates/networkpolicy.yaml", when: networkPolicy},
	}
	for _, w := range workloads {
		out = append(out, chartObject{group: "apps", resource: w, scope: inRelease, source: "gateway/templates/deployment.yaml"})
	}
	return out
}

// Conditions several charts share.

func networkPolicy(v chartValues) bool { return v.flag(false, "global.networkPolicy.enabled") }

func stableValidation(v chartValues) bool {
	return v.flag(v.profile() == "stable", "experimental.stableValidationPolicy", "base.experimental.stableValidationPolicy")
}

func resourceQuotas(v chartValues) bool {
	// files/profile-platform-gke.yaml turns them on.
	return v.flag(v.platform() == "gke", "resourceQuotas.enabled", "cni.resourceQuotas.enabled")
}

func openshift(v chartValues) bool {
	return v.platform() == "openshift" || !v.known("platform", "global.platform")
}

func istiodAutoscale(v chartValues) bool {
	return v.flag(v.profile() != "demo", "autoscaleEnabled", "pilot.autoscaleEnabled") // files/profile-demo.yaml
}

// istiodPDB: templates/poddisruptionbudget.yaml renders with global.defaultPodDisruptionBudget.enabled
// and either autoscaling with autoscaleMin > 1 or a fixed replicaCount > 1.
func istiodPDB(v chartValues) bool {
	if !v.flag(true, "global.defaultPodDisruptionBudget.enabled") {
		return false
	}
	if !v.known("autoscaleEnabled", "autoscaleMin", "replicaCount") {
		return true
	}
	if istiodAutoscale(v) {
		return v.num(1, "autoscaleMin") > 1
	}
	return v.num(1, "replicaCount") > 1
}

// chartValues reads a Helm step's values. A value the step does not set has the chart's default,
// unless the step reuses the release's values (helm --reuse-values): then it is not known, and the
// conditions above include what it could render.
type chartValues struct {
	values map[string]any
	reuse  bool
}

// get returns the first of the dotted paths the values set.
func (v chartValues) get(paths ...string) (any, bool) {
	for _, p := range paths {
		var cur any = v.values
		ok := true
		for _, k := range strings.Split(p, ".") {
			m, isMap := cur.(map[string]any)
			if !isMap {
				ok = false
				break
			}
			if cur, ok = m[k]; !ok {
				break
			}
		}
		if ok {
			return cur, true
		}
	}
	return nil, false
}

// known reports whether one of the paths is set, or the chart's default applies.
func (v chartValues) known(paths ...string) bool {
	_, set := v.get(paths...)
	return set || !v.reuse
}

// flag is a boolean value, def when unset; an unknown value counts as true (it may render).
func (v chartValues) flag(def bool, paths ...string) bool {
	x, ok := v.get(paths...)
	switch {
	case ok:
		b, isBool := x.(bool)
		if s, isStr := x.(string); isStr {
			return s == "true"
		}
		return isBool && b
	case v.reuse:
		return true
	}
	return def
}

func (v chartValues) str(def string, paths ...string) string {
	if x, ok := v.get(paths...); ok {
		return fmt.Sprint(x)
	}
	return def
}

func (v chartValues) num(def float64, paths ...string) float64 {
	if x, ok := v.get(paths...); ok {
		if f, isNum := x.(float64); isNum {
			return f
		}
		if i, isInt := x.(int); isInt {
			return float64(i)
		}
	}
	return def
}

func (v chartValues) profile() string  { return v.str("", "profile") }
func (v chartValues) platform() string { return v.str("", "platform", "global.platform") }

// roleNames are the names the chart gives the roles or bindings of o for the values and release,
// and for bindings the roles they bind (roleRef); known is false when the values that make a name
// are not known (a step reusing the release's values without setting them). Names of templates the
// values leave out are listed too: the chart's own names, which grant nothing else.
//
// istio.io/istio@v0.0.0-20260827124520-eed52ebb66ad manifests/charts:
//   - istio-control/istio-discovery/templates/clusterrole.yaml, clusterrolebinding.yaml:
//     istiod-clusterrole[-<revision>]-<release namespace>, istiod-gateway-controller[-<revision>]-<release
//     namespace>; reader-clusterrole.yaml, reader-clusterrolebinding.yaml:
//     istio-reader-clusterrole[-<revision>]-<release namespace>; role.yaml, rolebinding.yaml:
//     istiod[-<revision>]; each binding binds the role of its own name;
//   - istio-cni/templates/clusterrole.yaml, clusterrolebinding.yaml: istio-cni, istio-cni-repair-role
//     (bound by istio-cni-repair-rolebinding), istio-cni-ambient;
//   - ztunnel/templates/rbac.yaml: resourceName (default ztunnel), ClusterRole and ClusterRoleBinding;
//   - gateway/templates/role.yaml: the service account's name (serviceAccount.name, else with
//     serviceAccount.create the gateway's name, values name or the release name), Role and RoleBinding.
func roleNames(o chartObject, v chartValues, release, ns string) (names, roles []string, known bool) {
	switch {
	case strings.HasPrefix(o.source, istiodDir):
		if !v.known("revision") {
			return nil, nil, false
		}
		suffix := ""
		if rev := v.str("", "revision"); rev != "" {
			suffix = "-" + rev
		}
		if o.resource == "roles" || o.resource == "rolebindings" {
			return []string{"istiod" + suffix}, []string{"istiod" + suffix}, true
		}
		for _, base := range []string{"istiod-clusterrole", "istiod-gateway-controller", "istio-reader-clusterrole"} {
			names = append(names, base+suffix+"-"+ns)
			if istioNS := v.str(ns, "global.istioNamespace"); istioNS != ns { // older charts name them after it
				names = append(names, base+suffix+"-"+istioNS)
			}
		}
		return names, names, true
	case strings.HasPrefix(o.source, "istio-cni/"):
		if o.resource == "clusterrolebindings" {
			return []string{"istio-cni", "istio-cni-ambient", "istio-cni-repair-rolebinding"}, []string{"istio-cni", "istio-cni-ambient", "istio-cni-repair-role"}, true
		}
		return []string{"istio-cni", "istio-cni-ambient", "istio-cni-repair-role"}, nil, true
	case strings.HasPrefix(o.source, "ztunnel/"):
		if !v.known("resourceName") {
			return nil, nil, false
		}
		name := v.str("", "resourceName")
		if name == "" {
			name = "ztunnel"
		}
		return []string{name}, []string{name}, true
	case strings.HasPrefix(o.source, "gateway/"):
		if !v.known("serviceAccount.name") || !v.known("serviceAccount.create") || !v.known("name") {
			return nil, nil, false
		}
		name := v.str("", "serviceAccount.name")
		switch {
		case name != "":
		case v.flag(true, "serviceAccount.create"):
			name = v.str(release, "name")
		default:
			name = "default"
		}
		return []string{name}, []string{name}, true
	}
	return nil, nil, false
}
