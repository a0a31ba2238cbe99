// Package cli holds what the example programs share, so each stays a thin program over the public
// API with one contract: the command line (the source of the mesh, the planning and gate flags, the
// apply flags, --help with an example per flag, --list-codes, the offline dump commands), its
// checks and exit codes, the output that opens with where the mesh was read from, the remedies of
// findings named as flags, the verdict on a plan, applying it with progress for a terminal, a pipe
// or a pipeline, and the advice after a failed run.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Source is where an example reads the mesh from: the live cluster of the kubeconfig (--kubeconfig,
// or --context alone: $KUBECONFIG or ~/.kube/config, as kubectl reads it), a dump saved with kubectl
// (--from-dir), or the embedded demo mesh (--demo). Every example chooses it the same way, and none
// has a default: a live cluster is read only when --kubeconfig or --context says so.
type Source struct {
	// Kubeconfig, Context and FromDir are --kubeconfig, --context and --from-dir; Demo is --demo.
	Kubeconfig, Context, FromDir string
	Demo                         bool
	offline, demoRun             bool
}

// Register adds --kubeconfig, --context and, with offline, --from-dir and --demo (and the dump
// commands that make a folder for --from-dir to --help).
func (s *Source) Register(c *Command, offline bool) {
	s.offline = offline
	c.fs.StringVar(&s.Kubeconfig, "kubeconfig", "", "")
	c.fs.StringVar(&s.Context, "context", "", "")
	c.add(Spec{Name: "kubeconfig", Arg: "FILE", Usage: "observe the live cluster of this kubeconfig (with --context alone: $KUBECONFIG, else ~/.kube/config, as kubectl reads them); no cluster is read without one of the two",
		Example: "--kubeconfig ~/.kube/config"})
	c.add(Spec{Name: "context", Arg: "NAME", Usage: "kubeconfig context (default: the current one)", Example: "--context prod-eu1"})
	c.check(func() error {
		if s.Kubeconfig == "" {
			return nil
		}
		if _, err := os.Stat(s.Kubeconfig); err != nil {
			return usage("--kubeconfig %s: %v", s.Kubeconfig, errors.Unwrap(err))
		}
		return nil
	})
	if !offline {
		c.check(func() error {
			if !c.IsSet("kubeconfig") && !c.IsSet("context") && !s.Demo {
				return usage("say which cluster: --kubeconfig FILE or --context NAME (a run never reads a kubeconfig it was not pointed at, so that no cluster is changed by accident)")
			}
			return nil
		})
		return
	}
	c.fs.StringVar(&s.FromDir, "from-dir", "", "")
	c.add(Spec{Name: "from-dir", Arg: "DIR", Usage: "observe a dump of the cluster saved in DIR (the commands below) instead of a live cluster",
		Example: "--from-dir ./dump"})
	c.fs.BoolVar(&s.Demo, "demo", false, "")
	c.add(Spec{Name: "demo", Usage: "plan the embedded demo mesh (Istio 1.30.3, 14 made-up nodes) instead of a cluster; its plans apply to no cluster",
		Example: "--demo"})
	c.Sections = append(c.Sections, DumpSection(c.Name))
	c.check(func() error {
		live := c.IsSet("kubeconfig") || c.IsSet("context")
		n := 0
		for _, b := range []bool{live, s.FromDir != "", s.Demo} {
			if b {
				n++
			}
		}
		if n > 1 {
			return usage("say where the mesh is read from once: --kubeconfig/--context (a live cluster), --from-dir (a dump) or --demo (the embedded demo mesh)")
		}
		if n == 0 { // no default: a kubeconfig lying in ~/.kube must not make a try-out plan a production cluster
			return usage("say where the mesh is read from: --demo (the embedded demo mesh), --from-dir DIR (a dump saved with kubectl, see --help) " +
				"or --kubeconfig FILE / --context NAME (a live cluster; never read unless one of them is given)")
		}
		if s.FromDir != "" {
			if fi, err := os.Stat(s.FromDir); err != nil || !fi.IsDir() {
				return usage("--from-dir %s: not a folder", s.FromDir)
			}
		}
		return nil
	})
}

// DumpSection lists the commands that save a dump for --from-dir (observe.DumpCommands).
func DumpSection(name string) string {
	var b strings.Builder
	b.WriteString("Offline (--from-dir): save a dump with kubectl pointed at the cluster,\n  mkdir dump && cd dump\n")
	for _, cmd := range observe.DumpCommands(observe.DumpOptions{}) {
		b.WriteString("  " + cmd.String() + "\n")
	}
	fmt.Fprintf(&b, "then, from the folder above it (cd ..): %s --from-dir dump. For Helm releases in other namespaces\n(helm list -A), repeat the ", name)
	b.WriteString("helm-releases line with -n <namespace> > helm-releases.<namespace>.yaml.")
	return b.String()
}

