//go:build e2e

package runbook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/internal/corpustest"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// valuesTree is one set of values some plan or fixture gives a chart, with the release it is for.
type valuesTree struct {
	// from names where the tree was found, for the failure message.
	from string
	// rel is the step's release as the plan has it (ReuseValues included); its Chart.Name names the
	// chart (istiod, cni, ...), its Chart source is replaced by the local folder.
	rel     plan.HelmRelease
	upgrade bool
	// planned is true for the trees of plans (goldens and planned), not of recorded releases.
	planned bool
}

// TestThePrintedHelmFlagsRenderWhatTheExecutorInstalls is the proof that a runbook's helm command
// and the executor set the same values: for every values tree of the golden plans, of every plan
// the corpus and the demo give (upgrades and ztunnel swaps), of every release those states record,
// and of the e2e installation, the step's printed helm command, with its chart pointed at the real
// Istio chart folder and its verb turned into `helm template`, is run by bash and the helm CLI
// (built from the Helm version of go.mod), and its manifests must equal those the Helm SDK renders
// from the values the executor passes it (action.Install, client-only, as helm template itself).
// Dotted keys (kubernetes.io/os, karpenter.sh/nodepool, annotations), commas, quotes, nulls and
// strings that read as numbers all have to survive the shell and Helm's --set parser.
func TestThePrintedHelmFlagsRenderWhatTheExecutorInstalls(t *testing.T) {
	bin := os.Getenv("E2E_BIN_DIR")
	if bin == "" {
		t.Fatal("E2E_BIN_DIR is not set: run through hack/e2e.sh, which builds helm there")
	}
	helmCLI := filepath.Join(bin, "helm")
	if _, err := os.Stat(helmCLI); err != nil {
		t.Fatalf("helm CLI: %v (hack/e2e-bins.sh builds it)", err)
	}
	ctx := context.Background()
	chartsDir, err := charts.IstioChartsDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chartDirs := chartFolders(t, chartsDir)
	// The probe renders nothing but the values Helm ends up with, so a key --set reads otherwise
	// differs even where no chart template reads it.
	chartDirs[probeChart] = writeProbeChart(t)
	trees := valuesTrees(t)
	planned := 0
	for _, tr := range trees {
		if tr.planned {
			planned++
		}
	}
	var dotted, rendered atomic.Int32
	home := t.TempDir()
	work := make(chan valuesTree)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tr := range work {
				probe := tr
				probe.rel.Chart.Name = probeChart
				if compareRenders(ctx, t, helmCLI, home, chartDirs, tr) && compareRenders(ctx, t, helmCLI, home, chartDirs, probe) {
					rendered.Add(1)
					if hasDottedKey(tr.rel.Values) {
						dotted.Add(1)
					}
				}
			}
		}()
	}
	for _, tr := range trees {
		work <- tr
	}
	close(work)
	wg.Wait()
	t.Logf("rendered %d values trees both ways (%d with dotted keys)", rendered.Load(), dotted.Load())
	if len(trees) < 60 || planned < 40 {
		t.Errorf("found %d values trees, %d of them of plans; want those of the goldens, corpus and fixtures (60 or more, 40 of plans)", len(trees), planned)
	}
	if dotted.Load() == 0 {
		t.Error("no values tree has a dotted key: the escaping of keys is not exercised")
	}
}

// compareRenders renders one tree both ways and reports whether both rendered; a difference or a
// failure is an error of the test.
func compareRenders(ctx context.Context, t *testing.T, helmCLI, home string, chartDirs map[string]string, tr valuesTree) bool {
	dir, ok := chartDirs[tr.rel.Chart.Name]
	if !ok {
		t.Errorf("%s: no chart %q among the Istio charts (%v)", tr.from, tr.rel.Chart.Name, sortedNames(chartDirs))
		return false
	}
	cmd, err := templateCommand(helmCLI, dir, tr)
	if err != nil {
		t.Error(err)
		return false
	}
	got, err := runHelmTemplate(ctx, home, cmd)
	if err != nil {
		t.Errorf("%s: %s\n%v", tr.from, cmd, err)
		return false
	}
	want, err := renderWithSDK(dir, tr)
	if err != nil {
		t.Errorf("%s: the Helm SDK cannot render the executor's values: %v", tr.from, err)
		return false
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s: the printed command renders other manifests than the executor's values (-sdk +printed):\n%s\ncommand: %s", tr.from, d, cmd)
	}
	return true
}

