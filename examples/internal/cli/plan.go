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
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/ambient/releases"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// Plan holds the planning flags of every example that plans an upgrade: what ambient.UpgradeOptions
// offers, and where the charts and the targetable versions come from.
type Plan struct {
	// Target, Strategy and Ztunnel are --target, --strategy and --ztunnel as given.
	Target, Strategy, Ztunnel string
	// NodeFlags are the options of the strategies that drain nodes: node-by-node and blue-green.
	NodeFlags
	// Charts and ChartIndex are --charts and --chart-index.
	Charts, ChartIndex string
	// Waive, Today and Output are --waive, --today and -o.
	Waive, Today, Output string

	cmd *Command
}

// Register adds the planning flags.
func (f *Plan) Register(c *Command) {
	f.cmd = c
	str := func(p *string, s Spec, def string) { c.add(s); c.fs.StringVar(p, s.Name, def, s.Usage) }
	str(&f.Target, Spec{Name: "target", Arg: "VERSION", Usage: "Istio version to reach (default: the newest patch of the minor after the running control plane)", Example: "--target 1.31.4"}, "")
	str(&f.Strategy, Spec{Name: "strategy", Arg: "revision|in-place", Usage: "control plane: a new istiod revision beside the old one (revision, default), or in place", Example: "--strategy in-place"}, "")
	str(&f.Ztunnel, Spec{Name: "ztunnel", Arg: "node-by-node|in-place|blue-green", Usage: "ztunnel: cordon, drain and replace node by node (default), let the DaemonSet roll in place, or run a second ztunnel on new nodes and move workloads there (blue-green)", Example: "--ztunnel blue-green --green-nodepools general"}, "")
	f.NodeFlags.Register(c, "node-by-node and blue-green: ", "blue-green: ")
	str(&f.Charts, Spec{Name: "charts", Arg: "DIR|URL|oci://REF", Usage: "where the charts come from: a folder holding base, istiod, cni, ztunnel (and gateway) chart folders, as `helm pull --untar` leaves them, and <chart>@<version> folders for other versions a plan needs; " +
		"a Helm repository URL (its index.yaml then says which versions can be targeted); or an OCI registry path (default: " + ambient.DefaultChartRepository + ")",
		Example: "--charts https://charts.mirror.example.com/istio  (or ./charts, or oci://registry.example.com/istio)"}, "")
	str(&f.ChartIndex, Spec{Name: "chart-index", Arg: "FILE|URL", Usage: "a Helm repository index (index.yaml, or the <repo>-index.yaml `helm repo update` caches) whose versions are the targetable ones; default: the --charts repository's own index",
		Example: "--chart-index ~/.cache/helm/repository/istio-index.yaml"}, "")
	str(&f.Waive, Spec{Name: "waive", Arg: "CODE,...", Usage: "waivable finding codes to accept (plan.AllCodes lists them)", Example: "--waive PDB_BLOCKS_DRAIN,TARGET_END_OF_LIFE"}, "")
	str(&f.Today, Spec{Name: "today", Arg: "YYYY-MM-DD", Usage: "the date end of life is judged at", Example: "--today 2027-01-15"}, time.Now().UTC().Format(time.DateOnly))
	str(&f.Output, Spec{Name: "o", Arg: "markdown|yaml|json", Usage: "how the plan is printed: a Markdown runbook with the helm and kubectl commands, or the versioned document", Example: "-o yaml > plan.yaml"}, "markdown")
}

// Check refuses flag values that are wrong whatever the mesh: an unknown output, date or strategy,
// node-by-node options with in-place, a chart source of the wrong form.
func (f *Plan) Check() error {
	if err := f.CheckOutput(); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, a...)...)
	}
	if _, err := time.Parse(time.DateOnly, f.Today); err != nil {
		return bad("--today %q: want YYYY-MM-DD", f.Today)
	}
	zt, err := ztunnel.ParseStrategy(f.Ztunnel)
	if err != nil {
		return bad("--ztunnel: %v", err)
	}
	if _, inPlace := zt.(ztunnel.InPlace); inPlace {
		for _, n := range []string{"batch-size", "drain-timeout"} {
			if f.cmd.IsSet(n) {
				return bad("--%s applies to --ztunnel %s and %s; --ztunnel %s has no such option", n, ztunnel.NameNodeByNode, ztunnel.NameBlueGreen, zt.Name())
			}
		}
	}
	if _, bg := zt.(ztunnel.BlueGreen); !bg {
		for _, n := range blueGreenOnly {
			if f.cmd.IsSet(n) {
				return bad("--%s applies to --ztunnel %s only", n, ztunnel.NameBlueGreen)
			}
		}
	} else if err := f.BlueGreen().Validate(); err != nil {
		return bad("%v", err)
	}
	if _, err := ParseCharts(f.Charts); err != nil {
		return bad("%v", err)
	}
	return nil
}

