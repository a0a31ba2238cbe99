package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// Plan holds the planning flags of the examples that plan an upgrade: what ambient.UpgradeOptions
// offers, and where the charts and the targetable versions come from (Charts).
type Plan struct {
	Common
	Charts
	// Target, Strategy and Ztunnel are --target, --strategy and --ztunnel as given.
	Target, Strategy, Ztunnel string
	// NodeFlags are the options of the strategies that drain nodes: node-by-node and blue-green.
	NodeFlags
}

// Register adds the planning flags and their checks.
func (f *Plan) Register(c *Command) {
	str := func(p *string, s Spec, def string) { c.add(s); c.fs.StringVar(p, s.Name, def, s.Usage) }
	str(&f.Target, Spec{Name: "target", Arg: "VERSION", Usage: "Istio version to reach (default: the newest patch of the minor after the running control plane)", Example: "--target 1.31.4"}, "")
	str(&f.Strategy, Spec{Name: "strategy", Arg: "revision|in-place", Usage: "control plane: a new istiod revision beside the old one (revision; the default), or in place (the default for an unrevisioned istiod)", Example: "--strategy in-place"}, "")
	str(&f.Ztunnel, Spec{Name: "ztunnel", Arg: "node-by-node|in-place|blue-green", Usage: "ztunnel: cordon, drain and replace node by node (default), let the DaemonSet roll in place, or run a second ztunnel on new nodes and move workloads there (blue-green)", Example: "--ztunnel blue-green --green-nodepools general"}, "")
	f.NodeFlags.Register(c, "node-by-node and blue-green: ", "blue-green: ")
	f.Charts.Register(c)
	f.Common.Register(c)
	c.check(f.Check)
}

// Check refuses flag values that are wrong whatever the mesh: an unknown strategy, node-by-node
// options with in-place, a target that is no version.
func (f *Plan) Check() error {
	if err := f.Charts.CheckTarget(f.Target); err != nil {
		return err
	}
	switch ambient.Strategy(f.Strategy) {
	case "", ambient.StrategyRevision, ambient.StrategyInPlace:
	default:
		return usage("--strategy %q: want %s or %s", f.Strategy, ambient.StrategyRevision, ambient.StrategyInPlace)
	}
	zt, err := ztunnel.ParseStrategy(f.Ztunnel)
	if err != nil {
		return usage("--ztunnel: %v", err)
	}
	if _, inPlace := zt.(ztunnel.InPlace); inPlace {
		for _, n := range []string{"batch-size", "drain-timeout"} {
			if f.cmd.IsSet(n) {
				return usage("--%s applies to --ztunnel %s and %s; --ztunnel %s has no such option", n, ztunnel.NameNodeByNode, ztunnel.NameBlueGreen, zt.Name())
			}
		}
	}
	if _, bg := zt.(ztunnel.BlueGreen); !bg {
		for _, n := range blueGreenOnly {
			if f.cmd.IsSet(n) {
				return usage("--%s applies to --ztunnel %s only", n, ztunnel.NameBlueGreen)
			}
		}
	}
	return nil
}