// templateCommand is the step's printed helm command (plan.Commands) with the chart pointed at the
// local folder, the verb turned into `template` (and --is-upgrade for an upgrade), and
// --reuse-values, which helm template does not know, dropped: helm template renders the values
// over the chart's defaults, as a fresh install does, on both sides of the comparison.
func templateCommand(helmCLI, chartDir string, tr valuesTree) (string, error) {
	h := tr.rel // a copy: the plan's release with its chart pointed at the folder
	h.Chart = plan.ChartRef{Name: tr.rel.Chart.Name, Path: chartDir}
	st := &plan.Step{ID: "values", HelmInstall: &h}
	verb := "helm install "
	if tr.upgrade {
		st = &plan.Step{ID: "values", HelmUpgrade: &h}
		verb = "helm upgrade "
	}
	cmds := plan.Commands(st)
	if len(cmds) != 1 || !strings.HasPrefix(cmds[0], verb) {
		return "", fmt.Errorf("%s: the step prints %q, want one %scommand", tr.from, cmds, verb)
	}
	rest := strings.TrimPrefix(cmds[0], verb)
	if tr.upgrade {
		rest += " --is-upgrade"
	}
	return shellQuote(helmCLI) + " template " + strings.Replace(rest, " --reuse-values", "", 1), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// runHelmTemplate runs the command with bash, Helm's folders under home, and returns its manifests.
func runHelmTemplate(ctx context.Context, home, command string) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", command)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-cluster"))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	return manifests(out.String())
}

// renderWithSDK renders the chart as helm template does, with the values map the executor gives
// the Helm SDK (execute's HelmRequest.Values, unchanged).
func renderWithSDK(chartDir string, tr valuesTree) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.DryRun, in.DryRunOption, in.ClientOnly, in.Replace = true, "true", true, true
	in.ReleaseName, in.Namespace, in.IsUpgrade = tr.rel.Release, tr.rel.Namespace, tr.upgrade
	rel, err := in.Run(ch, tr.rel.Values)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintln(&b, strings.TrimSpace(rel.Manifest))
	for _, h := range rel.Hooks {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return manifests(b.String())
}

// manifests splits rendered YAML into its documents, keyed by their source template and
// position, so a difference names the template it comes from. The text is compared as rendered:
// both sides print it with the same engine, so any difference is one of values.
func manifests(s string) (map[string]string, error) {
	out := map[string]string{}
	docs := releaseutil.SplitManifests(s)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for i, k := range keys {
		doc := strings.TrimSpace(docs[k])
		source := fmt.Sprintf("#%d", i)
		for _, line := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(line, "# Source: "); ok {
				source = s + fmt.Sprintf(" #%d", i)
				break
			}
		}
		if doc != "" {
			out[source] = doc
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no manifests rendered")
	}
	return out, nil
}

