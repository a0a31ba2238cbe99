package releases_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

func TestEmbeddedDataCoversSupportedRange(t *testing.T) {
	d := releases.Default()
	for m := 22; m <= 32; m++ {
		v := mesh.Version{Major: 1, Minor: m}
		if _, ok := d.Minor(v); !ok {
			t.Errorf("release data lacks 1.%d", m)
		}
	}
	if n, _ := d.Next(mesh.MustParseVersion("1.30.3")); n.String() != "1.31.4" {
		t.Errorf("next after 1.30.3 = %s, want 1.31.4", n)
	}
}

func TestKubernetesSupport(t *testing.T) {
	d := releases.Default()
	v := mesh.MustParseVersion
	tests := []struct {
		name       string
		istio, k8s string
		want       releases.Support
	}{
		{"the lowest supported Kubernetes is supported", "1.30.0", "1.32.0", releases.Supported},
		{"the highest supported Kubernetes is supported", "1.30.0", "1.36.4", releases.Supported},
		{"a tested-only Kubernetes is reported as tested", "1.30.0", "1.29.0", releases.TestedOnly},
		{"a newer Kubernetes is too new", "1.30.0", "1.37.0", releases.TooNew},
		{"an older Kubernetes is too old", "1.30.0", "1.20.0", releases.TooOld},
		{"an unknown minor is unknown", "1.50.0", "1.30.0", releases.UnknownMinor},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.Kubernetes(v(tc.istio), v(tc.k8s)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEndOfLifeFromDataOrPolicy(t *testing.T) {
	d := releases.Default()
	eol, est, ok := d.EndOfLife(mesh.MustParseVersion("1.29.0"))
	if !ok || est || eol.Format(time.DateOnly) != "2026-10-12" {
		t.Errorf("1.29 EOL = %v %v %v", eol, est, ok)
	}
	// 1.30 has no announced date: six weeks after 1.32's release, and estimated.
	eol, est, ok = d.EndOfLife(mesh.MustParseVersion("1.30.0"))
	if !ok || !est || eol.Format(time.DateOnly) != "2026-12-30" {
		t.Errorf("1.30 EOL = %v %v %v", eol, est, ok)
	}
}

func TestLoadRejectsBadData(t *testing.T) {
	head := "apiVersion: ambientkit.io/v1alpha1\nkind: ReleaseData\n"
	for name, in := range map[string]string{
		"a wrong kind is refused":                 "apiVersion: ambientkit.io/v1alpha1\nkind: Other\nreleases: []\n",
		"no releases are refused":                 head + "releases: []\n",
		"a bad date is refused":                   head + "releases:\n- minor: \"1.30\"\n  released: May\n  latestPatch: 1\n  kubernetes: [\"1.30\", \"1.31\"]\n",
		"a one-ended range is refused":            head + "releases:\n- minor: \"1.30\"\n  released: \"2026-05-14\"\n  latestPatch: 1\n  kubernetes: [\"1.30\"]\n",
		"an unknown field is refused":             head + "releases:\n- minor: \"1.30\"\n  colour: red\n",
		"a repeated minor is refused":             head + "releases:\n- {minor: \"1.30\", released: \"2026-05-14\", latestPatch: 1, kubernetes: [\"1.30\", \"1.31\"]}\n- {minor: \"1.30\", released: \"2026-05-14\", latestPatch: 1, kubernetes: [\"1.30\", \"1.31\"]}\n",
		"a minor that is not a number is refused": head + "releases:\n- {minor: \"1.x\", released: \"2026-05-14\", latestPatch: 1, kubernetes: [\"1.30\", \"1.31\"]}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := releases.Load(strings.NewReader(in)); !errors.Is(err, releases.ErrInvalidData) {
				t.Fatalf("err = %v, want ErrInvalidData", err)
			}
		})
	}
}

func TestCallerDataReplacesEmbeddedData(t *testing.T) {
	d, err := releases.Load(strings.NewReader(`apiVersion: ambientkit.io/v1alpha1
kind: ReleaseData
releases:
- {minor: "1.33", released: "2027-02-01", latestPatch: 2, kubernetes: ["1.35", "1.39"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Check(mesh.MustParseVersion("1.33.2")); err != nil {
		t.Fatalf("a caller's release should be known: %v", err)
	}
	if err := d.Check(mesh.MustParseVersion("1.31.4")); !errors.Is(err, releases.ErrUnknownVersion) {
		t.Fatalf("releases outside the caller's data are unknown: %v", err)
	}
}
