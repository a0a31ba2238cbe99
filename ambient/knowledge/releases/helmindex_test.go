package releases_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

const fixture = "testdata/index.yaml"

func fromFixture(t *testing.T, opts releases.IndexOptions) *releases.Data {
	t.Helper()
	d, err := releases.LoadHelmIndexFile(fixture, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// patchesByMinor lists the targetable patches of every minor that has one.
func patchesByMinor(d *releases.Data) map[string][]int {
	out := map[string][]int{}
	for i := range d.Releases {
		if p := d.Releases[i].Patches(); len(p) > 0 {
			out[d.Releases[i].Minor] = p
		}
	}
	return out
}

func TestTheTargetableVersionsAreThoseEveryChartOfTheIndexServes(t *testing.T) {
	tests := []struct {
		name   string
		opts   releases.IndexOptions
		want   map[string][]int
		newest string
	}{
		{name: "by default a version counts when base, istiod, cni and ztunnel all serve it with a download URL",
			want:   map[string][]int{"1.21": {6}, "1.28": {10}, "1.29": {4}, "1.30": {3, 4}, "1.31": {1}},
			newest: "1.31.1"},
		{name: "with gateways, a version the gateway chart lacks is not targetable",
			opts:   releases.IndexOptions{Gateway: true},
			want:   map[string][]int{"1.21": {6}, "1.28": {10}, "1.29": {4}, "1.30": {3}, "1.31": {1}},
			newest: "1.31.1"},
		{name: "a caller who installs only istiod gets every release istiod has",
			opts:   releases.IndexOptions{Charts: []string{"istiod"}},
			want:   map[string][]int{"1.21": {6}, "1.28": {10}, "1.29": {4, 5}, "1.30": {3, 4}, "1.31": {1, 2}},
			newest: "1.31.2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := fromFixture(t, tc.opts)
			if diff := cmp.Diff(tc.want, patchesByMinor(d)); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
			if got := d.Newest().String(); got != tc.newest {
				t.Errorf("Newest = %s, want %s", got, tc.newest)
			}
		})
	}
}

func TestTheIndexDrivesTargetSelection(t *testing.T) {
	d := fromFixture(t, releases.IndexOptions{})
	tests := []struct {
		name   string
		target string
		says   string // empty: the target is accepted
	}{
		{name: "a patch every chart serves is accepted", target: "1.28.10"},
		{name: "a target missing from the index is refused naming the newest patch it has", target: "1.28.4", says: "the newest 1.28 patch it has is 1.28.10"},
		{name: "a patch newer than the index has is refused naming the newest patch it has", target: "1.30.8", says: "the newest 1.30 patch it has is 1.30.4"},
		{name: "a patch one chart lacks is refused naming the newest patch all have", target: "1.29.5", says: "the newest 1.29 patch it has is 1.29.4"},
		{name: "a patch whose entry has no download URL is refused", target: "1.31.2", says: "the newest 1.31 patch it has is 1.31.1"},
		{name: "a minor the base data knows but the index does not serve is refused", target: "1.27.9", says: "serves no 1.27 release (it serves 1.21 to 1.31)"},
		{name: "a minor neither knows is refused", target: "1.40.0", says: "serves no 1.40 release"},
		{name: "a pre-release the index lists is still refused", target: "1.31.0-rc.0", says: "is a pre-release"},
		{name: "a minor only the index knows can be targeted", target: "1.21.6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Check(mesh.MustParseVersion(tc.target))
			if tc.says == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want accepted", tc.target, err)
				}
				return
			}
			if !errors.Is(err, releases.ErrUnknownVersion) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Check(%s) = %v, want ErrUnknownVersion saying %q", tc.target, err, tc.says)
			}
			if !strings.Contains(err.Error(), fixture) {
				t.Errorf("the error does not name the index: %v", err)
			}
		})
	}
}

