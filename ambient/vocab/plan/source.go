package plan

import (
	"fmt"
	"strings"
)

// SourceDemo is the Source of a plan made from the embedded demo mesh (ambient/io/demo), which is no
// cluster: its nodes, releases and workloads are made up, however real their names look.
const SourceDemo = "demo"

// LiveSource returns the Source of a plan made from a live cluster: the kubeconfig context it was
// reached through ("" for an in-cluster configuration) and its API server.
func LiveSource(context, server string) string { return "live:" + context + "@" + server }

// OfflineSource returns the Source of a plan made from a dump of a cluster saved in folder (the
// kubectl get -o yaml output observe.Dir reads).
func OfflineSource(folder string) string { return "offline:" + folder }

// ParseSource splits a plan's Source into its kind ("live", "offline", "demo", or "" when none was
// recorded), the kubeconfig context and API server of a live one, and the folder of an offline one.
func ParseSource(src string) (kind, context, server, folder string) {
	switch {
	case src == SourceDemo:
		return SourceDemo, "", "", ""
	case strings.HasPrefix(src, "offline:"):
		return "offline", "", "", strings.TrimPrefix(src, "offline:")
	case strings.HasPrefix(src, "live:"):
		rest := strings.TrimPrefix(src, "live:")
		// A context name may hold "@" (user@cluster); a server URL does not.
		i := strings.LastIndex(rest, "@")
		if i < 0 {
			return "live", "", rest, ""
		}
		return "live", rest[:i], rest[i+1:], ""
	}
	return "", "", "", ""
}

// SourceText says in words where the snapshot of a plan's Source came from: "the live cluster of
// kubeconfig context prod (API server https://10.0.0.1:6443)", "the dump in folder ./dump (not a
// live cluster)", "the embedded demo mesh (no cluster: its nodes and workloads are made up)".
func SourceText(src string) string {
	kind, context, server, folder := ParseSource(src)
	switch kind {
	case SourceDemo:
		return "the embedded demo mesh (no cluster: its nodes, releases and workloads are made up)"
	case "offline":
		return fmt.Sprintf("the dump in folder %s (files saved with kubectl, not a live cluster)", folder)
	case "live":
		if context == "" {
			return fmt.Sprintf("the live cluster at API server %s (in-cluster configuration)", server)
		}
		return fmt.Sprintf("the live cluster of kubeconfig context %s (API server %s)", context, server)
	}
	if src != "" {
		return src
	}
	return "an unrecorded source"
}
