// Package cli holds what the example programs share, so each stays a thin program over the public
// API: the command line (one set of planning flags, --help with an example per flag, the offline dump
// commands, exit codes), picking the mesh to observe, the verdict on a plan, progress output for a
// terminal, a pipe or a pipeline, and the advice after a failed run.
package cli

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/demo"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/observe"
)

// Source is where the examples read the mesh from.
type Source struct {
	// Kubeconfig, Context and FromDir are --kubeconfig, --context and --from-dir.
	Kubeconfig, Context, FromDir string
	offline                      bool
}

// Register adds --kubeconfig, --context and, with offline, --from-dir (and the dump commands that
// make a folder for it to --help).
func (s *Source) Register(c *Command, offline bool) {
	s.offline = offline
	c.fs.StringVar(&s.Kubeconfig, "kubeconfig", "", "")
	c.fs.StringVar(&s.Context, "context", "", "")
	c.add(Spec{Name: "kubeconfig", Arg: "FILE", Usage: "observe the live cluster of this kubeconfig (default: $KUBECONFIG, ~/.kube/config)",
		Example: "--kubeconfig ~/.kube/config"})
	c.add(Spec{Name: "context", Arg: "NAME", Usage: "kubeconfig context (default: the current one)", Example: "--context prod-eu1"})
	if !offline {
		return
	}
	c.fs.StringVar(&s.FromDir, "from-dir", "", "")
	c.add(Spec{Name: "from-dir", Arg: "DIR", Usage: "observe a dump of the cluster saved in DIR (the commands below) instead of a live cluster; neither: the embedded demo mesh",
		Example: "--from-dir ./dump"})
	c.Sections = append(c.Sections, DumpSection(c.Name))
}

// DumpSection lists the commands that save a dump for --from-dir (observe.DumpCommands).
func DumpSection(name string) string {
	var b strings.Builder
	b.WriteString("Offline (--from-dir): save a dump with kubectl pointed at the cluster,\n  mkdir dump && cd dump\n")
	for _, cmd := range observe.DumpCommands(observe.DumpOptions{}) {
		b.WriteString("  " + cmd.String() + "\n")
	}
	fmt.Fprintf(&b, "then: %s --from-dir dump. For Helm releases in other namespaces (helm list -A), repeat the\n", name)
	b.WriteString("helm-releases line with -n <namespace> > helm-releases.<namespace>.yaml.")
	return b.String()
}

// Live reports whether --kubeconfig or --context was given.
func (s *Source) Live() bool { return s.Kubeconfig != "" || s.Context != "" }

// Cluster is a connection to a live cluster.
type Cluster struct {
	// Config is its REST configuration; Client a controller-runtime client with observe.Scheme.
	Config *rest.Config
	Client client.Client
	dc     discovery.DiscoveryInterface
	// watchList makes Observe stream kinds with watch-lists (observe.Options.WatchList): the
	// observe-only connection, whose reader also watches.
	watchList bool
}

// Observe observes the live mesh.
func (c *Cluster) Observe(ctx context.Context) (*mesh.Snapshot, error) {
	return observe.Live(ctx, c.Client, observe.Options{ServerVersion: c.dc, WatchList: c.watchList})
}

// Connect connects to the cluster of --kubeconfig and --context (the usual kubeconfig rules when
// neither is set).
func (s *Source) Connect() (*Cluster, error) { return s.connect(false) }

// connect connects; observeOnly makes the client read built-in kinds as protobuf and stream them
// with watch-lists (the scale bench's fastest and leanest observation; a server or RBAC that refuses
// watch-lists is listed in pages), for programs that only observe.
func (s *Source) connect(observeOnly bool) (*Cluster, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: s.Kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{CurrentContext: s.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if cfg.QPS == 0 { // kubectl's defaults, not client-go's 5 a second: a plan has thousands of calls
		cfg.QPS, cfg.Burst = 50, 300
	}
	var c client.Client
	if observeOnly {
		ccfg := rest.CopyConfig(cfg)
		ccfg.ContentType = "application/vnd.kubernetes.protobuf"
		c, err = client.NewWithWatch(ccfg, client.Options{Scheme: observe.Scheme()})
	} else {
		c, err = client.New(cfg, client.Options{Scheme: observe.Scheme()})
	}
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Config: cfg, Client: c, dc: dc, watchList: observeOnly}, nil
}

// Observe returns the snapshot: live when --kubeconfig or --context is set, offline with --from-dir,
// else the embedded demo mesh.
func (s *Source) Observe(ctx context.Context) (*mesh.Snapshot, error) {
	switch {
	case s.FromDir != "" && s.Live():
		return nil, fmt.Errorf("%w: use either --from-dir or --kubeconfig/--context, not both", ErrUsage)
	case s.FromDir != "":
		return observe.Dir(ctx, s.FromDir, observe.Options{})
	case s.Live():
		c, err := s.connect(true)
		if err != nil {
			return nil, err
		}
		return c.Observe(ctx)
	}
	return demo.Snapshot(ctx)
}