func TestLatestAndNextReturnVersionsTheIndexServes(t *testing.T) {
	d := fromFixture(t, releases.IndexOptions{})
	v := mesh.MustParseVersion
	tests := []struct {
		name string
		got  func() (mesh.Version, bool)
		want string // empty: none
	}{
		{name: "the latest 1.28 is the newest the index serves, not the newest ever released", got: func() (mesh.Version, bool) { return d.Latest(v("1.28.0")) }, want: "1.28.10"},
		{name: "the hop after 1.30 is the newest 1.31 every chart serves", got: func() (mesh.Version, bool) { return d.Next(v("1.30.3")) }, want: "1.31.1"},
		{name: "the hop after 1.29 is the newest 1.30", got: func() (mesh.Version, bool) { return d.Next(v("1.29.4")) }, want: "1.30.4"},
		{name: "there is no hop into a minor the index does not serve", got: func() (mesh.Version, bool) { return d.Next(v("1.26.8")) }, want: ""},
		{name: "there is no hop past the newest minor", got: func() (mesh.Version, bool) { return d.Next(v("1.31.1")) }, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.got()
			if tc.want == "" {
				if ok {
					t.Fatalf("got %s, want none", got)
				}
				return
			}
			if !ok || got.String() != tc.want {
				t.Fatalf("got %s (%v), want %s", got, ok, tc.want)
			}
		})
	}
}

func TestAMinorTheBaseDataDoesNotDescribeIsTargetableWithItsUnknownsReported(t *testing.T) {
	d := fromFixture(t, releases.IndexOptions{})
	m := minor(t, d, "1.21.0")
	want := []releases.Field{releases.FieldReleased, releases.FieldKubernetes, releases.FieldKubernetesTested, releases.FieldMinKubernetes, releases.FieldGatewayAPI}
	if diff := cmp.Diff(want, m.Unknown()); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
	if got := m.Source(releases.FieldKubernetes); !strings.Contains(got, "unknown: testdata/index.yaml serves 1.21, which embedded release data (releases.yaml) does not describe") {
		t.Errorf("Source(kubernetes) = %q", got)
	}
	if got := d.Kubernetes(m.Version(), mesh.MustParseVersion("1.30.0")); got != releases.UnknownRange {
		t.Errorf("Kubernetes = %s, want %s", got, releases.UnknownRange)
	}
	if got := m.MinimumKubernetes(); !got.IsZero() {
		t.Errorf("MinimumKubernetes = %s, want none", got)
	}
	// The support policy still gives an end of life: six weeks after 1.23.0, which the base data has.
	if eol, est, ok := d.EndOfLife(m.Version()); !ok || est || eol.Format("2006-01-02") != "2024-09-25" {
		t.Errorf("EndOfLife = %v %v %v, want 2024-09-25 from 1.23's release", eol, est, ok)
	}
	if m.Estimates() != nil {
		t.Errorf("nothing about 1.21 is estimated, it is unknown: %v", m.Estimates())
	}
}

func TestIndexDataKeepsTheBaseDataForRunningVersions(t *testing.T) {
	base := releases.Default()
	d := fromFixture(t, releases.IndexOptions{})
	for _, v := range []string{"1.27.0", "1.28.0", "1.30.0"} {
		bm, m := minor(t, base, v), minor(t, d, v)
		if bm.KubernetesRange() != m.KubernetesRange() || bm.GatewayAPI != m.GatewayAPI || bm.Released != m.Released || bm.MinKubernetes != m.MinKubernetes {
			t.Errorf("%s: the index data changed the base data's dates or ranges", v)
		}
		if bm.Source(releases.FieldKubernetes) != m.Source(releases.FieldKubernetes) {
			t.Errorf("%s: the index data changed the source of the Kubernetes range", v)
		}
	}
	if got := minor(t, d, "1.30.0").Source(releases.FieldPatches); got != "served by every chart of testdata/index.yaml (base, istiod, cni, ztunnel)" {
		t.Errorf("Source(patches) of 1.30 = %q", got)
	}
	if minor(t, d, "1.30.0").IsEstimated(releases.FieldPatches) {
		t.Error("patches read from the index are not estimates")
	}
	if err := d.CheckRunning(mesh.MustParseVersion("1.27.3")); err != nil {
		t.Errorf("a cluster may run 1.27.3 although the index does not serve it: %v", err)
	}
	// Index data must not change the caller's base data.
	if got := minor(t, base, "1.28.0").Patches(); len(got) < 2 {
		t.Errorf("the base data's 1.28 patches became %v", got)
	}
	o := d.Origin()
	if o.Kind != releases.OriginHelmIndex || o.Generated != "2026-10-21T18:02:11.48213377Z" || o.Base == nil || o.Base.Kind != releases.OriginEmbedded {
		t.Errorf("Origin = %+v", o)
	}
}

