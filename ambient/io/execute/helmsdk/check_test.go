package helmsdk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// indexServer serves testdata/index.yaml as a chart repository on 127.0.0.1 and records the paths
// asked for.
func indexServer(t *testing.T) (url string, paths func() []string) {
	t.Helper()
	index, err := os.ReadFile("testdata/index.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		if r.URL.Path != "/charts/index.yaml" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-yaml")
		_, _ = w.Write(index)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/charts", func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// registryServer is the part of the OCI distribution API that resolving a tag and listing tags use,
// for one repository holding the given tags.
func registryServer(t *testing.T, repository string, tags ...string) string {
	t.Helper()
	manifest := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",` +
		`"config":{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}`)
	sum := sha256.Sum256(manifest)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case r.URL.Path == "/v2/"+repository+"/tags/list":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"name": repository, "tags": tags})
		case strings.HasPrefix(r.URL.Path, "/v2/"+repository+"/manifests/"):
			tag := strings.TrimPrefix(r.URL.Path, "/v2/"+repository+"/manifests/")
			found := false
			for _, t := range tags {
				found = found || t == tag
			}
			if !found {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`))
				return
			}
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", digest)
			w.Header().Set("Content-Length", strconv.Itoa(len(manifest)))
			if r.Method != http.MethodHead {
				_, _ = w.Write(manifest)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestCheckChartConfirmsAVersionExistsWhereThePlanSaysBeforeAnythingChanges(t *testing.T) {
	ctx := context.Background()
	helmCache := t.TempDir() // Helm's default cache, where repo.NewChartRepository would write
	t.Setenv("HELM_CACHE_HOME", helmCache)
	c := newTestClient(t)
	plainHTTP, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry.json")))
	if err != nil {
		t.Fatal(err)
	}
	c.registry = plainHTTP
	repoURL, paths := indexServer(t)
	host := registryServer(t, "istio/release/charts/ztunnel", "1.29.4", "1.30.0", "1.30.1", "1.31.0-rc.0", "1.31.2", "latest")
	oci := "oci://" + host + "/istio/release/charts/ztunnel"
	dir := t.TempDir()
	if err := chartutil.SaveDir(testChart("base", "1.31.4"), dir); err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(testChart("gateway", "1.30.3"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	repoRef := func(name, v string) plan.ChartRef { return plan.ChartRef{Name: name, Repository: repoURL, Version: v} }
	tests := []struct {
		name    string
		ref     plan.ChartRef
		have    string
		missing *ChartVersionError // the error is a ChartVersionError like this one
		other   string             // the error is something else and says this
	}{
		{name: "a version the repository index lists is found", ref: repoRef("ztunnel", "1.30.1"), have: "1.30.1"},
		{name: "a version missing from the repository names the newest of its minor there", ref: repoRef("ztunnel", "1.30.4"), have: "1.30.1",
			missing: &ChartVersionError{Chart: "ztunnel", Version: "1.30.4", Source: repoURL, NewestSameMinor: "1.30.1", Newest: "1.31.2"}},
		{name: "a version listed without a download URL is missing", ref: repoRef("ztunnel", "1.29.5"), have: "1.29.4",
			missing: &ChartVersionError{Chart: "ztunnel", Version: "1.29.5", Source: repoURL, NewestSameMinor: "1.29.4", Newest: "1.31.2"}},
		{name: "a minor the repository lacks names its newest release", ref: repoRef("ztunnel", "1.28.10"), have: "1.31.2",
			missing: &ChartVersionError{Chart: "ztunnel", Version: "1.28.10", Source: repoURL, Newest: "1.31.2"}},
		{name: "a chart the repository lacks is missing with nothing to offer", ref: repoRef("cni", "1.30.1"), have: "",
			missing: &ChartVersionError{Chart: "cni", Version: "1.30.1", Source: repoURL}},
		{name: "a repository that cannot be reached is not a missing version", ref: plan.ChartRef{Name: "ztunnel", Repository: closed.URL, Version: "1.30.1"},
			other: "read the index of " + closed.URL},
		{name: "a tag the registry resolves is found", ref: plan.ChartRef{Name: "ztunnel", OCI: oci, Version: "1.30.0"}, have: "1.30.0"},
		{name: "a tag the registry lacks names the newest of its minor there", ref: plan.ChartRef{Name: "ztunnel", OCI: oci, Version: "1.30.2"}, have: "1.30.1",
			missing: &ChartVersionError{Chart: "ztunnel", Version: "1.30.2", Source: oci, NewestSameMinor: "1.30.1", Newest: "1.31.2"}},
		{name: "a registry that cannot be reached is not a missing version", ref: plan.ChartRef{Name: "ztunnel", OCI: "oci://" + strings.TrimPrefix(closed.URL, "http://") + "/charts/ztunnel", Version: "1.30.0"},
			other: "listing its tags"},
		{name: "a local chart directory at the version the plan asks is found", ref: plan.ChartRef{Name: "base", Path: dir + "/base", Version: "1.31.4"}, have: "1.31.4"},
		{name: "a local chart directory at another version is refused, naming what it holds", ref: plan.ChartRef{Name: "base", Path: dir + "/base", Version: "1.30.0"}, have: "1.31.4",
			missing: &ChartVersionError{Chart: "base", Version: "1.30.0", Source: dir + "/base", Newest: "1.31.4", Local: true}},
		{name: "a local chart archive reports the version it holds", ref: plan.ChartRef{Name: "gateway", Path: tgz}, have: "1.30.3"},
		{name: "a local path that does not exist is not a missing version", ref: plan.ChartRef{Name: "base", Path: filepath.Join(dir, "nowhere")}, other: "load " + filepath.Join(dir, "nowhere")},
		{name: "a reference with two sources is refused", ref: plan.ChartRef{Name: "cni", Repository: repoURL, OCI: oci, Version: "1.30.1"}, other: "set exactly one of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have, err := c.CheckChart(ctx, tc.ref)
			if have != tc.have {
				t.Errorf("have = %q, want %q", have, tc.have)
			}
			var cve *ChartVersionError
			switch {
			case tc.missing != nil:
				if !errors.Is(err, ErrChartVersionMissing) || !errors.As(err, &cve) {
					t.Fatalf("err = %v, want a *ChartVersionError", err)
				}
				if d := cmp.Diff(tc.missing, cve); d != "" {
					t.Errorf("ChartVersionError (-want +got):\n%s", d)
				}
				for _, part := range []string{tc.ref.Name, tc.ref.Version, cve.Source} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("the message does not name %q: %v", part, err)
					}
				}
			case tc.other != "":
				if err == nil || errors.Is(err, ErrChartVersionMissing) || !strings.Contains(err.Error(), tc.other) {
					t.Fatalf("err = %v, want an error saying %q that is not ErrChartVersionMissing", err, tc.other)
				}
			default:
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
			}
		})
	}
	for _, p := range paths() {
		if p != "/charts/index.yaml" {
			t.Errorf("CheckChart asked the repository for %s; it must read the index only", p)
		}
	}
	for _, cache := range []string{c.settings.RepositoryCache, helmCache} {
		if entries, err := os.ReadDir(cache); err == nil && len(entries) > 0 {
			t.Errorf("CheckChart wrote to the Helm cache %s: %v", cache, entries)
		}
	}
}

func TestAMissingChartVersionSaysWhatTheSourceHasAndTheFix(t *testing.T) {
	e := &ChartVersionError{Chart: "ztunnel", Version: "1.28.4", Source: "https://mirror.example/charts", NewestSameMinor: "1.28.10", Newest: "1.31.2"}
	want := "chart version missing from its source: chart ztunnel 1.28.4 is not in https://mirror.example/charts: the newest 1.28 it has is 1.28.10 (newest release: 1.31.2); " +
		"plan for a version the source has (releases.FromHelmIndex over its index), or publish ztunnel 1.28.4 there"
	if got := e.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestCheckChartStopsOnACancelledContext(t *testing.T) {
	c := newTestClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.CheckChart(ctx, plan.ChartRef{Name: "ztunnel", Repository: "https://example.invalid", Version: "1.30.1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
