package releases_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// oldShape is a caller's file in the v1alpha1 shape, as earlier releases of this package documented it.
const oldShape = `apiVersion: ambientkit.io/v1alpha1
kind: ReleaseData
releases:
- minor: "1.33"
  released: "2027-02-01"
  estimated: true
  latestPatch: 2
  kubernetes: ["1.35", "1.39"]
  kubernetesTested: ["1.30", "1.34"]
  minKubernetes: "1.35"
  gatewayAPI: v1.7.0
- minor: "1.31"
  released: "2026-08-31"
  endOfLife: "2027-03-01"
  latestPatch: 4
  kubernetes: ["1.32", "1.36"]
`

func load(t *testing.T, doc string) *releases.Data {
	t.Helper()
	d, err := releases.Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func minor(t *testing.T, d *releases.Data, v string) *releases.Minor {
	t.Helper()
	m, ok := d.Minor(mesh.MustParseVersion(v))
	if !ok {
		t.Fatalf("no minor for %s", v)
	}
	return m
}

func TestAFileInTheOldShapeStillLoads(t *testing.T) {
	d := load(t, oldShape)
	if got := d.Origin().APIVersion; got != releases.APIVersionV1Alpha1 {
		t.Errorf("origin apiVersion = %q, want %q", got, releases.APIVersionV1Alpha1)
	}
	if err := d.Check(mesh.MustParseVersion("1.33.2")); err != nil {
		t.Errorf("1.33.2 is in the file: %v", err)
	}
	if err := d.Check(mesh.MustParseVersion("1.33.3")); !errors.Is(err, releases.ErrUnknownVersion) {
		t.Errorf("1.33.3 is above latestPatch: %v", err)
	}
	m := minor(t, d, "1.33.0")
	tests := []struct {
		name  string
		got   any
		want  any
		field releases.Field
	}{
		{name: "the old estimated flag marks the release date", got: m.IsEstimated(releases.FieldReleased), want: true},
		{name: "the old estimated flag marks the supported range", got: m.IsEstimated(releases.FieldKubernetes), want: true},
		{name: "the old estimated flag marks the tested range", got: m.IsEstimated(releases.FieldKubernetesTested), want: true},
		{name: "the old estimated flag marks the Kubernetes minimum", got: m.IsEstimated(releases.FieldMinKubernetes), want: true},
		{name: "the old estimated flag does not mark the Gateway API version", got: m.IsEstimated(releases.FieldGatewayAPI), want: false},
		{name: "the old estimated flag does not mark the patches", got: m.IsEstimated(releases.FieldPatches), want: false},
		{name: "the old shape states no sources", got: m.Source(releases.FieldKubernetes), want: ""},
		{name: "the aggregate Estimated field keeps its old meaning", got: m.Estimated, want: true},
		{name: "a minor without the flag has no estimates", got: minor(t, d, "1.31.0").Estimates(), want: []releases.Field(nil)},
		{name: "optional fields left out of the old shape are unknown", got: minor(t, d, "1.31.0").Unknown(),
			want: []releases.Field{releases.FieldKubernetesTested, releases.FieldMinKubernetes, releases.FieldGatewayAPI}},
		{name: "every patch up to latestPatch may be targeted", got: m.Patches(), want: []int{0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestAnEmptyTestedRangeInTheOldShapeStillMeansNone(t *testing.T) {
	d := load(t, "apiVersion: ambientkit.io/v1alpha1\nkind: ReleaseData\nreleases:\n"+
		"- {minor: \"1.31\", released: \"2026-08-31\", latestPatch: 4, kubernetes: [\"1.32\", \"1.36\"], kubernetesTested: []}\n")
	if m := minor(t, d, "1.31.0"); m.Known(releases.FieldKubernetesTested) {
		t.Errorf("an empty tested range is known: %v", m.KubernetesTested)
	}
}

const newShape = `apiVersion: ambientkit.io/v1alpha2
kind: ReleaseData
releases:
- minor: "1.33"
  released: {value: "2027-02-01", source: "a guess", estimated: true}
  patches: {latest: 2, source: "istio.io/api tags", estimated: true}
  kubernetes: {source: "not announced yet"}
  kubernetesTested: {value: ["1.30", "1.34"], source: "supportStatus.yml"}
  minKubernetes: {source: "not announced yet"}
  gatewayAPI: {value: v1.7.0, source: "istio/istio@master:go.mod"}
- minor: "1.31"
  released: {value: "2026-08-31", source: "announcing-1.29-eol"}
  endOfLife: {value: "2027-03-01", source: "announcing-1.31-eol", estimated: true}
  patches: {list: [4, 0, 2], source: "a mirror"}
  kubernetes: {value: ["1.32", "1.36"], source: "announcing-1.31"}
  kubernetesTested: {value: ["1.27", "1.31"], source: "supportStatus.yml"}
  minKubernetes: {value: "1.32", source: "istio/istio@release-1.31:istioctl/pkg/install/k8sversion/version.go"}
  gatewayAPI: {value: v1.6.0, source: "istio/istio@release-1.31:go.mod"}
`

func TestTheNewShapeStatesASourceAndAnEstimatePerField(t *testing.T) {
	d := load(t, newShape)
	m33, m31 := minor(t, d, "1.33.0"), minor(t, d, "1.31.0")
	k := mesh.MustParseVersion("1.36.0")
	tests := []struct {
		name      string
		got, want any
	}{
		{name: "a field's source is what the document states", got: m33.Source(releases.FieldGatewayAPI), want: "istio/istio@master:go.mod"},
		{name: "a field without a value says why in its source", got: m33.Source(releases.FieldKubernetes), want: "not announced yet"},
		{name: "a field without a value is unknown", got: m33.Unknown(), want: []releases.Field{releases.FieldKubernetes, releases.FieldMinKubernetes}},
		{name: "estimated fields are listed in document order", got: m33.Estimates(), want: []releases.Field{releases.FieldReleased, releases.FieldPatches}},
		{name: "an unknown supported range is reported as such", got: d.Kubernetes(m33.Version(), k), want: releases.UnknownRange},
		{name: "an unknown supported range prints as unknown", got: m33.KubernetesRange(), want: "unknown"},
		{name: "an estimated end of life is reported as estimated", got: func() bool { _, est, _ := d.EndOfLife(m31.Version()); return est }(), want: true},
		{name: "an end of life the data does not state names the policy", got: m33.Source(releases.FieldEndOfLife),
			want: "not stated; the support policy puts it six weeks after 1.35.0 (Data.EndOfLife)"},
		{name: "a patch list is exact and sorted", got: m31.Patches(), want: []int{0, 2, 4}},
		{name: "a patch missing from a list is refused", got: errors.Is(d.Check(mesh.MustParseVersion("1.31.3")), releases.ErrUnknownVersion), want: true},
		{name: "the newest patch of a list is the latest", got: func() string { v, _ := d.Latest(m31.Version()); return v.String() }(), want: "1.31.4"},
		{name: "the document's apiVersion is recorded", got: d.Origin().APIVersion, want: releases.APIVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestTheNewShapeRefusesFieldsThatDoNotSayWhatTheyAre(t *testing.T) {
	head := "apiVersion: ambientkit.io/v1alpha2\nkind: ReleaseData\nreleases:\n- minor: \"1.31\"\n"
	full := map[string]string{
		"released":         `{value: "2026-08-31", source: s}`,
		"patches":          `{latest: 4, source: s}`,
		"kubernetes":       `{value: ["1.32", "1.36"], source: s}`,
		"kubernetesTested": `{value: ["1.27", "1.31"], source: s}`,
		"minKubernetes":    `{value: "1.32", source: s}`,
		"gatewayAPI":       `{value: v1.6.0, source: s}`,
	}
	doc := func(change map[string]string) string {
		var b strings.Builder
		b.WriteString(head)
		for _, f := range []string{"released", "endOfLife", "patches", "kubernetes", "kubernetesTested", "minKubernetes", "gatewayAPI", "colour"} {
			v, ok := change[f]
			if !ok {
				v, ok = full[f]
			}
			if ok && v != "" {
				b.WriteString("  " + f + ": " + v + "\n")
			}
		}
		return b.String()
	}
	if _, err := releases.Load(strings.NewReader(doc(nil))); err != nil {
		t.Fatalf("the complete minor should load: %v", err)
	}
	tests := []struct {
		name   string
		change map[string]string
		says   string
	}{
		{name: "a missing field is refused naming it", change: map[string]string{"kubernetes": ""}, says: "kubernetes is missing"},
		{name: "a field with neither value nor source is refused", change: map[string]string{"gatewayAPI": "{}"}, says: "gatewayAPI has neither a value nor a source"},
		{name: "an estimate without a value is refused", change: map[string]string{"minKubernetes": "{source: s, estimated: true}"}, says: "minKubernetes is marked estimated but has no value"},
		{name: "patches with both latest and list are refused", change: map[string]string{"patches": "{latest: 4, list: [4]}"}, says: "both latest and list"},
		{name: "patches with neither latest nor list are refused", change: map[string]string{"patches": "{source: s}"}, says: "needs latest"},
		{name: "a patch listed twice is refused", change: map[string]string{"patches": "{list: [1, 1]}"}, says: "patch 1 twice"},
		{name: "an estimated patch list is refused", change: map[string]string{"patches": "{list: [1], estimated: true}"}, says: "a list is exact"},
		{name: "a Gateway API version that is not a version is refused", change: map[string]string{"gatewayAPI": "{value: latest, source: s}"}, says: "gatewayAPI"},
		{name: "a minimum without a supported range is refused", change: map[string]string{"kubernetes": "{source: not announced}"}, says: "minKubernetes is known but kubernetes is not"},
		{name: "an unknown key inside a field is refused", change: map[string]string{"released": `{value: "2026-08-31", sauce: s}`}, says: "sauce"},
		{name: "an unknown field is refused", change: map[string]string{"colour": "{value: red}"}, says: "colour"},
		{name: "the old flat shape under the new apiVersion is refused", change: map[string]string{"released": `"2026-08-31"`}, says: "released"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := releases.Load(strings.NewReader(doc(tc.change)))
			if !errors.Is(err, releases.ErrInvalidData) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want ErrInvalidData saying %q", err, tc.says)
			}
		})
	}
}

func TestReleaseDataRoundTripsThroughYAMLInTheNewShape(t *testing.T) {
	for name, d := range map[string]*releases.Data{"embedded": releases.Default(), "old shape": load(t, oldShape), "new shape": load(t, newShape)} {
		t.Run(name, func(t *testing.T) {
			out, err := yaml.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(out), "apiVersion: "+releases.APIVersion+"\n") {
				t.Fatalf("marshalled data does not start with the new apiVersion:\n%.200s", out)
			}
			back, err := releases.Load(strings.NewReader(string(out)))
			if err != nil {
				t.Fatalf("marshalled data does not load: %v\n%s", err, out)
			}
			again, err := yaml.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(out), string(again)); diff != "" {
				t.Errorf("a second round trip changed the document (-first +second):\n%s", diff)
			}
			for i := range d.Releases {
				m, n := &d.Releases[i], &back.Releases[i]
				for _, f := range releases.Fields() {
					wantSource := m.Source(f)
					if wantSource == "" && !m.Known(f) && f != releases.FieldEndOfLife {
						wantSource = "not stated" // an unknown value must say why to load again
					}
					if wantSource != n.Source(f) || m.IsEstimated(f) != n.IsEstimated(f) || m.Known(f) != n.Known(f) {
						t.Errorf("%s %s: source/estimated/known %q/%v/%v became %q/%v/%v",
							m.Minor, f, m.Source(f), m.IsEstimated(f), m.Known(f), n.Source(f), n.IsEstimated(f), n.Known(f))
					}
				}
				if cmp.Diff(m.Patches(), n.Patches()) != "" {
					t.Errorf("%s: patches %v became %v", m.Minor, m.Patches(), n.Patches())
				}
			}
		})
	}
}

func TestARunningVersionNeedNotBeTargetable(t *testing.T) {
	d := load(t, newShape)
	tests := []struct {
		name    string
		version string
		ok      bool
	}{
		{name: "a patch the data lists is known", version: "1.31.4", ok: true},
		{name: "a patch between listed ones is known though it cannot be targeted", version: "1.31.3", ok: true},
		{name: "a pre-release of a known minor is known", version: "1.33.0-rc.0", ok: true},
		{name: "a patch newer than any the data knows is not", version: "1.31.5", ok: false},
		{name: "a minor the data does not describe is not", version: "1.34.0", ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := d.CheckRunning(mesh.MustParseVersion(tc.version))
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, releases.ErrUnknownVersion) {
				t.Fatalf("CheckRunning(%s) = %v, want ok=%v", tc.version, err, tc.ok)
			}
		})
	}
}

func TestOriginSaysWhereTheDataCameFrom(t *testing.T) {
	if got, want := releases.Default().Origin().String(), "embedded release data (releases.yaml)"; got != want {
		t.Errorf("Default: %q, want %q", got, want)
	}
	if got, want := load(t, oldShape).Origin().Kind, releases.OriginReader; got != want {
		t.Errorf("Load: %q, want %q", got, want)
	}
	o := releases.Origin{Kind: releases.OriginHelmIndex, Name: "https://mirror.example/charts", Generated: "2026-09-21T19:17:15Z",
		Charts: []string{"base", "istiod"}, Base: &releases.Origin{Kind: releases.OriginEmbedded}}
	want := "Helm repository index https://mirror.example/charts (generated 2026-09-21T19:17:15Z; charts base, istiod), with dates and ranges from embedded release data (releases.yaml)"
	if got := o.String(); got != want {
		t.Errorf("index origin:\n got %q\nwant %q", got, want)
	}
}
