package observe

import (
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultReleaseNamespace is where DumpCommands saves Helm release records when
// DumpOptions.ReleaseNamespaces is empty.
const DefaultReleaseNamespace = "istio-system"

// DumpOptions tune DumpCommands. The zero value is ready to use.
type DumpOptions struct {
	// Kubectl is the kubectl command and any flags before the subcommand, one word each; nil means
	// {"kubectl"}. For example {"kubectl", "--context", "prod"}.
	Kubectl []string
	// ReleaseNamespaces are the namespaces holding the Helm releases of Istio's charts (base,
	// istiod, cni, ztunnel, gateway): their release records are saved. Empty means istio-system.
	// `helm list -A` shows them in its NAMESPACE column; without Helm at hand,
	//
	//	kubectl get deployments,daemonsets -A -l app.kubernetes.io/part-of=istio \
	//	  -o jsonpath='{range .items[*]}{.metadata.annotations.meta\.helm\.sh/release-namespace}{"\n"}{end}' | sort -u
	//
	// lists the release namespaces of Istio's workloads. A release whose records are not saved is
	// still seen, from its objects (mesh.HelmRelease.Inferred), without its values.
	ReleaseNamespaces []string
}

// DumpCommand is one command of a dump: run Argv and save its standard output as File.
type DumpCommand struct {
	// Argv is the command line, Argv[0] the program.
	Argv []string
	// File is the name the output is saved under, in the dump's folder.
	File string
	// Optional commands read a kind the cluster may not serve (Istio's or the Gateway API's custom
	// resources, Karpenter); kubectl then fails with `the server doesn't have a resource type`,
	// and the dump goes on without that file.
	Optional bool
}

// String renders the command as one shell line: `kubectl get ... > file.yaml`, followed by
// `|| true` when it is optional.
func (c DumpCommand) String() string {
	words := make([]string, len(c.Argv))
	for i, w := range c.Argv {
		words[i] = shellQuote(w)
	}
	line := strings.Join(words, " ") + " > " + shellQuote(c.File)
	if c.Optional {
		line += " || true"
	}
	return line
}

// DumpCommands returns the commands that save what Dir reads from a cluster, to be run in an empty
// folder whose path is then given to Dir:
//
//   - one `kubectl get <kinds> -A -o yaml` of every kind the observer reads that every cluster
//     serves;
//   - the kinds the observer narrows with a selector (the istio-cni-config ConfigMaps, the Services
//     labelled istio.io/tag), each with that selector, so that no other ConfigMap or Service is
//     saved;
//   - each optional kind on its own: kubectl refuses a whole command when one of its resource types
//     is not served, so these are marked Optional;
//   - the Helm release records of each release namespace (`kubectl get secrets -n <ns> -l owner=helm`):
//     Dir decodes only those of Istio's releases and skips the others undecoded;
//   - `kubectl version -o yaml`, which gives the API server's version (Cluster.KubernetesVersionSource
//     "kubectl-version").
//
// The kinds come from the table Live lists, so a dump holds what a live observation reads and the
// two give the same snapshot.
func DumpCommands(opts DumpOptions) []DumpCommand {
	kubectl := opts.Kubectl
	if len(kubectl) == 0 {
		kubectl = []string{"kubectl"}
	}
	argv := func(args ...string) []string {
		return append(append([]string(nil), kubectl...), args...)
	}
	var all []string
	var filtered, optional []DumpCommand
	var records *kind
	files := map[string]int{}
	file := func(res string) string { // a kind listed twice (ConfigMaps) gets two files
		files[res]++
		if n := files[res]; n > 1 {
			return fmt.Sprintf("%s.%d.yaml", res, n)
		}
		return res + ".yaml"
	}
	for i := range kinds {
		k := &kinds[i]
		res := k.resource()
		flags := selectorFlags(k.listOpts)
		switch {
		case k.perRelease:
			records = k
		case k.optional:
			optional = append(optional, DumpCommand{Argv: argv(append([]string{"get", res, "-A"}, append(flags, "-o", "yaml")...)...),
				File: file(res), Optional: true})
		case len(flags) > 0:
			filtered = append(filtered, DumpCommand{Argv: argv(append([]string{"get", res, "-A"}, append(flags, "-o", "yaml")...)...),
				File: file(res)})
		default:
			all = append(all, res)
		}
	}
	out := []DumpCommand{{Argv: argv("get", strings.Join(all, ","), "-A", "-o", "yaml"), File: "cluster.yaml"}}
	out = append(out, filtered...)
	out = append(out, optional...)
	if records != nil {
		namespaces := opts.ReleaseNamespaces
		if len(namespaces) == 0 {
			namespaces = []string{DefaultReleaseNamespace}
		}
		for _, ns := range namespaces {
			out = append(out, DumpCommand{Argv: argv(append([]string{"get", records.resource(), "-n", ns}, append(selectorFlags(records.listOpts), "-o", "yaml")...)...),
				File: "helm-releases." + ns + ".yaml"})
		}
	}
	return append(out, DumpCommand{Argv: argv("version", "-o", "yaml"), File: "version.yaml"})
}

// resource names the kind for kubectl: "pods" in the core group, "<plural>.<group>" otherwise,
// which is never ambiguous (Istio and the Gateway API both have "gateways").
func (k kind) resource() string {
	if k.group == "" {
		return k.plural
	}
	return k.plural + "." + k.group
}

// selectorFlags turns a kind's list options into kubectl's -l and --field-selector flags.
func selectorFlags(opts []client.ListOption) []string {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	var flags []string
	if lo.LabelSelector != nil && !lo.LabelSelector.Empty() {
		flags = append(flags, "-l", lo.LabelSelector.String())
	}
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		flags = append(flags, "--field-selector", lo.FieldSelector.String())
	}
	return flags
}

// shellQuote quotes a word for a POSIX shell when it holds anything but safe characters.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@%+") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