// chartFolders maps each chart name (Chart.yaml name) under the Istio charts folder to its folder.
func chartFolders(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "Chart.yaml" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var meta struct{ Name string }
		if err := yaml.Unmarshal(b, &meta); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if _, dup := out[meta.Name]; !dup {
			out[meta.Name] = filepath.Dir(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"base", "istiod", "cni", "ztunnel", "gateway"} {
		if out[name] == "" {
			t.Fatalf("no %s chart under %s", name, root)
		}
	}
	return out
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// valuesTrees gathers, without repeats, every values tree of the golden plans, of the plans and
// releases of the demo and corpus states, and of the e2e installation, plus one tree of the
// characters --set and the shell read specially.
func valuesTrees(t *testing.T) []valuesTree {
	t.Helper()
	var out []valuesTree
	seen := map[string]bool{}
	add := func(tr valuesTree) {
		if len(tr.rel.Values) == 0 {
			return
		}
		b, _ := json.Marshal(tr.rel.Values)
		// The release and namespace reach both renders as the same arguments; the values are what
		// the comparison is about.
		key := fmt.Sprintf("%s|%v|%v|%s", tr.rel.Chart.Name, tr.upgrade, tr.rel.ReuseValues, b)
		if !seen[key] {
			seen[key] = true
			out = append(out, tr)
		}
	}
	fromPlan := func(from string, p *plan.Plan) {
		for _, st := range p.Steps {
			if h := st.HelmInstall; h != nil {
				add(valuesTree{from: from + " step " + st.ID, rel: *h, planned: true})
			}
			if h := st.HelmUpgrade; h != nil {
				add(valuesTree{from: from + " step " + st.ID, rel: *h, upgrade: true, planned: true})
			}
		}
	}
	// The golden plans of every package.
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "broken") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, ".plan.yaml") || !strings.Contains(p, "testdata") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pl, err := plan.Decode(b)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		fromPlan(p, pl)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The demo and corpus states: their releases' values and the plans made on them.
	for _, st := range corpustest.States(t, "../..") {
		name, s := st.Name, st.Snapshot
		for _, r := range s.HelmReleases {
			add(valuesTree{from: name + " release " + r.Namespace + "/" + r.Name, upgrade: true,
				rel: plan.HelmRelease{Release: r.Name, Namespace: r.Namespace, Chart: plan.ChartRef{Name: r.Chart}, Values: r.Values}})
		}
		for _, target := range []string{"1.31.4", "1.30.3", "1.29.4"} {
			if p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: mesh.MustParseVersion(target)}); err == nil || errors.Is(err, plan.ErrBlocked) {
				fromPlan(name+" upgrade to "+target, p)
			}
		}
		if len(s.Ztunnels) == 1 {
			if p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: s.Ztunnels[0].Version}); err == nil || errors.Is(err, plan.ErrBlocked) {
				fromPlan(name+" blue-green", p)
			}
		}
	}
	// The e2e installation.
	ist := charts.Istio{Namespace: harness.IstioNamespace, Revision: harness.Revision, Version: harness.IstioVersion,
		Hub: harness.IstioHub, GatewayNamespace: harness.GatewayNamespace, GatewayRelease: harness.GatewayRelease}
	for _, r := range ist.Releases() {
		ch := map[string]string{charts.ChartBase: "base", charts.ChartIstiod: "istiod", charts.ChartCNI: "cni",
			charts.ChartZtunnel: "ztunnel", charts.ChartGateway: "gateway"}[r.Chart]
		add(valuesTree{from: "e2e installation " + r.Name, rel: plan.HelmRelease{Release: r.Name, Namespace: r.Namespace, Chart: plan.ChartRef{Name: ch}, Values: r.Values}})
	}
	// The characters that --set and the shell read specially, where the istiod chart renders them.
	add(valuesTree{from: "special characters", rel: plan.HelmRelease{Release: "istiod-special", Namespace: "istio-system", Chart: plan.ChartRef{Name: "istiod"}, Values: map[string]any{
		"revision":         "special",
		"nodeSelector":     map[string]any{"kubernetes.io/os": "linux", "karpenter.sh/nodepool": "general"},
		"podAnnotations":   map[string]any{"sidecar.istio.io/inject": "false", "example.com/note": `a,b 'quoted' back\slash $HOME {x,y}`},
		"podLabels":        map[string]any{"app.kubernetes.io/part-of": "mesh", "zero": "0", "lead0": "010", "truth": "true"},
		"env":              map[string]any{"CA_TRUSTED_NODE_ACCOUNTS": "istio-system/ztunnel,zt/ztunnel-green", "PILOT_ENABLE_AMBIENT": "true"},
		"replicaCount":     float64(2),
		"autoscaleEnabled": false,
		"tolerations":      []any{map[string]any{"key": "karpenter.sh/disruption", "operator": "Exists", "effect": "NoSchedule"}},
		"resources":        nil,
	}}})
	return out
}

// probeChart names the chart writeProbeChart makes.
const probeChart = "ambientkit-values-probe"

// writeProbeChart writes a chart whose one template is the values Helm computed, as JSON.
func writeProbeChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), probeChart)
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: " + probeChart + "\nversion: 0.1.0\n",
		"templates/values.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: values\ndata:\n  values.json: {{ toJson .Values | quote }}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hasDottedKey reports whether a key anywhere in the tree holds a dot.
func hasDottedKey(v map[string]any) bool {
	for k, x := range v {
		if strings.Contains(k, ".") {
			return true
		}
		if m, ok := x.(map[string]any); ok && hasDottedKey(m) {
			return true
		}
	}
	return false
}
