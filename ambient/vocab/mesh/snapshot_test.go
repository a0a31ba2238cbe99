package mesh_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
)

func TestSnapshotRoundTripsThroughYAML(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 5)
	b, err := mesh.EncodeSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mesh.DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	// Helm values decode as JSON types; normalize the original the same way.
	for i := range s.HelmReleases {
		s.HelmReleases[i].Values = jsonValues(t, s.HelmReleases[i].Values)
	}
	if d := cmp.Diff(s, got); d != "" {
		t.Fatalf("round trip changed the snapshot (-want +got):\n%s", d)
	}
}

func TestDecodeSnapshotRejectsBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"an unknown field is refused":     "apiVersion: ambientkit.io/v1alpha1\nkind: MeshSnapshot\nbogus: 1\n",
		"a wrong kind is refused":         "apiVersion: ambientkit.io/v1alpha1\nkind: Plan\n",
		"a bad version inside is refused": "apiVersion: ambientkit.io/v1alpha1\nkind: MeshSnapshot\nrevisions:\n- name: x\n  version: v1.2\n",
		"malformed YAML is refused":       "apiVersion: [",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := mesh.DecodeSnapshot([]byte(in)); !errors.Is(err, mesh.ErrInvalidSnapshot) {
				t.Fatalf("err = %v, want ErrInvalidSnapshot", err)
			}
		})
	}
}

func TestFingerprintFollowsWhatPlansDependOn(t *testing.T) {
	a := meshtest.Healthy("1.30.3", 3)
	b := meshtest.Healthy("1.30.3", 3)
	if a.Fingerprint() != b.Fingerprint() {
		t.Fatal("equal snapshots must have equal fingerprints")
	}
	b.Workloads[0].Ready = 0 // readiness churn does not make a plan stale
	if a.Fingerprint() != b.Fingerprint() {
		t.Fatal("pod readiness must not change the fingerprint")
	}
	b.Tags[0].Revision = "other"
	if a.Fingerprint() == b.Fingerprint() {
		t.Fatal("moving a tag must change the fingerprint")
	}
	c := meshtest.Healthy("1.30.3", 3)
	meshtest.SetZtunnel(c, "1.30.4")
	if a.Fingerprint() == c.Fingerprint() {
		t.Fatal("a ztunnel version change must change the fingerprint")
	}
	d := meshtest.Healthy("1.30.3", 3)
	d.Tags[1].ServiceRevision = "other" // only the Service of tag prod moved
	if a.Fingerprint() == d.Fingerprint() {
		t.Fatal("a tag's Service pointing elsewhere than its webhook must change the fingerprint")
	}
	e := meshtest.Healthy("1.30.3", 3)
	e.Gateways[1].Owners = []string{"1-30-3", "default"}
	if a.Fingerprint() == e.Fingerprint() {
		t.Fatal("a second revision claiming a gateway must change the fingerprint")
	}
}

func TestOwnershipFollowsIstiodRules(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 2)
	s.Revisions = append(s.Revisions, mesh.Revision{Name: "1-31-4", Namespace: "istio-system", Version: mesh.MustParseVersion("1.31.4")})
	s.Tags = append(s.Tags, mesh.Tag{Name: "canary", Revision: "1-31-4"})
	s.Namespaces = append(s.Namespaces, mesh.Namespace{Name: "edge", Labels: map[string]string{mesh.LabelRev: "canary"}})
	s.Normalize()
	tests := []struct {
		name, ns, label, want string
	}{
		{"an object's own label wins", "edge", "1-30-3", "1-30-3"},
		{"a tag label resolves to its revision", "shop", "canary", "1-31-4"},
		{"the namespace label applies when the object has none", "edge", "", "1-31-4"},
		{"an unlabelled object goes to the default tag's revision", "shop", "", "1-30-3"},
		{"a label naming nothing has no owner", "shop", "nope", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.OwnerOf(tc.ns, tc.label); got != tc.want {
				t.Fatalf("OwnerOf(%s, %q) = %q, want %q", tc.ns, tc.label, got, tc.want)
			}
		})
	}
	s.Tags = s.Tags[1:] // drop "canary"? keep order: remove default tag instead
	for i, tg := range s.Tags {
		if tg.Name == "default" {
			s.Tags = append(s.Tags[:i], s.Tags[i+1:]...)
		}
	}
	s.DefaultRevision = "1-31-4"
	if got := s.DefaultOwner(); got != "1-31-4" {
		t.Fatalf("without a default tag, 1.28+ istiod follows istiod-default-validator: got %q", got)
	}
}