// Live reports whether the mesh is read from a live cluster: neither --from-dir nor --demo.
func (s *Source) Live() bool { return s.FromDir == "" && !s.Demo }

// Cluster is a connection to a live cluster.
type Cluster struct {
	// Config is its REST configuration; Client a controller-runtime client with observe.Scheme.
	Config *rest.Config
	Client client.Client
	// Source names the cluster as plans record it (plan.LiveSource: context and API server).
	Source string
	dc     discovery.DiscoveryInterface
	// watchList makes Observe stream kinds with watch-lists (observe.Options.WatchList): the
	// observe-only connection, whose reader also watches.
	watchList bool
	// memory is set for the in-memory demo cluster (Source.RegisterDemoRun).
	memory *memory
}

// InMemory reports whether the cluster is the in-memory demo cluster, which nothing outside the
// process sees.
func (c *Cluster) InMemory() bool { return c.memory != nil }

// Observe observes the live mesh.
func (c *Cluster) Observe(ctx context.Context) (*mesh.Snapshot, error) {
	return observe.Live(ctx, c.Client, observe.Options{ServerVersion: c.dc, WatchList: c.watchList})
}

// Connect connects to the cluster of --kubeconfig and --context (the usual kubeconfig rules when
// neither is set). No kubeconfig at all, a context it lacks, is a usage error that says which flag
// to pass.
func (s *Source) Connect() (*Cluster, error) {
	if s.InMemory() {
		return connectMemory(context.Background())
	}
	return s.connect(false)
}

// connect connects; observeOnly makes the client read built-in kinds as protobuf and stream them
// with watch-lists (the scale bench's fastest and leanest observation; a server or RBAC that refuses
// watch-lists is listed in pages), for programs that only observe.
func (s *Source) connect(observeOnly bool) (*Cluster, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: s.Kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: s.Context})
	cfg, err := cc.ClientConfig()
	if raw, rerr := cc.RawConfig(); err != nil && rerr == nil && s.Context != "" && raw.Contexts[s.Context] == nil {
		// client-go reports a missing context as an invalid kubeconfig; say which flag is wrong
		if len(raw.Contexts) == 0 {
			err = clientcmd.ErrEmptyConfig
		} else {
			err = clientcmd.ErrNoContext
		}
	}
	switch {
	case clientcmd.IsEmptyConfig(err) && s.Context != "":
		return nil, usage("--context %s: no kubeconfig has it ($KUBECONFIG names none and %s does not exist); pass --kubeconfig FILE",
			s.Context, filepath.Join("~", clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName))
	case clientcmd.IsEmptyConfig(err):
		alt := ""
		if s.offline {
			alt = ", --from-dir DIR for a dump, or --demo for the embedded demo mesh"
		}
		return nil, usage("no cluster to observe: $KUBECONFIG names no kubeconfig and %s does not exist; pass --kubeconfig FILE (and --context NAME)%s",
			filepath.Join("~", clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName), alt)
	case clientcmd.IsContextNotFound(err):
		return nil, usage("--context %s: the kubeconfig has no such context (kubectl config get-contexts lists them)", s.Context)
	case err != nil:
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	name := s.Context
	if raw, err := cc.RawConfig(); err == nil && name == "" {
		name = raw.CurrentContext
	}
	if cfg.QPS == 0 { // kubectl's defaults, not client-go's 5 a second: a plan has thousands of calls
		cfg.QPS, cfg.Burst = 50, 300
	}
	// A client that watches: observe.Live lists with it, and the executor's waits wake on its watches
	// instead of polling.
	ccfg := cfg
	if observeOnly {
		ccfg = rest.CopyConfig(cfg)
		ccfg.ContentType = "application/vnd.kubernetes.protobuf"
	}
	c, err := client.NewWithWatch(ccfg, client.Options{Scheme: observe.Scheme()})
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Config: cfg, Client: c, Source: plan.LiveSource(name, cfg.Host), dc: dc, watchList: observeOnly}, nil
}

// Observe returns the snapshot and where it was read from, as plans record it (plan.Metadata.Source):
// the embedded demo mesh with --demo, a dump with --from-dir, else the live cluster.
func (s *Source) Observe(ctx context.Context) (*mesh.Snapshot, string, error) {
	switch {
	case s.Demo:
		snap, err := demo.Snapshot(ctx)
		return snap, plan.SourceDemo, err
	case s.FromDir != "":
		dir, err := filepath.Abs(s.FromDir)
		if err != nil {
			return nil, "", err
		}
		snap, err := observe.Dir(ctx, dir, observe.Options{})
		return snap, plan.OfflineSource(dir), err
	}
	c, err := s.connect(true)
	if err != nil {
		return nil, "", err
	}
	snap, err := c.Observe(ctx)
	return snap, c.Source, err
}
