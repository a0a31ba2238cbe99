package ztunnel

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// How the ztunnel chart names its DaemonSet and ServiceAccount (and, with platform=openshift only,
// its ClusterRole and ClusterRoleBinding: see rendersClusterRole), by chart version:
//
//   - before 1.25.0 both are the fixed "ztunnel" and there is no resourceName value
//     (istio/istio@1.24.6: manifests/charts/ztunnel/templates/daemonset.yaml, rbac.yaml);
//   - 1.25.0 to 1.25.5 name them helper ztunnel.release-name, resourceName | default .Release.Name
//     (istio/istio@1.25.0 to @1.25.5: manifests/charts/ztunnel/templates/_helpers.tpl, values.yaml),
//     but 1.25.0's DaemonSet still runs as serviceAccountName: ztunnel (fixed in 1.25.1, #55360;
//     istio/istio@1.25.0 and @1.25.1: templates/daemonset.yaml);
//   - from 1.26.0 the helper is resourceName | default "ztunnel" (istio/istio@1.26.0, @1.30.3 and
//     @release-1.31: templates/_helpers.tpl; release note ztunnel-helm-chart-revert).
//
// A release not named ztunnel is therefore renamed by a hop across 1.25, unless resourceName holds
// the name. A renamed DaemonSet is a new object to Helm: it creates it and deletes the old one, so
// ztunnel is replaced on every node at once whatever the update strategy, and its new account is one
// istiod does not trust.
var (
	resourceNameSince      = mesh.Version{Major: 1, Minor: 25}
	serviceAccountFixed    = mesh.Version{Major: 1, Minor: 25, Patch: 1}
	staticNameDefaultSince = mesh.Version{Major: 1, Minor: 26}
)

const defaultName = "ztunnel"

// ChartNames returns the DaemonSet and ServiceAccount names the ztunnel chart at version v renders
// for a release named release with the resourceName value rn ("" when unset).
func ChartNames(v mesh.Version, release, rn string) (daemonSet, serviceAccount string) {
	switch {
	case v.Less(resourceNameSince):
		return defaultName, defaultName
	case rn != "":
	case v.Less(staticNameDefaultSince):
		rn = release
	default:
		rn = defaultName
	}
	if v.Less(serviceAccountFixed) {
		return rn, defaultName
	}
	return rn, rn
}

// pinName adds resourceName to the values of an upgrade of z's release to v, set to the name the
// DaemonSet runs under, on every chart that has the value, so no hop renames it. It adds a blocking
// finding when the upgrade would rename the DaemonSet anyway (a chart without the value, 1.25.0's
// fixed service account, or a caller's resourceName) or give it an account the revision it connects
// to does not trust.
func pinName(b *steps.Builder, s *mesh.Snapshot, z mesh.Ztunnel, h mesh.HelmRelease, v mesh.Version, set map[string]any) {
	if !v.Less(resourceNameSince) {
		set["resourceName"] = z.Name
	}
	rn, _ := b.UpgradeValues(h, set)["resourceName"].(string)
	ds, sa := ChartNames(v, h.Name, rn)
	renamed := ds != z.Name
	if !renamed && (sa == z.ServiceAccount || trustedByItsRevision(s, z, sa)) {
		return
	}
	var remedy string
	switch {
	case v.Less(resourceNameSince):
		remedy = fmt.Sprintf("target %s or newer, whose chart has resourceName (the plan pins it to %q), or rename ztunnel in a blue-green swap of its own", serviceAccountFixed, z.Name)
	case v.Less(serviceAccountFixed):
		remedy = fmt.Sprintf("target %s or newer: the %s chart runs the DaemonSet as service account ztunnel whatever resourceName says", serviceAccountFixed, v)
	case rn != z.Name:
		remedy = fmt.Sprintf("drop the resourceName value %q from the caller's values; the plan pins it to %q, the running name", rn, z.Name)
	default:
		remedy = fmt.Sprintf("trust %s/%s before the upgrade (%s)", z.Namespace, sa, trustCommand(s, z, sa))
	}
	what := fmt.Sprintf("its service account from %q to %q, which istiod does not trust", z.ServiceAccount, sa)
	if renamed {
		objects := "DaemonSet and ServiceAccount"
		if rendersClusterRole(b.UpgradeValues(h, set)) {
			objects = "DaemonSet, ServiceAccount, ClusterRole and ClusterRoleBinding (platform=openshift)"
		}
		what = fmt.Sprintf("its %s from %q to %q: Helm creates the new DaemonSet and deletes the old one, replacing ztunnel on every node at once whatever the update strategy", objects, z.Name, ds)
		if sa != z.ServiceAccount && !trustedByItsRevision(s, z, sa) {
			what += fmt.Sprintf(", and istiod does not trust the new account %s/%s", z.Namespace, sa)
		}
	}
	b.Finding(plan.Finding{Code: plan.CodeZtunnelUpgradeRenamesDaemonSet, Severity: plan.Blocking, Object: z.Ref(), Component: z.Component(),
		Message: fmt.Sprintf("upgrading ztunnel %s/%s (release %s) to chart %s renames %s", z.Namespace, z.Name, h.Name, v, what),
		Remedy:  remedy,
		Details: map[string]string{"daemonSet": z.Name, "newDaemonSet": ds, "serviceAccount": z.ServiceAccount, "newServiceAccount": sa,
			"chartVersion": v.String(), "resourceName": rn}})
}

