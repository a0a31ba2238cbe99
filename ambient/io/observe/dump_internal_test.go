package observe

import (
	"slices"
	"strings"
	"testing"
)

// commandFor finds the dump command that saves res.
// commandFor finds the one command that saves res with exactly the given selector flags.
func commandFor(t *testing.T, cmds []DumpCommand, res string, flags []string) DumpCommand {
	t.Helper()
	var found []DumpCommand
	for _, c := range cmds {
		if len(c.Argv) > 2 && c.Argv[1] == "get" && slices.Contains(strings.Split(c.Argv[2], ","), res) &&
			slices.Equal(c.Argv[4:len(c.Argv)-2], flags) {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s with selector %v is saved by %d commands, want 1", res, flags, len(found))
	}
	files := map[string]bool{}
	for _, c := range cmds {
		if files[c.File] {
			t.Fatalf("two commands write %s", c.File)
		}
		files[c.File] = true
	}
	return found[0]
}

func TestTheDumpSavesEveryKindTheObserverReads(t *testing.T) {
	cmds := DumpCommands(DumpOptions{})
	for _, k := range kinds {
		if k.perRelease {
			continue
		}
		t.Run(k.label(), func(t *testing.T) {
			c := commandFor(t, cmds, k.resource(), selectorFlags(k.listOpts))
			if !slices.Contains(c.Argv, "-A") || !slices.Equal(c.Argv[len(c.Argv)-2:], []string{"-o", "yaml"}) {
				t.Errorf("%s: want every namespace (-A) in YAML, got %v", k.resource(), c.Argv)
			}
			if c.Optional != k.optional {
				t.Errorf("%s: Optional = %v, want %v", k.resource(), c.Optional, k.optional)
			}
			flags := selectorFlags(k.listOpts)
			if len(flags) > 0 && !strings.Contains(strings.Join(c.Argv, " "), strings.Join(flags, " ")) {
				t.Errorf("%s: command %v lacks the observer's selector %v", k.resource(), c.Argv, flags)
			}
			// kubectl fails a whole command when one type is not served; optional and narrowed
			// kinds therefore have commands of their own.
			if (k.optional || len(flags) > 0) && c.Argv[2] != k.resource() {
				t.Errorf("%s shares command %v", k.resource(), c.Argv)
			}
		})
	}
}

func TestDumpCommandLines(t *testing.T) {
	tests := []struct {
		name string
		opts DumpOptions
		want []string // lines that must be among the commands
		not  []string // substrings no line may hold
	}{
		{name: "by default istio-system's release records and the server version are saved",
			want: []string{
				"kubectl get secrets -n istio-system -l owner=helm -o yaml > helm-releases.istio-system.yaml",
				"kubectl version -o yaml > version.yaml",
				"kubectl get configmaps -A --field-selector metadata.name=istio-cni-config -o yaml > configmaps.yaml",
				"kubectl get configmaps -A -l grafana_dashboard -o yaml > configmaps.2.yaml",
				"kubectl get gateways.gateway.networking.k8s.io -A -o yaml > gateways.gateway.networking.k8s.io.yaml || true",
			},
			not: []string{"get secrets -A", "secrets,", ",secrets", "configmaps,"}},
		{name: "each release namespace gets its own records command",
			opts: DumpOptions{ReleaseNamespaces: []string{"istio-system", "istio-ingress"}},
			want: []string{
				"kubectl get secrets -n istio-system -l owner=helm -o yaml > helm-releases.istio-system.yaml",
				"kubectl get secrets -n istio-ingress -l owner=helm -o yaml > helm-releases.istio-ingress.yaml",
			}},
		{name: "the kubectl command and its flags prefix every line, quoted for the shell",
			opts: DumpOptions{Kubectl: []string{"kubectl", "--context", "prod cluster", "--kubeconfig=it's.yaml"}},
			want: []string{`kubectl --context 'prod cluster' '--kubeconfig=it'\''s.yaml' version -o yaml > version.yaml`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			for _, c := range DumpCommands(tt.opts) {
				lines = append(lines, c.String())
			}
			for _, w := range tt.want {
				if !slices.Contains(lines, w) {
					t.Errorf("no line %q in\n%s", w, strings.Join(lines, "\n"))
				}
			}
			for _, l := range lines {
				for _, n := range tt.not {
					if strings.Contains(l, n) {
						t.Errorf("line %q holds %q", l, n)
					}
				}
			}
			if first := lines[0]; !strings.HasPrefix(first, kubectlPrefix(tt.opts)+" get namespaces,nodes,") || !strings.HasSuffix(first, " -A -o yaml > cluster.yaml") {
				t.Errorf("first line %q, want the kinds every cluster serves in cluster.yaml", first)
			}
		})
	}
}

// kubectlPrefix is how the kubectl words of o start every line.
func kubectlPrefix(o DumpOptions) string {
	if len(o.Kubectl) == 0 {
		return "kubectl"
	}
	var w []string
	for _, s := range o.Kubectl {
		w = append(w, shellQuote(s))
	}
	return strings.Join(w, " ")
}
