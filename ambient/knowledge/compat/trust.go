package compat

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// AddedZtunnel is a ztunnel a plan installs beside the running ones (a blue-green's green). The
// istiod revision it connects to must trust its service account before it starts: istiod signs a
// workload certificate for a ztunnel only when the caller's account is in CA_TRUSTED_NODE_ACCOUNTS
// (istio/istio@1.30.3 and @release-1.31: security/pkg/server/ca/node_auth.go,
// authenticateImpersonation, "is not allowed to impersonate").
type AddedZtunnel struct {
	// Account is its service account, "namespace/name".
	Account string
	// Namespace it runs in, which istiod must discover.
	Namespace string
	// Revision is the istiod revision it connects to; empty means every ambient revision. A
	// revision the snapshot does not hold is one the plan installs itself, with the trust it needs.
	Revision string
}

// envTrust is the variable istiod reads its trusted ztunnel accounts from.
const envTrust = "CA_TRUSTED_NODE_ACCOUNTS"

// checkAddedTrust applies, for each ztunnel a plan adds, the rules a plan that makes istiod trust it
// depends on. A revision that does not trust it yet must be one the plan can change: a Helm release
// whose trust list comes from env. Two cases get a blocking finding instead of a silent plan:
//
//   - the revision was not installed with Helm (istioctl, an operator, manifests): the plan has no
//     release to upgrade, and an edit of the Deployment is what the user's installer owns;
//   - its CA_TRUSTED_NODE_ACCOUNTS comes from valueFrom (the chart's envVarFrom): the chart renders
//     envVarFrom after env (istio/istio@1.30.3 and @release-1.31:
//     manifests/charts/istio-control/istio-discovery/templates/deployment.yaml) and the kubelet
//     keeps the last entry of a duplicated name, so the env value the plan writes is overridden.
//
// A revision without Helm values also gives a waivable finding for discovery: its
// meshConfig.discoverySelectors live in its mesh ConfigMap, which the snapshot does not read, and an
// istiod that does not select the new namespace writes no istio-ca-root-cert there
// (pilot/pkg/serviceregistry/kube/controller/namespacecontroller.go, same versions).
func checkAddedTrust(s *mesh.Snapshot, added []AddedZtunnel) []plan.Finding {
	var out []plan.Finding
	for _, z := range added {
		for _, r := range s.Revisions {
			if (z.Revision != "" && r.Name != z.Revision) || (z.Revision == "" && !r.Ambient && len(r.TrustedZtunnelAccounts) == 0 && !r.TrustedAccountsUnknown) {
				continue
			}
			out = append(out, addedTrust(s, r, z)...)
		}
	}
	return out
}

func addedTrust(s *mesh.Snapshot, r mesh.Revision, z AddedZtunnel) []plan.Finding {
	ref := mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}
	comp := "istiod/" + r.Name
	list := neededTrust(s, r, z.Account)
	value := strings.Join(list, ",")
	details := map[string]string{"revision": r.Name, "deployment": r.Namespace + "/" + r.Deployment, "account": z.Account, "env": envTrust, "value": value}
	h, helm := IstiodRelease(s, r)
	var out []plan.Finding
	switch {
	case r.TrustedAccountsUnknown:
		from, fix := valueFromSource(r, h, helm, value)
		out = append(out, plan.Finding{Code: plan.CodeIstiodTrustListFromValueFrom, Severity: plan.Blocking, Object: ref, Component: comp, Details: details,
			Message: fmt.Sprintf("istiod %q (Deployment %s/%s) reads %s with valueFrom%s: the env value a plan writes is rendered before it and overridden (the kubelet keeps the last entry of a name), so istiod would go on refusing the certificate requests of ztunnel %s",
				r.Name, r.Namespace, r.Deployment, envTrust, from, z.Account),
			Remedy: fix})
	case !helm && !slicesContains(r.TrustedZtunnelAccounts, z.Account):
		out = append(out, plan.Finding{Code: plan.CodeIstiodTrustNotPlannable, Severity: plan.Blocking, Object: ref, Component: comp, Details: details,
			Message: fmt.Sprintf("istiod %q (Deployment %s/%s) was not installed with Helm, so the plan cannot add ztunnel %s to its %s (trusts %v), and istiod would refuse that ztunnel's certificate requests",
				r.Name, r.Namespace, r.Deployment, z.Account, envTrust, r.TrustedZtunnelAccounts),
			Remedy: fmt.Sprintf("set %s=%s (every ztunnel account, comma-separated, no spaces) on Deployment %s/%s where its install is declared: istioctl or the IstioOperator, spec.values.pilot.env.%s; the Sail operator, the Istio resource's spec.values.pilot.env.%s; plain manifests, kubectl -n %s set env deployment/%s %s=%s. Then observe and plan again",
				envTrust, value, r.Namespace, r.Deployment, envTrust, envTrust, r.Namespace, r.Deployment, envTrust, value)})
	}
	if !helm && z.Namespace != "" {
		out = append(out, plan.Finding{Code: plan.CodeIstiodDiscoveryUnknown, Severity: plan.Waivable, Object: ref, Component: comp,
			Details: map[string]string{"revision": r.Name, "namespace": z.Namespace},
			Message: fmt.Sprintf("istiod %q (Deployment %s/%s) has no Helm values to read meshConfig.discoverySelectors from; if it sets them and they do not select namespace %s, istiod writes no istio-ca-root-cert there and the new ztunnel cannot start",
				r.Name, r.Namespace, r.Deployment, z.Namespace),
			Remedy: fmt.Sprintf("check discoverySelectors in its mesh config (kubectl -n %s get configmap %s -o jsonpath='{.data.mesh}'), label namespace %s so they select it, and waive", r.Namespace, meshConfigMap(r), z.Namespace)})
	}
	return out
}