// trustedByItsRevision reports whether the revision z connects to trusts account namespace/sa.
func trustedByItsRevision(s *mesh.Snapshot, z mesh.Ztunnel, sa string) bool {
	rev, ok := s.ZtunnelRevision(z)
	if !ok {
		return false
	}
	r, ok := s.Revision(rev)
	if !ok {
		return false
	}
	renamed := z
	renamed.ServiceAccount = sa
	return compat.TrustedBy(r, renamed)
}

// trustCommand is the command that adds namespace/sa to the trust list of the revision z connects to.
func trustCommand(s *mesh.Snapshot, z mesh.Ztunnel, sa string) string {
	rev, _ := s.ZtunnelRevision(z)
	r, ok := s.Revision(rev)
	if !ok {
		return "set env.CA_TRUSTED_NODE_ACCOUNTS of its istiod to every account it must trust"
	}
	renamed := z
	renamed.ServiceAccount = sa
	return compat.TrustRemedy(s, r, compat.TrustList(r, renamed))
}

// rendersClusterRole reports whether the ztunnel chart, with these values, renders the only
// cluster-scoped objects it names after resourceName: a ClusterRole and ClusterRoleBinding, which
// exist only with platform=openshift (for the SecurityContextConstraints "privileged"), and from
// 1.28 only when resourceScope is all or cluster (istio/istio@1.24.0 to @1.30.3 and @release-1.31:
// manifests/charts/ztunnel/templates/rbac.yaml). global.platform counts too: the chart flattens
// global into the top level before it renders (templates/zzz_profile.yaml, "Flatten globals").
// Every other object is namespaced.
func rendersClusterRole(values map[string]any) bool {
	platform, _ := values["platform"].(string)
	if global, ok := values["global"].(map[string]any); ok && platform == "" {
		platform, _ = global["platform"].(string)
	}
	scope, _ := values["resourceScope"].(string)
	return platform == "openshift" && (scope == "" || scope == "all" || scope == "cluster")
}

// ResourceNameCollision says why green, installed in another namespace with the values greenValues,
// may not take the resourceName name that blue's release (values blueValues, unknown when inferred)
// already uses: both would render the cluster-scoped ClusterRole and ClusterRoleBinding of that
// name, and Helm refuses to install an object another release owns. Without platform=openshift the
// chart renders no cluster-scoped object and the names do not meet: "" then. A blue release whose
// values are unknown cannot tell, and is refused too.
func ResourceNameCollision(name string, blueValues, greenValues map[string]any, blueInferred bool) string {
	switch {
	case blueInferred:
		return fmt.Sprintf("blue's Helm values are unknown (it was read without its release record), so whether it runs with platform=openshift, where the chart renders a cluster-scoped ClusterRole and ClusterRoleBinding named %q (templates/rbac.yaml), cannot be told: pick another resourceName", name)
	case rendersClusterRole(blueValues) || rendersClusterRole(greenValues):
		return fmt.Sprintf("with platform=openshift the chart renders a cluster-scoped ClusterRole and ClusterRoleBinding named %q (templates/rbac.yaml), which blue's release owns; Helm would refuse to install green's: pick another resourceName", name)
	}
	return ""
}

// resourceNameCollision applies ResourceNameCollision to this blue-green: blue's release as the
// snapshot has it, green's values as its install would pass them (blue's, then the caller's for
// the chart and for green's release).
func (x *bg) resourceNameCollision() string {
	blue, ok := steps.FindRelease(x.s, "ztunnel", x.blue.HelmRelease)
	if !ok || blue.Inferred {
		return ResourceNameCollision(x.greenName, nil, nil, true)
	}
	green := blue.Values
	if x.b != nil {
		green = x.b.UpgradeValues(mesh.HelmRelease{Name: x.greenRel, Chart: "ztunnel", Values: blue.Values}, nil)
	}
	return ResourceNameCollision(x.greenName, blue.Values, green, false)
}

// AddedZtunnel is green as the compatibility gate's rules on trust see it (compat.AddedZtunnel):
// its account, its namespace and the revision it connects to, which must trust it before it
// starts. It returns the errors Green returns.
func (g BlueGreen) AddedZtunnel(s *mesh.Snapshot, target mesh.Version, revision string) (compat.AddedZtunnel, error) {
	green, err := g.Green(s, target, revision)
	if err != nil {
		return compat.AddedZtunnel{}, err
	}
	return compat.AddedZtunnel{Account: green.Account(), Namespace: green.Namespace, Revision: revision}, nil
}
