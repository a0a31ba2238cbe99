package mesh_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" means an error
		says string // the error must contain this
	}{
		{name: "a release parses", in: "1.31.2", want: "1.31.2"},
		{name: "a release candidate parses", in: "1.31.0-rc.0", want: "1.31.0-rc.0"},
		{name: "an empty version is refused", in: "", says: "empty"},
		{name: "a wildcard minor is refused", in: "1.x", says: "major.minor.patch"},
		{name: "a leading v is refused with the fix", in: "v1.31", says: `drop the leading "v"`},
		{name: "a missing patch is refused with an example", in: "1.31", says: `"1.31.0"`},
		{name: "an image variant is not a version", in: "1.31.0-distroless", says: "image tags"},
		{name: "a negative number is refused", in: "1.-1.0", says: "major.minor.patch"},
		{name: "a leading zero is refused", in: "1.031.0", says: "not a number"},
		{name: "spaces are refused", in: " 1.31.0", says: "spaces"},
		{name: "a huge number is refused", in: "1.9999999.0", says: "not a number"},
		{name: "a pre-release without a number is refused", in: "1.31.0-rc", says: "pre-release"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := mesh.ParseVersion(tc.in)
			if tc.want != "" {
				if err != nil || v.String() != tc.want {
					t.Fatalf("ParseVersion(%q) = %v, %v; want %s", tc.in, v, err, tc.want)
				}
				return
			}
			if !errors.Is(err, mesh.ErrInvalidVersion) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("ParseVersion(%q) error = %v; want ErrInvalidVersion mentioning %q", tc.in, err, tc.says)
			}
		})
	}
}

func TestVersionFromImageTag(t *testing.T) {
	tests := []struct {
		name, image, want string
	}{
		{"a distroless tag loses its variant", "docker.io/istio/ztunnel:1.30.3-distroless", "1.30.3"},
		{"a debug tag loses its variant", "gcr.io/istio-release/pilot:1.29.1-debug", "1.29.1"},
		{"a digest after the tag is ignored", "reg:5000/istio/pilot:1.31.0-rc.0@sha256:abcd", "1.31.0-rc.0"},
		{"a bare tag works", "1.30.3", "1.30.3"},
		{"latest is not a release", "docker.io/istio/pilot:latest", ""},
		{"an image without a tag has no version", "reg:5000/istio/pilot", ""},
		{"a digest-only image has no version", "docker.io/istio/pilot@sha256:abcd", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := mesh.VersionFromImageTag(tc.image)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("want an error, got %v", v)
				}
				return
			}
			if err != nil || v.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", v, err, tc.want)
			}
		})
	}
}

func TestVersionOrderAndDistance(t *testing.T) {
	v := mesh.MustParseVersion
	ordered := []string{"1.29.9", "1.30.0-alpha.1", "1.30.0-beta.0", "1.30.0-rc.0", "1.30.0-rc.2", "1.30.0", "1.30.1", "1.31.0", "2.0.0"}
	for i := 0; i+1 < len(ordered); i++ {
		if !v(ordered[i]).Less(v(ordered[i+1])) || v(ordered[i+1]).Less(v(ordered[i])) {
			t.Errorf("%s should sort before %s", ordered[i], ordered[i+1])
		}
	}
	if d := v("1.31.4").MinorsAhead(v("1.29.6")); d != 2 {
		t.Errorf("MinorsAhead = %d, want 2", d)
	}
	if r := v("1.31.2").RevisionName(); r != "1-31-2" {
		t.Errorf("RevisionName = %s", r)
	}
}

func TestKubernetesVersions(t *testing.T) {
	for in, want := range map[string]string{"v1.34.2": "1.34.2", "v1.33.5-eks-3cfe0ce": "1.33.5", "v1.32.1+k3s1": "1.32.1", "1.30": "1.30.0"} {
		v, err := mesh.ParseKubernetesVersion(in)
		if err != nil || v.String() != want {
			t.Errorf("ParseKubernetesVersion(%q) = %v, %v; want %s", in, v, err, want)
		}
	}
	for _, in := range []string{"", "v1", "vX.Y.Z", "1.2.3.4"} {
		if _, err := mesh.ParseKubernetesVersion(in); err == nil {
			t.Errorf("ParseKubernetesVersion(%q) should fail", in)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.31.2", "1.31.0-rc.0", "v1.31", "1.x", "", "1.31.0-distroless", "01.2.3", "1.2.3-beta.04"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := mesh.ParseVersion(s)
		if err != nil {
			if !errors.Is(err, mesh.ErrInvalidVersion) {
				t.Fatalf("error does not wrap ErrInvalidVersion: %v", err)
			}
			return
		}
		// What parses must print back to something that parses to the same version.
		again, err := mesh.ParseVersion(v.String())
		if err != nil || again != v {
			t.Fatalf("%q parsed to %v, which re-parses to %v, %v", s, v, again, err)
		}
		_, _ = mesh.VersionFromImageTag("reg/x:" + s)
		_, _ = mesh.ParseKubernetesVersion(s)
	})
}