// List splits a comma- or space-separated flag value.
func List(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// Charts holds --charts and --chart-index: where the charts come from and which versions can be
// targeted.
type Charts struct {
	// Charts and ChartIndex are --charts and --chart-index.
	Charts, ChartIndex string
}

// Register adds --charts and --chart-index, and the check of --charts.
func (f *Charts) Register(c *Command) {
	str := func(p *string, s Spec, def string) { c.add(s); c.fs.StringVar(p, s.Name, def, s.Usage) }
	str(&f.Charts, Spec{Name: "charts", Arg: "DIR|URL|oci://REF", Usage: "where the charts come from: a folder holding base, istiod, cni, ztunnel (and gateway) chart folders, as `helm pull --untar` leaves them, and <chart>@<version> folders for other versions a plan needs; " +
		"a Helm repository URL (its index.yaml then says which versions can be targeted); or an OCI registry path (default: " + ambient.DefaultChartRepository + ")",
		Example: "--charts https://charts.mirror.example.com/istio  (or ./charts, or oci://registry.example.com/istio)"}, "")
	str(&f.ChartIndex, Spec{Name: "chart-index", Arg: "FILE|URL", Usage: "a Helm repository index (index.yaml, or the <repo>-index.yaml `helm repo update` caches) whose versions are the targetable ones; default: the --charts repository's own index",
		Example: "--chart-index ~/.cache/helm/repository/istio-index.yaml"}, "")
	c.check(func() error {
		if _, err := ParseCharts(f.Charts); err != nil {
			return usage("%v", err)
		}
		return nil
	})
}

// CheckTarget refuses a --target that is no version, and, when neither --chart-index nor a
// --charts repository names other release data, one the embedded data cannot target, before
// anything is observed (after observation, Plan.Options checks it against the data in use).
func (f *Charts) CheckTarget(target string) error {
	if target == "" {
		return nil
	}
	if f.ChartIndex != "" || f.Source().Repository != "" {
		if _, err := mesh.ParseVersion(target); err != nil {
			return usage("--target: %v", err)
		}
		return nil
	}
	_, err := CheckTarget(target, nil)
	return err
}

// Source returns the chart source of --charts (checked by Parse).
func (f *Charts) Source() ambient.ChartSource {
	src, _ := ParseCharts(f.Charts)
	return src
}

// ParseCharts turns --charts into a chart source: oci:// is a registry, http(s):// a repository,
// anything else a local folder (made absolute, so a saved plan still finds it from another folder),
// which must hold the base, istiod, cni and ztunnel chart folders.
func ParseCharts(s string) (ambient.ChartSource, error) {
	switch {
	case s == "":
		return ambient.ChartSource{}, nil
	case strings.HasPrefix(s, "oci://"):
		return ambient.ChartSource{OCI: strings.TrimSuffix(s, "/")}, nil
	case strings.HasPrefix(s, "https://"), strings.HasPrefix(s, "http://"):
		return ambient.ChartSource{Repository: strings.TrimSuffix(s, "/")}, nil
	case strings.Contains(s, "://"):
		return ambient.ChartSource{}, fmt.Errorf("--charts %q: want a folder, an http(s):// repository or an oci:// registry path", s)
	}
	dir, err := filepath.Abs(s)
	if err != nil {
		return ambient.ChartSource{}, fmt.Errorf("--charts %q: %w", s, err)
	}
	var missing []string
	for _, chart := range releases.DefaultCharts() {
		if fi, err := os.Stat(filepath.Join(dir, chart, "Chart.yaml")); err != nil || fi.IsDir() {
			missing = append(missing, chart)
		}
	}
	if len(missing) > 0 {
		return ambient.ChartSource{}, fmt.Errorf("--charts %s: no chart folder %s (want DIR/<chart>/Chart.yaml for %s, as `helm pull istio/<chart> --version V --untar` leaves them)",
			dir, strings.Join(missing, ", "), strings.Join(releases.DefaultCharts(), ", "))
	}
	src := ambient.ChartSource{Dir: dir}
	// Charts of other versions a plan needs (a blue-green upgrades the running ztunnel and istiod at
	// their own version) sit beside them as <chart>@<version> folders.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, _, ok := strings.Cut(e.Name(), "@"); !ok || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "Chart.yaml")); err == nil {
			if src.Paths == nil {
				src.Paths = map[string]string{}
			}
			src.Paths[e.Name()] = filepath.Join(dir, e.Name())
		}
	}
	if err := src.Validate(); err != nil {
		return ambient.ChartSource{}, fmt.Errorf("--charts %s: %w", dir, err)
	}
	return src, nil
}

// Options returns the upgrade options the flags ask for, for this mesh.
func (f *Plan) Options(ctx context.Context, snap *mesh.Snapshot) (ambient.UpgradeOptions, error) {
	zt, _ := ztunnel.ParseStrategy(f.Ztunnel)
	switch zt.(type) {
	case ztunnel.NodeByNode:
		zt = ztunnel.NodeByNode{BatchSize: f.BatchSize, DrainTimeout: f.DrainTimeout}
	case ztunnel.BlueGreen:
		zt = f.BlueGreen()
	}
	charts := f.Source()
	opts := ambient.UpgradeOptions{Strategy: ambient.Strategy(f.Strategy), Ztunnel: zt, Charts: charts, Today: f.Date(), Waive: f.Waivers()}
	var err error
	if opts.Releases, err = f.Releases(ctx, snap); err != nil {
		return opts, err
	}
	if opts.Target, err = f.target(snap, opts.Releases); err != nil {
		return opts, err
	}
	return opts, nil
}