func TestIndexDataRoundTripsThroughTheReleaseDataShape(t *testing.T) {
	d := fromFixture(t, releases.IndexOptions{})
	out, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := releases.Load(strings.NewReader(string(out)))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if diff := cmp.Diff(patchesByMinor(d), patchesByMinor(back)); diff != "" {
		t.Errorf("patches changed (-index +reloaded):\n%s", diff)
	}
	if err := back.Check(mesh.MustParseVersion("1.28.4")); !errors.Is(err, releases.ErrUnknownVersion) || !strings.Contains(err.Error(), "1.28.10") {
		t.Errorf("the reloaded data accepts a patch the index lacks: %v", err)
	}
}

func TestAnInputThatIsNotAUsableIndexIsRefusedSayingWhy(t *testing.T) {
	good, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
		opts releases.IndexOptions
		says string
	}{
		{name: "an HTML error page is not an index", in: "<html><body>403 Forbidden</body></html>", says: "is not a Helm repository index"},
		{name: "an empty file is not an index", in: "", says: `apiVersion is ""`},
		{name: "a release data document is not an index", in: oldShape, says: `apiVersion is "ambientkit.io/v1alpha1", want "v1"`},
		{name: "an index without entries serves nothing", in: "apiVersion: v1\nentries: {}\n", says: "has no entries"},
		{name: "an index that lacks a chart of the install names it and the charts it has", in: "apiVersion: v1\nentries:\n  base: []\n  istiod: []\n",
			says: `has no chart "cni" (it has base, istiod)`},
		{name: "entries that are not lists of chart versions are refused", in: "apiVersion: v1\nentries:\n  base: {version: 1.30.0}\n", opts: releases.IndexOptions{Charts: []string{"base"}},
			says: `entries of chart "base" are not a list`},
		{name: "an index whose charts share no release is refused", in: "apiVersion: v1\nentries:\n  base: [{version: 1.30.0, urls: [a]}]\n  istiod: [{version: 1.30.1, urls: [b]}]\n",
			opts: releases.IndexOptions{Charts: []string{"base", "istiod"}}, says: "no release version that all of base, istiod serve"},
		{name: "an empty chart list is refused", in: string(good), opts: releases.IndexOptions{Charts: []string{}}, says: "IndexOptions.Charts is empty"},
		{name: "a chart the caller names that the index lacks is refused", in: string(good), opts: releases.IndexOptions{Charts: []string{"istio-cni"}},
			says: `has no chart "istio-cni"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := releases.FromHelmIndex(strings.NewReader(tc.in), tc.opts)
			if !errors.Is(err, releases.ErrInvalidIndex) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want ErrInvalidIndex saying %q", err, tc.says)
			}
		})
	}
	if _, err := releases.LoadHelmIndexFile(filepath.Join(t.TempDir(), "missing-index.yaml"), releases.IndexOptions{}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want an os.ErrNotExist error", err)
	}
}

func TestACallersBaseDataSuppliesTheRanges(t *testing.T) {
	base := load(t, newShape) // knows 1.31 (exact patches 0, 2, 4) and 1.33
	d := fromFixture(t, releases.IndexOptions{Base: base})
	if got := minor(t, d, "1.31.0").KubernetesRange(); got != "1.32–1.36" {
		t.Errorf("1.31 range = %q, want the caller's", got)
	}
	if got := minor(t, d, "1.31.0").Patches(); !cmp.Equal(got, []int{1}) {
		t.Errorf("1.31 patches = %v, want the index's [1], not the caller's", got)
	}
	if got := minor(t, d, "1.30.0").Unknown(); len(got) != 5 {
		t.Errorf("1.30 is not in the caller's base data, so its dates and ranges are unknown: %v", got)
	}
	if err := d.Check(mesh.MustParseVersion("1.33.0")); !errors.Is(err, releases.ErrUnknownVersion) {
		t.Errorf("1.33 is in the base data but not in the index: %v", err)
	}
}
