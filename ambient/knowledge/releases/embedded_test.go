package releases_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
)

// pinned is what the embedded data says of one minor. Each value was read upstream (releases.yaml
// names where); changing one here should be as deliberate as changing it there.
type pinned struct {
	Released, EndOfLife    string
	Latest                 int
	Kubernetes, Tested     string
	MinKubernetes, Gateway string
	Estimated              []releases.Field
}

func TestEveryEmbeddedMinorsValuesArePinned(t *testing.T) {
	const (
		rel  = releases.FieldReleased
		pat  = releases.FieldPatches
		k8s  = releases.FieldKubernetes
		test = releases.FieldKubernetesTested
		mink = releases.FieldMinKubernetes
		gw   = releases.FieldGatewayAPI
	)
	want := map[string]pinned{
		"1.22": {"2024-05-13", "2025-01-22", 8, "1.27–1.30", "1.23–1.26", "1.26", "v1.1.0", nil},
		"1.23": {"2024-08-14", "2025-04-16", 6, "1.27–1.30", "1.23–1.26", "1.26", "v1.1.0", []releases.Field{test}},
		"1.24": {"2024-11-07", "2025-06-24", 6, "1.28–1.31", "1.23–1.27", "1.28", "v1.2.1", nil},
		"1.25": {"2025-03-03", "2025-09-30", 5, "1.29–1.32", "1.24–1.28", "1.29", "v1.2.1", nil},
		"1.26": {"2025-05-08", "2025-12-22", 8, "1.29–1.33", "1.24–1.28", "1.29", "v1.3.0", nil},
		"1.27": {"2025-08-11", "2026-04-07", 9, "1.29–1.33", "1.24–1.28", "1.29", "v1.3.0", nil},
		"1.28": {"2025-11-05", "2026-07-01", 10, "1.30–1.34", "1.25–1.29", "1.30", "v1.4.1", nil},
		"1.29": {"2026-02-16", "2026-10-12", 6, "1.31–1.35", "1.26–1.30", "1.30", "v1.4.1", []releases.Field{pat}},
		"1.30": {"2026-05-18", "", 8, "1.32–1.36", "1.27–1.31", "1.32", "v1.5.1", []releases.Field{pat}},
		"1.31": {"2026-08-31", "", 4, "1.32–1.37", "1.27–1.31", "1.32", "v1.5.1", []releases.Field{pat, k8s, test, gw}},
		"1.32": {"2026-11-18", "", 0, "1.33–1.37", "1.28–1.32", "1.32", "v1.5.1", []releases.Field{rel, pat, k8s, test, mink, gw}},
	}
	d := releases.Default()
	got := map[string]pinned{}
	for i := range d.Releases {
		m := &d.Releases[i]
		tested := "–"
		if len(m.KubernetesTested) == 2 {
			tested = m.KubernetesTested[0] + "–" + m.KubernetesTested[1]
		}
		got[m.Minor] = pinned{m.Released, m.EndOfLife, m.LatestPatch, m.KubernetesRange(), tested, m.MinKubernetes, m.GatewayAPI, m.Estimates()}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("embedded release data (-pinned +releases.yaml):\n%s", diff)
	}
}

func TestEveryEmbeddedFieldStatesItsSource(t *testing.T) {
	d := releases.Default()
	if got := d.Origin().APIVersion; got != releases.APIVersion {
		t.Errorf("releases.yaml is in the %q shape, want %q (which states sources)", got, releases.APIVersion)
	}
	for i := range d.Releases {
		m := &d.Releases[i]
		if u := m.Unknown(); u != nil {
			t.Errorf("%s: the embedded data has no value for %v", m.Minor, u)
		}
		for _, f := range releases.Fields() {
			src := m.Source(f)
			switch {
			case src == "":
				t.Errorf("%s %s: no source", m.Minor, f)
			case m.IsEstimated(f) && len(src) < 40:
				t.Errorf("%s %s is estimated but its source does not say from what: %q", m.Minor, f, src)
			case f == releases.FieldMinKubernetes && !strings.Contains(src, "version.go"):
				t.Errorf("%s minKubernetes should cite istioctl/pkg/install/k8sversion/version.go: %q", m.Minor, src)
			case f == releases.FieldGatewayAPI && !strings.Contains(src, "go.mod"):
				t.Errorf("%s gatewayAPI should cite the go.mod pin: %q", m.Minor, src)
			}
		}
	}
}
