package helmsdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Options configure the adapter. Only Config is required.
type Options struct {
	// Config is the cluster's REST configuration.
	Config *rest.Config
	// Driver is Helm's release storage: "secret" (default), "configmap" or "memory".
	Driver string
	// RepositoryCache, RepositoryConfig and RegistryConfig override Helm's default paths (the
	// HELM_* environment variables and ~/.cache/helm, ~/.config/helm are used otherwise):
	// downloaded charts and indexes, known repositories, OCI registry credentials.
	RepositoryCache  string
	RepositoryConfig string
	RegistryConfig   string
	// Timeout bounds each Helm operation (hooks, resource creation), not readiness; 0 means 5 minutes.
	Timeout time.Duration
	// MaxHistory caps the revisions Helm keeps per release; 0 means 10.
	MaxHistory int
	// Logger receives Helm's debug output; nil means none.
	Logger *slog.Logger
}

// Client is an execute.HelmClient over the Helm v3 SDK.
type Client struct {
	opts     Options
	settings *cli.EnvSettings
	mu       sync.Mutex
	configs  map[string]*action.Configuration
	registry *registry.Client
}

var _ execute.HelmClient = (*Client)(nil)

// New returns a client for the cluster of opts.Config.
func New(opts Options) (*Client, error) {
	if opts.Config == nil {
		return nil, errors.New("helmsdk: Options.Config is nil; pass the cluster's *rest.Config (clientcmd or ctrl.GetConfig)")
	}
	if opts.Driver == "" {
		opts.Driver = "secret"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.MaxHistory <= 0 {
		opts.MaxHistory = 10
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	settings := cli.New()
	if opts.RepositoryCache != "" {
		settings.RepositoryCache = opts.RepositoryCache
	}
	if opts.RepositoryConfig != "" {
		settings.RepositoryConfig = opts.RepositoryConfig
	}
	if opts.RegistryConfig != "" {
		settings.RegistryConfig = opts.RegistryConfig
	}
	rc, err := registry.NewClient(registry.ClientOptCredentialsFile(settings.RegistryConfig), registry.ClientOptEnableCache(true))
	if err != nil {
		return nil, fmt.Errorf("helmsdk: OCI registry client (credentials %s): %w", settings.RegistryConfig, err)
	}
	return &Client{opts: opts, settings: settings, configs: map[string]*action.Configuration{}, registry: rc}, nil
}

// getter is a RESTClientGetter over a *rest.Config, with the release namespace as its default.
type getter struct {
	cfg *rest.Config
	ns  string
	mu  sync.Mutex
	dc  discovery.CachedDiscoveryInterface
}

func (g *getter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dc == nil {
		dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.cfg))
		if err != nil {
			return nil, err
		}
		g.dc = memory.NewMemCacheClient(dc)
	}
	return g.dc, nil
}

func (g *getter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(dc), dc, nil), nil
}

func (g *getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.ns}})
}

// config returns the action configuration for a release namespace.
func (c *Client) config(ns string) (*action.Configuration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg, ok := c.configs[ns]; ok {
		return cfg, nil
	}
	cfg := new(action.Configuration)
	log := func(format string, v ...any) { c.opts.Logger.Debug(fmt.Sprintf(format, v...), "namespace", ns) }
	if err := cfg.Init(&getter{cfg: c.opts.Config, ns: ns}, ns, c.opts.Driver, log); err != nil {
		return nil, fmt.Errorf("helm: set up for namespace %s: %w", ns, err)
	}
	cfg.RegistryClient = c.registry
	c.configs[ns] = cfg
	return cfg, nil
}

// loadChart finds the chart where the reference says and loads it.
func (c *Client) loadChart(cfg *action.Configuration, ref plan.ChartRef) (*chart.Chart, error) {
	if err := ref.Validate(); err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	path := ref.Path
	if path == "" {
		locate := action.NewInstall(cfg) // its ChartPathOptions carry the registry client
		locate.ChartPathOptions.Version = ref.Version
		name := ref.OCI
		if ref.Repository != "" {
			locate.ChartPathOptions.RepoURL = ref.Repository
			name = ref.Name
		}
		var err error
		if path, err = locate.ChartPathOptions.LocateChart(name, c.settings); err != nil {
			return nil, fmt.Errorf("helm: locate chart %s %s (%s%s): %w", ref.Name, ref.Version, ref.Repository, ref.OCI, err)
		}
	}
	ch, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("helm: load chart %s from %s: %w", ref.Name, path, err)
	}
	if ref.Path == "" && ref.Version != "" && ch.Metadata.Version != ref.Version {
		return nil, fmt.Errorf("helm: chart %s from %s%s is version %s, the plan wants %s", ref.Name, ref.Repository, ref.OCI, ch.Metadata.Version, ref.Version)
	}
	return ch, nil
}

