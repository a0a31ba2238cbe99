// Package cli holds what the example programs share: picking the mesh to observe from flags.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/demo"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/observe"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

// Source is where the examples read the mesh from.
type Source struct {
	Kubeconfig, Context, FromDir string
}

// Register adds --kubeconfig, --context and --from-dir to the flag set.
func (s *Source) Register(fs *flag.FlagSet) {
	fs.StringVar(&s.Kubeconfig, "kubeconfig", "", "observe the live cluster of this kubeconfig")
	fs.StringVar(&s.Context, "context", "", "kubeconfig context (with --kubeconfig, or the default kubeconfig)")
	fs.StringVar(&s.FromDir, "from-dir", "", "observe `kubectl get -o yaml` output in this folder")
}

// Observe returns the snapshot: live when --kubeconfig or --context is set, offline with --from-dir,
// else the embedded demo mesh.
func (s *Source) Observe(ctx context.Context) (*mesh.Snapshot, error) {
	switch {
	case s.FromDir != "" && (s.Kubeconfig != "" || s.Context != ""):
		return nil, fmt.Errorf("use either --from-dir or --kubeconfig/--context, not both")
	case s.FromDir != "":
		return observe.Dir(ctx, s.FromDir, observe.Options{})
	case s.Kubeconfig != "" || s.Context != "":
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: s.Kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
			&clientcmd.ConfigOverrides{CurrentContext: s.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		cfg.ContentType = "application/vnd.kubernetes.protobuf" // smaller, faster pages for built-in kinds
		c, err := client.New(cfg, client.Options{Scheme: observe.Scheme()})
		if err != nil {
			return nil, err
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return observe.Live(ctx, c, observe.Options{ServerVersion: dc})
	}
	return demo.Snapshot(ctx)
}

// CheckFormat refuses an -o value other than markdown, yaml and json.
func CheckFormat(format string) error {
	switch format {
	case "markdown", "yaml", "json":
		return nil
	}
	return fmt.Errorf("-o %q: want markdown, yaml or json", format)
}

// WriteEncoded writes the plan as YAML or JSON and reports true, or reports false for markdown, which
// each example renders with its own preamble.
func WriteEncoded(w io.Writer, p *plan.Plan, format string) (bool, error) {
	enc := plan.EncodeYAML
	switch format {
	case "json":
		enc = plan.EncodeJSON
	case "yaml":
	default:
		return false, nil
	}
	b, err := enc(p)
	if err != nil {
		return true, err
	}
	_, err = w.Write(b)
	return true, err
}
