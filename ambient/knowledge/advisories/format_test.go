package advisories_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// valid is a small document in the shape advisories.yaml has; the bad documents below each break
// one rule of it.
const valid = `apiVersion: ambientkit.io/v1alpha1
kind: UpgradeAdvisories
horizons:
- minor: "1.29"
  newest: 1.29.8
  source: tags 1.29.0 to 1.29.6; announcements of 1.29.7 and 1.29.8
- minor: "1.30"
  newest: 1.30.5
  source: tags 1.30.0 to 1.30.3; announcements of 1.30.4 and 1.30.5
advisories:
- id: istio#60668
  title: a sidecar-mode istio-cni node agent can deadlock after a node reboot
  component: cni
  when: [node-reboot]
  conditions: [cni-ambient-disabled]
  affected:
  - from: 1.29.0
  - from: 1.30.0
    to: 1.30.3
  fixedIn:
  - version: 1.30.4
    source: release-1.30 after 1.30.3; the 1.30.4 announcement
  action: Move istio-cni to a fixed patch before rebooting nodes.
  source:
    note: releasenotes/notes/60668.yaml
    commit: 86c9f01fd735fb01d8192f5bcaf0d424afb7f14c
    issue: https://github.com/istio/istio/issues/60668
    pr: https://github.com/istio/istio/pull/60721
  reviewed: true
- id: istio#61155
  title: uninstalling a revision leaves its Leases behind
  component: istiod
  when: [revision-uninstall]
  conditions: [always]
  affected:
  - from: 1.29.0
  - from: 1.30.0
  action: Delete the revision's Leases after removing it.
  cleanup:
  - apiVersion: coordination.k8s.io/v1
    kind: Lease
    namespace: "{istioNamespace}"
    name: istio-gateway-deployment-{revision}
  source:
    issue: https://github.com/istio/istio/issues/61155
    refs: [pilot/pkg/leaderelection/leaderelection.go at 86c9f01]
  reviewed: false
`

