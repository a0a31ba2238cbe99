package compat

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// istio-cni's own configuration against the namespaces, nodes and ConfigMap it serves:
// excludeNamespaces that list ambient namespaces, variables read from keys istio-cni-config lacks,
// and a plugin folder the platform's nodes do not use.

// From 1.30 the istio-cni node agent honours excludeNamespaces (EXCLUDE_NAMESPACES of
// istio-cni-config) and un-enrolls pods of those namespaces; before, only the plugin did and the
// agent still enrolled them (istio/istio@eed52ebb66ad releasenotes/notes/59295.yaml, upgrade note;
// the agent change is istio/istio#59471).
var cniAgentHonoursExclude = mesh.MustParseVersion("1.30.0")

// The cni chart's hostPath for the plugin binaries is cni-bin-dir: cniBinDir, else /home/kubernetes/bin
// when the Kubernetes version the chart is rendered with contains "-gke", else /opt/cni/bin
// (istio/istio@eed52ebb66ad manifests/charts/istio-cni/templates/daemonset.yaml, $detectedBinDir). GKE
// nodes mount /opt/cni/bin read-only and look for plugins in /home/kubernetes/bin (istio/istio#53849).
const (
	cniBinDirVolume = "cni-bin-dir"
	gkeCNIBinDir    = "/home/kubernetes/bin"
	gkePoolLabel    = "cloud.google.com/gke-nodepool"
)

func cniConfigRules(s *mesh.Snapshot, target mesh.Version) []plan.Finding {
	if s.CNI == nil {
		return nil
	}
	var out []plan.Finding
	out = append(out, checkExcludedAmbient(s, target)...)
	out = append(out, checkCNIEnvKeys(s)...)
	out = append(out, checkCNIBinDir(s)...)
	return out
}

// checkExcludedAmbient: ambient namespaces in excludeNamespaces. Blocking when istio-cni runs, or
// the upgrade brings it to, a version whose agent honours the list; info before, when the pods are
// still enrolled.
func checkExcludedAmbient(s *mesh.Snapshot, target mesh.Version) []plan.Finding {
	cni := s.CNI
	after := cni.Version
	if !target.IsZero() && after.Less(target) {
		after = target
	}
	honours := !after.IsZero() && !after.Less(cniAgentHonoursExclude)
	var out []plan.Finding
	for _, name := range cni.ExcludeNamespaces {
		var ns *mesh.Namespace
		for i := range s.Namespaces {
			if s.Namespaces[i].Name == name {
				ns = &s.Namespaces[i]
			}
		}
		if ns == nil || !ns.Ambient() && ns.Pods.AmbientEnabled+ns.Pods.AmbientPending == 0 {
			continue
		}
		sev, when := plan.Info, fmt.Sprintf("istio-cni %s still enrolls them; from %s its agent honours the list and un-enrolls them", cni.Version, cniAgentHonoursExclude)
		if honours {
			sev, when = plan.Blocking, fmt.Sprintf("istio-cni %s honours the list: its agent un-enrolls them (plaintext, and STRICT peers refuse them)", after)
		}
		ref := mesh.ObjectRef{Kind: "Namespace", Name: name}
		out = append(out, plan.Finding{Code: plan.CodeCNIExcludesAmbientNamespace, Severity: sev, Object: ref, Component: "cni",
			Related: []mesh.ObjectRef{{Kind: "DaemonSet", Namespace: cni.Namespace, Name: cni.Name}},
			Message: fmt.Sprintf("namespace %s is in ambient but listed in istio-cni's excludeNamespaces (EXCLUDE_NAMESPACES of ConfigMap %s/istio-cni-config): %s",
				name, cni.Namespace, when),
			Remedy:  fmt.Sprintf("remove %s from the cni chart's excludeNamespaces (helm upgrade %s ... --set excludeNamespaces=...) before upgrading istio-cni", name, orDefault(cni.HelmRelease, "istio-cni")),
			Details: map[string]string{"namespace": name, "cniVersion": cni.Version.String(), "from": cniAgentHonoursExclude.String()}})
	}
	return out
}

// checkCNIEnvKeys: variables of the install-cni container read from a key of istio-cni-config that
// the ConfigMap does not have. The kubelet then refuses to start the container
// (CreateContainerConfigError, "couldn't find key"; istio/istio#54846), unless the reference is
// optional. Other ConfigMaps are not read, so their keys are not judged.
func checkCNIEnvKeys(s *mesh.Snapshot) []plan.Finding {
	cni := s.CNI
	if cni.ConfigKeys == nil {
		return nil
	}
	have := map[string]bool{}
	for _, k := range cni.ConfigKeys {
		have[k] = true
	}
	var out []plan.Finding
	for _, e := range cni.ConfigMapEnv {
		if e.ConfigMap != "istio-cni-config" || e.Optional || have[e.Key] {
			continue
		}
		ref := mesh.ObjectRef{Kind: "DaemonSet", Namespace: cni.Namespace, Name: cni.Name}
		out = append(out, plan.Finding{Code: plan.CodeCNIEnvReferencesMissingKey, Severity: plan.Blocking, Object: ref, Component: "cni",
			Related: []mesh.ObjectRef{{Kind: "ConfigMap", Namespace: cni.Namespace, Name: e.ConfigMap}},
			Message: fmt.Sprintf("%s sets %s from key %s of ConfigMap %s/%s, which has no such key: the kubelet refuses to start its pods (CreateContainerConfigError), and nodes whose agent cannot start run no new pods",
				ref, e.Env, e.Key, cni.Namespace, e.ConfigMap),
			Remedy:  fmt.Sprintf("remove %s from the DaemonSet's env (a leftover of an older install; the chart does not render it) or reinstall istio-cni with Helm, which owns the whole template", e.Env),
			Details: map[string]string{"env": e.Env, "configMap": e.ConfigMap, "key": e.Key}})
	}
	return out
}

// checkCNIBinDir: GKE nodes (the chart's own test: the kubelet version contains "-gke"; or the GKE
// pool label) while the plugin is installed to another folder than /home/kubernetes/bin.
func checkCNIBinDir(s *mesh.Snapshot) []plan.Finding {
	cni := s.CNI
	path, ok := cni.HostPaths[cniBinDirVolume]
	if !ok || path == gkeCNIBinDir {
		return nil
	}
	var gke []string
	for _, n := range s.Nodes {
		if strings.Contains(n.KubeletVersion, "-gke") || n.Labels[gkePoolLabel] != "" {
			gke = append(gke, n.Name)
		}
	}
	if len(gke) == 0 {
		return nil
	}
	sort.Strings(gke)
	ref := mesh.ObjectRef{Kind: "DaemonSet", Namespace: cni.Namespace, Name: cni.Name}
	return []plan.Finding{{Code: plan.CodeCNIBinDirWrongForPlatform, Severity: plan.Blocking, Object: ref, Component: "cni",
		Message: fmt.Sprintf("%s installs the CNI plugin to %s, but %d node(s) run GKE (%s), whose kubelet reads plugins from %s and mounts %s read-only: the agent fails and no pod there is redirected",
			ref, path, len(gke), summarize(gke), gkeCNIBinDir, path),
		Remedy:  fmt.Sprintf("install the cni chart with --set global.platform=gke (or cniBinDir=%s); Helm 3.19 strips -gke from the version the chart detects it by (istio/istio#58094)", gkeCNIBinDir),
		Details: map[string]string{"path": path, "want": gkeCNIBinDir, "platform": "gke", "nodes": fmt.Sprint(len(gke))}}}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
