//go:build e2e

package main

import (
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/internal/helmrecord"
	"sigs.k8s.io/yaml"
)

// prune cuts one dump file down to what the observer reads, so the committed corpus is small and
// regenerates with few spurious changes; dump checks the pruned files observe exactly as the raw
// ones. What goes:
//
//   - empty lists (an optional kind with no objects), except those of mesh.ConfigGroups: the
//     observer reads a dump's missing file of such a kind as unread (Observation.Unread), an empty
//     one as none;
//   - CustomResourceDefinitions of groups other than Istio's and the Gateway API's, and every CRD's
//     spec and status (the observer reads CRD metadata only; the schemas are upstream text);
//   - of a Helm release record, everything but its name, namespace, revision, status, chart name and
//     versions and the user-supplied values (the chart's templates and the rendered manifest are
//     upstream text the observer never reads);
//   - what changes at every run without meaning anything: uids, resourceVersions, creation and
//     transition timestamps, managedFields, webhook CA bundles (the fake istiod's CA is made at
//     start), pod IPs and start times.
//
// keep is false when nothing is left.
func prune(file string, data []byte) (out []byte, keep bool, err error) {
	if file == "version.yaml" {
		return data, true, nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, false, err
	}
	items, _ := doc["items"].([]any)
	var kept []any
	for _, it := range items {
		o, _ := it.(map[string]any)
		if o == nil {
			continue
		}
		ok, err := pruneObject(o)
		if err != nil {
			return nil, false, err
		}
		if ok {
			kept = append(kept, o)
		}
	}
	if len(kept) == 0 {
		if configListFile(file) {
			return []byte(emptyList), true, nil
		}
		return nil, false, nil
	}
	doc["items"] = kept
	delete(doc, "metadata") // the List's resourceVersion
	out, err = yaml.Marshal(doc)
	return out, err == nil, err
}

// emptyList is how a pruned dump keeps a kind of mesh.ConfigGroups with no objects.
const emptyList = "apiVersion: v1\nitems: []\nkind: List\n"

// configListFile reports whether a dump file ("envoyfilters.networking.istio.io.yaml") lists a
// kind of mesh.ConfigGroups.
func configListFile(file string) bool {
	res, ok := strings.CutSuffix(file, ".yaml")
	_, group, dotted := strings.Cut(res, ".")
	return ok && dotted && mesh.IsConfigGroup(group)
}

func pruneObject(o map[string]any) (bool, error) {
	kind, _ := o["kind"].(string)
	meta, _ := o["metadata"].(map[string]any)
	stripMeta(meta)
	switch kind {
	case "CustomResourceDefinition":
		name, _ := meta["name"].(string)
		_, group, _ := strings.Cut(name, ".")
		if group != "gateway.networking.k8s.io" && group != "istio.io" && !strings.HasSuffix(group, ".istio.io") {
			return false, nil
		}
		delete(o, "spec")
		delete(o, "status")
	case "Secret":
		if t, _ := o["type"].(string); t == "helm.sh/release.v1" {
			data, _ := o["data"].(map[string]any)
			rel, _ := data["release"].(string)
			small, err := pruneRelease(rel)
			if err != nil {
				return false, fmt.Errorf("Helm record %s: %w", meta["name"], err)
			}
			data["release"] = small
		}
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		hooks, _ := o["webhooks"].([]any)
		for _, h := range hooks {
			if cc, ok := h.(map[string]any)["clientConfig"].(map[string]any); ok {
				delete(cc, "caBundle")
			}
		}
	case "Pod":
		prunePodSpec(o)
		if st, ok := o["status"].(map[string]any); ok {
			for _, k := range []string{"podIP", "podIPs", "hostIP", "hostIPs", "startTime"} {
				delete(st, k)
			}
			delete(st, "containerStatuses")
			delete(st, "initContainerStatuses")
		}
	}
	stripTimes(o["status"])
	return true, nil
}

// prunePodSpec drops the parts of a pod's spec the observer never reads (it reads names, images,
// commands, probes, volumes and their mounts, the node, host network and the grace period).
func prunePodSpec(o map[string]any) {
	spec, _ := o["spec"].(map[string]any)
	if spec == nil {
		return
	}
	for _, k := range []string{"tolerations", "securityContext", "affinity", "dnsPolicy", "schedulerName", "enableServiceLinks",
		"preemptionPolicy", "priority", "restartPolicy", "serviceAccount", "topologySpreadConstraints"} {
		delete(spec, k)
	}
	for _, key := range []string{"containers", "initContainers"} {
		cs, _ := spec[key].([]any)
		for _, c := range cs {
			m, _ := c.(map[string]any)
			for _, k := range []string{"securityContext", "resources", "env", "envFrom", "ports", "terminationMessagePath",
				"terminationMessagePolicy", "imagePullPolicy", "lifecycle"} {
				delete(m, k)
			}
		}
	}
}

func stripMeta(meta map[string]any) {
	if meta == nil {
		return
	}
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink"} {
		delete(meta, k)
	}
	if refs, ok := meta["ownerReferences"].([]any); ok {
		for _, r := range refs {
			if m, ok := r.(map[string]any); ok {
				delete(m, "uid")
			}
		}
	}
	if ann, ok := meta["annotations"].(map[string]any); ok {
		delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
		delete(ann, "deployment.kubernetes.io/revision")
		if len(ann) == 0 {
			delete(meta, "annotations")
		}
	}
}

// stripTimes drops the timestamps of status conditions (and node heartbeats), recursively.
func stripTimes(v any) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range []string{"lastTransitionTime", "lastHeartbeatTime", "lastProbeTime", "lastUpdateTime"} {
			delete(t, k)
		}
		for _, c := range t {
			stripTimes(c)
		}
	case []any:
		for _, c := range t {
			stripTimes(c)
		}
	}
}

// pruneRelease re-encodes a Helm release record with only the fields the observer reads. The value
// is the Secret's base64 of Helm's own encoding, base64 of gzipped JSON (helm.sh/helm/v3
// pkg/storage/driver/util.go, encodeRelease).
func pruneRelease(secretValue string) (string, error) {
	enc, err := base64.StdEncoding.DecodeString(secretValue)
	if err != nil {
		return "", err
	}
	r, err := helmrecord.Decode(enc)
	if err != nil {
		return "", err
	}
	helmEnc, err := helmrecord.Encode(r, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(helmEnc), nil
}