// List splits a comma- or space-separated flag value.
func List(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// CheckOutput refuses an -o other than markdown, yaml and json.
func (f *Plan) CheckOutput() error {
	switch f.Output {
	case "markdown", "yaml", "json":
		return nil
	}
	return fmt.Errorf("%w: -o %q: want markdown, yaml or json", ErrUsage, f.Output)
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
	if err := f.Check(); err != nil {
		return ambient.UpgradeOptions{}, err
	}
	today, _ := time.Parse(time.DateOnly, f.Today)
	zt, _ := ztunnel.ParseStrategy(f.Ztunnel)
	switch zt.(type) {
	case ztunnel.NodeByNode:
		zt = ztunnel.NodeByNode{BatchSize: f.BatchSize, DrainTimeout: f.DrainTimeout}
	case ztunnel.BlueGreen:
		zt = f.BlueGreen()
	}
	charts, _ := ParseCharts(f.Charts)
	opts := ambient.UpgradeOptions{Strategy: ambient.Strategy(f.Strategy), Ztunnel: zt, Charts: charts, Today: today}
	for _, c := range List(f.Waive) {
		opts.Waive = append(opts.Waive, plan.Code(c))
	}
	var err error
	if opts.Releases, err = f.releases(ctx, snap, charts); err != nil {
		return opts, err
	}
	if opts.Target, err = f.target(snap, opts.Releases); err != nil {
		return opts, err
	}
	return opts, nil
}

// releases reads the targetable versions from --chart-index, else from the --charts repository's
// index; nil (the embedded data) otherwise.
func (f *Plan) releases(ctx context.Context, snap *mesh.Snapshot, charts ambient.ChartSource) (*releases.Data, error) {
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

// target parses --target, or takes the newest patch of the minor after the running control plane.
func (f *Plan) target(snap *mesh.Snapshot, data *releases.Data) (mesh.Version, error) {
	if f.Target != "" {
		v, err := mesh.ParseVersion(f.Target)
		if err != nil {
			return v, fmt.Errorf("%w: --target: %v", ErrUsage, err)
		}
		return v, nil
	}
	if data == nil {
		data = ambient.DefaultReleases()
	}
	cps := snap.ControlPlaneVersions()
	if len(cps) == 0 {
		return mesh.Version{}, errors.New("no istiod found to upgrade from; pass --target")
	}
	next, ok := data.Next(cps[len(cps)-1])
	if !ok {
		return mesh.Version{}, fmt.Errorf("the release data (%s) knows no minor after %s; pass --target", data.Origin(), cps[len(cps)-1])
	}
	return next, nil
}

// Print writes the plan as -o asks: YAML or JSON, or the Markdown runbook after the given preamble.
func (f *Plan) Print(w io.Writer, p *plan.Plan, preamble func(io.Writer) error) error {
	switch f.Output {
	case "yaml", "json":
		enc := plan.EncodeYAML
		if f.Output == "json" {
			enc = plan.EncodeJSON
		}
		b, err := enc(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if preamble != nil {
		if err := preamble(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return plan.RenderMarkdown(w, p)
}

// Verdict says whether the plan can run: nil when it can; an error wrapping ErrBlocked when blocking
// findings or blocked steps stop it; an error wrapping ErrNeedsWaiver, naming the codes and the
// command that waives them, when only waivable findings do. Other planning errors pass through.
func Verdict(p *plan.Plan, planErr error, c *Command) error {
	if planErr != nil && !errors.Is(planErr, ambient.ErrBlocked) {
		return planErr
	}
	if p == nil {
		return planErr
	}
	var blocking, waivable []string
	for _, f := range plan.Stopping(p.Findings) {
		if f.Severity == plan.Blocking {
			blocking = appendOnce(blocking, string(f.Code))
		} else {
			waivable = appendOnce(waivable, string(f.Code))
		}
	}
	var blocked []string
	for _, s := range p.Steps {
		if s.Blocked != "" {
			why := s.Blocked
			if r := []rune(why); len(r) > 200 { // the plan printed above says it all
				why = string(r[:200]) + "…"
			}
			blocked = append(blocked, fmt.Sprintf("%s (%s)", s.ID, why))
		}
	}
	var why []string
	if len(blocking) > 0 {
		why = append(why, "blocking findings "+strings.Join(blocking, ", "))
	}
	if len(blocked) > 0 {
		why = append(why, "blocked steps "+strings.Join(blocked, "; "))
	}
	if len(why) > 0 {
		also := ""
		if len(waivable) > 0 {
			also = fmt.Sprintf(" (waivable findings %s also stop it)", strings.Join(waivable, ", "))
		}
		return fmt.Errorf("%w: %s%s; fix the cause (each finding's remedy), then plan again: %s", ErrBlocked, strings.Join(why, "; "), also, c.Line(c.Only(keepReplan...)))
	}
	if len(waivable) > 0 {
		codes := strings.Join(waivable, ",")
		if f := c.fs.Lookup("waive"); f != nil && f.Value.String() != "" {
			codes = f.Value.String() + "," + codes
		}
		return fmt.Errorf("%w: waivable findings %s stop it; review them (and their remedies), then to accept them plan again with: %s",
			ErrNeedsWaiver, strings.Join(waivable, ", "), c.Line(append(c.Only(keepReplan...), "waive"), "--waive", codes))
	}
	return nil
}

// keepReplan are the flags a command to plan again keeps.
var keepReplan = []string{"kubeconfig", "context", "from-dir", "target", "strategy", "ztunnel", "batch-size", "drain-timeout", "green-nodepools", "relabel", "green-nodes", "jobs", "local-storage",
	"charts", "chart-index", "waive", "today", "o", "plan-file", "dry-run", "log-format"}

func appendOnce(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}
