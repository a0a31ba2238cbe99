package helmsdk

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/repo"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/rest"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// testChart is a minimal chart with one ConfigMap template.
func testChart(name, version string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, AppVersion: version},
		Templates: []*chart.File{{Name: "templates/cm.yaml",
			Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  v: {{ .Values.v | quote }}\n")}},
		Values: map[string]any{"v": "default"},
	}
}

// newTestClient returns a client whose namespace istio-system uses Helm's in-memory storage and a
// fake Kubernetes client, the way Helm's own action tests do.
func newTestClient(t *testing.T) *Client {
	t.Helper()
	dir := t.TempDir()
	c, err := New(Options{Config: &rest.Config{Host: "https://example.invalid"}, RepositoryCache: filepath.Join(dir, "cache"),
		RepositoryConfig: filepath.Join(dir, "repositories.yaml"), RegistryConfig: filepath.Join(dir, "registry.json")})
	if err != nil {
		t.Fatal(err)
	}
	c.configs["istio-system"] = &action.Configuration{
		Releases:       storage.Init(driver.NewMemory()),
		KubeClient:     &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities:   chartutil.DefaultCapabilities,
		RegistryClient: c.registry,
		Log:            func(string, ...any) {},
	}
	return c
}

// repoServer serves a chart repository holding the charts.
func repoServer(t *testing.T, charts ...*chart.Chart) string {
	t.Helper()
	dir := t.TempDir()
	for _, ch := range charts {
		if _, err := chartutil.Save(ch, dir); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	idx, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL
}

func TestTheAdapterInstallsUpgradesRollsBackAndUninstallsThroughHelmActions(t *testing.T) {
	ctx := context.Background()
	c := newTestClient(t)
	url := repoServer(t, testChart("ztunnel", "1.30.3"), testChart("ztunnel", "1.31.4"))
	ref := func(v string) plan.ChartRef { return plan.ChartRef{Name: "ztunnel", Repository: url, Version: v} }

	if _, err := c.Get(ctx, "ztunnel", "istio-system"); !errors.Is(err, execute.ErrReleaseNotFound) {
		t.Fatalf("Get before install: %v, want ErrReleaseNotFound", err)
	}
	rel, err := c.Install(ctx, execute.HelmRequest{Release: "ztunnel", Namespace: "istio-system", Chart: ref("1.30.3"), Values: map[string]any{"v": "a", "keep": "me"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &execute.Release{Name: "ztunnel", Namespace: "istio-system", Chart: "ztunnel", ChartVersion: "1.30.3", AppVersion: "1.30.3", Revision: 1,
		Status: "deployed", Values: map[string]any{"v": "a", "keep": "me"}}
	if d := cmp.Diff(want, rel); d != "" {
		t.Errorf("Install (-want +got):\n%s", d)
	}
	if _, err := c.Upgrade(ctx, execute.HelmRequest{Release: "ztunnel", Namespace: "istio-system", Chart: ref("1.31.4"), Values: map[string]any{"v": "b"}, ReuseValues: true}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "ztunnel", "istio-system")
	if err != nil {
		t.Fatal(err)
	}
	want = &execute.Release{Name: "ztunnel", Namespace: "istio-system", Chart: "ztunnel", ChartVersion: "1.31.4", AppVersion: "1.31.4", Revision: 2,
		Status: "deployed", Values: map[string]any{"v": "b", "keep": "me"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Get after an upgrade with reused values (-want +got):\n%s", d)
	}
	if _, err := c.Upgrade(ctx, execute.HelmRequest{Release: "ztunnel", Namespace: "istio-system", Chart: ref("1.31.4"), DryRun: true}); err != nil {
		t.Fatalf("dry-run upgrade: %v", err)
	}
	if got, _ := c.Get(ctx, "ztunnel", "istio-system"); got.Revision != 2 {
		t.Errorf("a dry run made revision %d", got.Revision)
	}
	if err := c.Rollback(ctx, execute.HelmRollbackRequest{Release: "ztunnel", Namespace: "istio-system", Revision: 1}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get(ctx, "ztunnel", "istio-system"); got.Revision != 3 || got.ChartVersion != "1.30.3" {
		t.Errorf("after rollback: %+v", got)
	}
	if err := c.Uninstall(ctx, execute.HelmUninstallRequest{Release: "ztunnel", Namespace: "istio-system"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "ztunnel", "istio-system"); !errors.Is(err, execute.ErrReleaseNotFound) {
		t.Errorf("Get after uninstall: %v, want ErrReleaseNotFound", err)
	}
	if err := c.Uninstall(ctx, execute.HelmUninstallRequest{Release: "ztunnel", Namespace: "istio-system"}); !errors.Is(err, execute.ErrReleaseNotFound) {
		t.Errorf("a second uninstall: %v, want ErrReleaseNotFound", err)
	}
}

func TestChartsAreLocatedFromARepositoryOrALocalPathAndVersionsAreChecked(t *testing.T) {
	c := newTestClient(t)
	cfg := c.configs["istio-system"]
	url := repoServer(t, testChart("cni", "1.31.4"))
	local := t.TempDir()
	if err := chartutil.SaveDir(testChart("base", "1.31.4"), local); err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(testChart("gateway", "1.31.4"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ref  plan.ChartRef
		want string // chart name-version, or an error substring
	}{
		{name: "a chart from a repository URL loads at the requested version", ref: plan.ChartRef{Name: "cni", Repository: url, Version: "1.31.4"}, want: "cni-1.31.4"},
		{name: "a version the repository does not have is an error", ref: plan.ChartRef{Name: "cni", Repository: url, Version: "1.99.0"}, want: "locate chart cni 1.99.0"},
		{name: "a local chart directory loads", ref: plan.ChartRef{Name: "base", Path: filepath.Join(local, "base")}, want: "base-1.31.4"},
		{name: "a local .tgz loads", ref: plan.ChartRef{Name: "gateway", Path: tgz}, want: "gateway-1.31.4"},
		{name: "a reference with two sources is refused", ref: plan.ChartRef{Name: "cni", Repository: url, Path: local, Version: "1.31.4"}, want: "set exactly one of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := c.loadChart(cfg, tc.ref)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = ch.Metadata.Name + "-" + ch.Metadata.Version
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTheRESTClientGetterDefaultsToTheReleaseNamespace(t *testing.T) {
	g := &getter{cfg: &rest.Config{Host: "https://example.invalid"}, ns: "istio-system"}
	ns, _, err := g.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns != "istio-system" {
		t.Errorf("namespace %q, %v", ns, err)
	}
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "Config is nil") {
		t.Errorf("New without a config: %v", err)
	}
}