func load(t *testing.T, doc string) *advisories.Data {
	t.Helper()
	d, err := advisories.Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAValidDocumentLoads(t *testing.T) {
	d := load(t, valid)
	a, ok := d.Advisory("istio#60668")
	if !ok {
		t.Fatal("istio#60668 is missing")
	}
	want := []advisories.Range{
		{From: mesh.MustParseVersion("1.29.0")},
		{From: mesh.MustParseVersion("1.30.0"), To: mesh.MustParseVersion("1.30.3")},
	}
	if diff := cmp.Diff(want, a.Affected); diff != "" {
		t.Errorf("affected (-want +got):\n%s", diff)
	}
	if got := a.Conditions[0]; got.Kind != advisories.CNIAmbientDisabled {
		t.Errorf("condition = %v", got)
	}
	if got := d.Origin().Kind; got != advisories.OriginReader {
		t.Errorf("origin = %s", got)
	}
}

func TestBadDocumentsAreRefusedNamingTheEntryAndTheFix(t *testing.T) {
	entry := `advisories[0] (id "istio#60668")`
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"a document of another kind is refused", "kind: UpgradeAdvisories", "kind: ReleaseData", []string{`want "ambientkit.io/v1alpha1" and "UpgradeAdvisories"`}},
		{"an unknown top-level field is refused", "horizons:\n", "extra: 1\nhorizons:\n", []string{`unknown field "extra"`}},
		{"an unknown field in an entry is refused", "  reviewed: true\n", "  reviewed: true\n  severity: high\n", []string{entry, `unknown field "severity"`}},
		{"a component outside the closed set is refused", "component: cni", "component: kiali", []string{entry, `component "kiali" is not one of istiod, cni`}},
		{"an operation outside the closed set is refused", "when: [node-reboot]", "when: [reboot]", []string{entry, `when "reboot" is not one of`}},
		{"an unknown condition is refused", "conditions: [cni-ambient-disabled]", "conditions: [ambient-off]", []string{entry, `condition "ambient-off" is not one of always, workloads>=N`}},
		{"a workload condition without its threshold is refused", "conditions: [cni-ambient-disabled]", "conditions: [workloads]", []string{entry, "give the threshold, e.g. workloads>=40000"}},
		{"always beside another condition is refused", "conditions: [cni-ambient-disabled]", "conditions: [always, cni-ambient-disabled]", []string{entry, "always must stand alone"}},
		{"no conditions at all is refused", "conditions: [cni-ambient-disabled]", "conditions: []", []string{entry, "write [always]"}},
		{"a range across minors is refused", "    to: 1.30.3", "    to: 1.31.3", []string{entry, "different minors; give one range per minor"}},
		{"a range ending below its start is refused", "  - from: 1.30.0\n    to: 1.30.3", "  - from: 1.30.2\n    to: 1.30.1", []string{entry, "to 1.30.1 is below from 1.30.2"}},
		{"ranges out of order are refused", "  - from: 1.29.0\n  - from: 1.30.0\n    to: 1.30.3", "  - from: 1.30.0\n    to: 1.30.3\n  - from: 1.29.0", []string{entry, "must come after"}},
		{"a range in a minor without a horizon is refused", "  - from: 1.29.0\n  - from: 1.30.0\n    to: 1.30.3", "  - from: 1.28.0\n  - from: 1.30.0\n    to: 1.30.3", []string{entry, "minor 1.28 has no horizon"}},
		{"a pre-release bound is refused", "    to: 1.30.3", "    to: 1.30.3-rc.0", []string{entry, "pre-release"}},
		{"a malformed version names the entry", "    to: 1.30.3", "    to: v1.30.3", []string{entry, `drop the leading "v"`}},
		{"a fixed release inside an affected range is refused", "  - version: 1.30.4", "  - version: 1.30.2", []string{entry, "fixedIn 1.30.2 lies in an affected range"}},
		{"a fixed release without a source is refused", "    source: release-1.30 after 1.30.3; the 1.30.4 announcement\n", "", []string{entry, "fixedIn 1.30.4 has no source"}},
		{"an entry without a note or refs is refused", "    note: releasenotes/notes/60668.yaml\n    commit: 86c9f01fd735fb01d8192f5bcaf0d424afb7f14c\n", "", []string{entry, "neither a note nor refs"}},
		{"a note without the commit it was read at is refused", "    commit: 86c9f01fd735fb01d8192f5bcaf0d424afb7f14c\n", "", []string{entry, "give the full istio/istio commit"}},
		{"an abbreviated commit is refused", "commit: 86c9f01fd735fb01d8192f5bcaf0d424afb7f14c", "commit: 86c9f01", []string{entry, "give the full istio/istio commit"}},
		{"an entry without an upstream link is refused", "    issue: https://github.com/istio/istio/issues/60668\n    pr: https://github.com/istio/istio/pull/60721\n", "", []string{entry, "neither issue nor pr"}},
		{"a link outside github.com/istio is refused", "pr: https://github.com/istio/istio/pull/60721", "pr: https://example.com/60721", []string{entry, "is not a github.com/istio/<repo>/issues/N or /pull/N URL"}},
		{"an id that names no issue is refused", "id: istio#60668", "id: cni-deadlock", []string{`(id "cni-deadlock")`, "id must name the upstream issue"}},
		{"an empty action is refused", "  action: Move istio-cni to a fixed patch before rebooting nodes.", "  action: \"\"", []string{entry, "action is empty"}},
		{"an entry affecting nothing is refused", "  affected:\n  - from: 1.29.0\n  - from: 1.30.0\n    to: 1.30.3\n  fixedIn:\n  - version: 1.30.4\n    source: release-1.30 after 1.30.3; the 1.30.4 announcement\n", "  affected: []\n", []string{entry, "affected is empty"}},
		{"a cleanup placeholder outside the set is refused", "name: istio-gateway-deployment-{revision}", "name: istio-gateway-deployment-{rev}", []string{`advisories[1] (id "istio#61155")`, "placeholder {rev} is not {revision} or {istioNamespace}"}},
		{"an id listed twice is refused", "id: istio#61155", "id: istio#60668", []string{`id "istio#60668" listed twice`}},
		{"a horizon newer than its minor is refused", "  newest: 1.29.8", "  newest: 1.30.8", []string{`horizons[0] (minor "1.29")`, "newest 1.30.8 is not a 1.29 release"}},
		{"a horizon without a source is refused", "  source: tags 1.29.0 to 1.29.6; announcements of 1.29.7 and 1.29.8", "  source: \"\"", []string{`horizons[0] (minor "1.29")`, "say what was read"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(valid, tc.old) {
				t.Fatalf("the valid document lacks %q", tc.old)
			}
			_, err := advisories.Load(strings.NewReader(strings.Replace(valid, tc.old, tc.new, 1)))
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			if !errors.Is(err, advisories.ErrInvalidData) {
				t.Errorf("error does not wrap ErrInvalidData: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestLoadFileNamesTheFile(t *testing.T) {
	_, err := advisories.LoadFile("testdata/no-such-file.yaml")
	if err == nil || !strings.Contains(err.Error(), "no-such-file.yaml") {
		t.Errorf("error = %v", err)
	}
	d, err := advisories.LoadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Origin().String(); got != "advisory data file testdata/valid.yaml" {
		t.Errorf("origin = %q", got)
	}
	bad := strings.Replace(valid, "component: cni", "component: kiali", 1)
	if _, err := advisories.Load(strings.NewReader(bad)); err == nil || strings.Contains(err.Error(), "testdata") {
		t.Errorf("Load names no file: %v", err)
	}
}

func TestWrittenDataLoadsBackEqual(t *testing.T) {
	d := load(t, valid)
	var y bytes.Buffer
	if err := d.WriteYAML(&y, "a header line\nanother"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(y.String(), "# a header line\n# another\napiVersion: ambientkit.io/v1alpha1\n") {
		t.Errorf("header not written first:\n%s", y.String())
	}
	back := load(t, y.String())
	opts := cmpopts.IgnoreUnexported(advisories.Data{}, advisories.Horizon{})
	if diff := cmp.Diff(d, back, opts); diff != "" {
		t.Errorf("YAML round trip (-want +got):\n%s", diff)
	}
	var y2 bytes.Buffer
	if err := back.WriteYAML(&y2, "a header line\nanother"); err != nil {
		t.Fatal(err)
	}
	if y.String() != y2.String() {
		t.Error("writing the same data twice gave different bytes")
	}
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON advisories.Data
	if err := json.Unmarshal(js, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, &fromJSON, opts); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"apiVersion":"ambientkit.io/v1alpha1","kind":"UpgradeAdvisories"}`), &fromJSON); err == nil {
		t.Error("UnmarshalJSON accepted a document without horizons")
	}
}