// Releases reads the targetable versions from --chart-index, else from the --charts repository's
// index; nil (the embedded data) otherwise.
func (f *Charts) Releases(ctx context.Context, snap *mesh.Snapshot) (*releases.Data, error) {
	charts := f.Source()
	index := f.ChartIndex
	if index == "" && charts.Repository != "" {
		index = charts.Repository + "/index.yaml"
	}
	if index == "" {
		return nil, nil
	}
	opts := releases.IndexOptions{Name: index}
	for _, h := range snap.HelmReleases {
		opts.Gateway = opts.Gateway || h.Chart == "gateway"
	}
	if !strings.HasPrefix(index, "https://") && !strings.HasPrefix(index, "http://") {
		return releases.LoadHelmIndexFile(index, opts)
	}
	body, err := fetch(ctx, index)
	if err != nil {
		return nil, fmt.Errorf("read the chart index %s: %w; save it and pass --chart-index FILE, or use --charts with a folder", index, err)
	}
	defer body.Close()
	return releases.FromHelmIndex(body, opts)
}

// maxIndex bounds a downloaded index (the public repository's is a few megabytes).
const maxIndex = 64 << 20

func fetch(ctx context.Context, url string) (io.ReadCloser, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return readCloser{io.LimitReader(resp.Body, maxIndex), func() error { cancel(); return resp.Body.Close() }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// CheckTarget parses a --target and refuses a version the release data cannot target (unknown,
// a pre-release, a patch the chart index does not serve): a usage error naming the flag, what the data
// has and how to pass data that has more.
func CheckTarget(target string, data *releases.Data) (mesh.Version, error) {
	v, err := mesh.ParseVersion(target)
	if err != nil {
		return v, usage("--target: %v", err)
	}
	if data == nil {
		data = ambient.DefaultReleases()
	}
	if err := data.Check(v); err != nil {
		newest := data.Newest()
		if l, ok := data.Latest(v); ok {
			newest = l
		}
		return v, usage("--target %s: the release data (%s) cannot target it (%s); target one it has (such as %s), or pass the index of a chart repository that serves it (--chart-index FILE|URL, or --charts URL)",
			v, data.Origin(), unknownReason(err), newest)
	}
	return v, nil
}

// unknownReason is the data's reason for refusing a version, without its advice to a library
// caller (the flags say how to pass other data).
func unknownReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), releases.ErrUnknownVersion.Error()+": ")
	if v, rest, ok := strings.Cut(msg, ": "); ok && !strings.Contains(v, " ") {
		msg = rest // the version, which the caller names
	}
	if i := strings.Index(msg, "; pass newer release data"); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// target parses --target, or takes the newest patch of the minor after the running control plane.
func (f *Plan) target(snap *mesh.Snapshot, data *releases.Data) (mesh.Version, error) {
	if data == nil {
		data = ambient.DefaultReleases()
	}
	cps := snap.ControlPlaneVersions()
	if f.Target != "" {
		v, err := CheckTarget(f.Target, data)
		if err != nil {
			return v, err
		}
		switch {
		case len(cps) == 0:
		case v.Less(cps[len(cps)-1]):
			return v, usage("--target %s is older than the running control plane %s: downgrades are not planned; target %s or newer", v, cps[len(cps)-1], cps[len(cps)-1])
		case v == cps[len(cps)-1] && steps.OrDefault(f.Strategy, string(ambient.DefaultStrategy(snap))) != string(ambient.StrategyInPlace):
			return v, usage("--target %s is the version the control plane runs: a revision upgrade needs a newer version (or --strategy in-place, to bring the other components to it)", v)
		}
		return v, nil
	}
	if len(cps) == 0 {
		return mesh.Version{}, errors.New("no istiod found to upgrade from; pass --target")
	}
	next, ok := data.Next(cps[len(cps)-1])
	if !ok {
		return mesh.Version{}, fmt.Errorf("the release data (%s) knows no minor after %s; pass --target", data.Origin(), cps[len(cps)-1])
	}
	return next, nil
}