func convert(r *release.Release) *execute.Release {
	out := &execute.Release{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Values: r.Config}
	if r.Chart != nil && r.Chart.Metadata != nil {
		out.Chart, out.ChartVersion, out.AppVersion = r.Chart.Metadata.Name, r.Chart.Metadata.Version, r.Chart.Metadata.AppVersion
	}
	if r.Info != nil {
		out.Status = r.Info.Status.String()
	}
	return out
}

// Install installs the release (creating its namespace) without waiting for readiness.
func (c *Client) Install(ctx context.Context, req execute.HelmRequest) (*execute.Release, error) {
	cfg, err := c.config(req.Namespace)
	if err != nil {
		return nil, err
	}
	ch, err := c.loadChart(cfg, req.Chart)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.Timeout = req.Release, req.Namespace, true, c.opts.Timeout
	if req.DryRun {
		in.DryRun, in.DryRunOption = true, "server"
	}
	rel, err := in.RunWithContext(ctx, ch, req.Values)
	if err != nil {
		return nil, fmt.Errorf("helm install %s -n %s (chart %s %s): %w", req.Release, req.Namespace, req.Chart.Name, req.Chart.Version, err)
	}
	return convert(rel), nil
}

// Upgrade upgrades the release without waiting for readiness.
func (c *Client) Upgrade(ctx context.Context, req execute.HelmRequest) (*execute.Release, error) {
	cfg, err := c.config(req.Namespace)
	if err != nil {
		return nil, err
	}
	ch, err := c.loadChart(cfg, req.Chart)
	if err != nil {
		return nil, err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace, up.ReuseValues, up.Timeout, up.MaxHistory = req.Namespace, req.ReuseValues, c.opts.Timeout, c.opts.MaxHistory
	if req.DryRun {
		up.DryRun, up.DryRunOption = true, "server"
	}
	rel, err := up.RunWithContext(ctx, req.Release, ch, req.Values)
	if err != nil {
		return nil, fmt.Errorf("helm upgrade %s -n %s (chart %s %s): %w", req.Release, req.Namespace, req.Chart.Name, req.Chart.Version, err)
	}
	return convert(rel), nil
}

// Uninstall removes the release and its history.
func (c *Client) Uninstall(ctx context.Context, req execute.HelmUninstallRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cfg, err := c.config(req.Namespace)
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.DryRun, un.Timeout = req.DryRun, c.opts.Timeout
	if _, err := un.Run(req.Release); err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return fmt.Errorf("%w: %s/%s", execute.ErrReleaseNotFound, req.Namespace, req.Release)
		}
		return fmt.Errorf("helm uninstall %s -n %s: %w", req.Release, req.Namespace, err)
	}
	return nil
}

// Rollback rolls the release back to req.Revision.
func (c *Client) Rollback(ctx context.Context, req execute.HelmRollbackRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cfg, err := c.config(req.Namespace)
	if err != nil {
		return err
	}
	rb := action.NewRollback(cfg)
	rb.Version, rb.DryRun, rb.Timeout, rb.MaxHistory = req.Revision, req.DryRun, c.opts.Timeout, c.opts.MaxHistory
	if err := rb.Run(req.Release); err != nil {
		return fmt.Errorf("helm rollback %s %d -n %s: %w", req.Release, req.Revision, req.Namespace, err)
	}
	return nil
}

// Get returns the release's latest revision with its user values.
func (c *Client) Get(ctx context.Context, name, namespace string) (*execute.Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg, err := c.config(namespace)
	if err != nil {
		return nil, err
	}
	rel, err := action.NewGet(cfg).Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("%w: %s/%s", execute.ErrReleaseNotFound, namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("helm get %s -n %s: %w", name, namespace, err)
	}
	return convert(rel), nil
}