// neededTrust is the whole list revision r must trust once the added account runs: what it trusts
// now when that is known, else every running ztunnel's account, then the added one.
func neededTrust(s *mesh.Snapshot, r mesh.Revision, account string) []string {
	var list []string
	if !r.TrustedAccountsUnknown {
		list = append(list, r.TrustedZtunnelAccounts...)
	}
	for _, z := range s.Ztunnels {
		if !slicesContains(list, z.Account()) {
			list = append(list, z.Account())
		}
	}
	if !slicesContains(list, account) {
		list = append(list, account)
	}
	return list
}

// valueFromSource says where the trust list comes from, as far as the release's envVarFrom value
// tells, and the change that makes it name value.
func valueFromSource(r mesh.Revision, h mesh.HelmRelease, helm bool, value string) (from, fix string) {
	restart := fmt.Sprintf("then restart istiod (kubectl -n %s rollout restart deployment/%s: a value from a ConfigMap or Secret is read when the pod starts), observe and plan again", r.Namespace, r.Deployment)
	find := fmt.Sprintf("kubectl -n %s get deployment %s -o jsonpath='{.spec.template.spec.containers[?(@.name==\"discovery\")].env[?(@.name==\"%s\")].valueFrom}'", r.Namespace, r.Deployment, envTrust)
	if helm {
		if kind, name, key, ok := envVarFromRef(h.Values); ok {
			from = fmt.Sprintf(" (%s %s/%s, key %s, from the release's envVarFrom)", kind, r.Namespace, name, key)
			patch := fmt.Sprintf("kubectl -n %s patch configmap %s --type merge -p '{\"data\":{\"%s\":\"%s\"}}'", r.Namespace, name, key, value)
			if kind == "Secret" {
				patch = fmt.Sprintf("kubectl -n %s patch secret %s --type merge -p '{\"stringData\":{\"%s\":\"%s\"}}'", r.Namespace, name, key, value)
			}
			return from, fmt.Sprintf("either write the whole list into it (%s), %s; or remove %s from envVarFrom of Helm release %s/%s so that the plan's env value applies",
				patch, restart, envTrust, h.Namespace, h.Name)
		}
	}
	return "", fmt.Sprintf("find the ConfigMap or Secret it reads (%s), write %s=%s into it, %s", find, envTrust, value, restart)
}

// envVarFromRef finds CA_TRUSTED_NODE_ACCOUNTS in an istiod release's envVarFrom value (a list of
// EnvVar, top level or under pilot).
func envVarFromRef(values map[string]any) (kind, name, key string, ok bool) {
	lists := []any{values["envVarFrom"]}
	if pilot, isMap := values["pilot"].(map[string]any); isMap {
		lists = append(lists, pilot["envVarFrom"])
	}
	for _, l := range lists {
		entries, _ := l.([]any)
		for _, e := range entries {
			m, _ := e.(map[string]any)
			if m["name"] != envTrust {
				continue
			}
			vf, _ := m["valueFrom"].(map[string]any)
			for _, src := range []struct{ field, kind string }{{"configMapKeyRef", "ConfigMap"}, {"secretKeyRef", "Secret"}} {
				if ref, isRef := vf[src.field].(map[string]any); isRef {
					name, _ = ref["name"].(string)
					key, _ = ref["key"].(string)
					return src.kind, name, key, true
				}
			}
		}
	}
	return "", "", "", false
}

// meshConfigMap is the ConfigMap holding a revision's mesh config: istio, or istio-<revision>
// (istio/istio@1.30.3: manifests/charts/istio-control/istio-discovery/templates/configmap.yaml).
func meshConfigMap(r mesh.Revision) string {
	if r.Name == "" || r.Name == "default" {
		return "istio"
	}
	return "istio-" + r.Name
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
