package releases

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

//go:embed releases.yaml
var embedded []byte

// Kind is the kind of a release data document.
const Kind = "ReleaseData"

// ErrUnknownVersion is wrapped when a version is not in the release data.
var ErrUnknownVersion = errors.New("version not in release data")

// ErrInvalidData is wrapped by errors from Load.
var ErrInvalidData = errors.New("invalid release data")

// Data is the release table.
type Data struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Releases   []Minor `json:"releases"`
}

// Minor describes one Istio minor release line.
type Minor struct {
	// Minor is "1.31".
	Minor string `json:"minor"`
	// Released is the date of x.y.0.
	Released string `json:"released"`
	// EndOfLife is when support ends; empty means six weeks after minor+2's release.
	EndOfLife string `json:"endOfLife,omitempty"`
	// Estimated marks dates and ranges that are expected rather than announced.
	Estimated bool `json:"estimated,omitempty"`
	// LatestPatch is the newest patch the data knows.
	LatestPatch int `json:"latestPatch"`
	// Kubernetes is the supported range of Kubernetes minors, [min, max].
	Kubernetes []string `json:"kubernetes"`
	// KubernetesTested is the tested-but-not-supported range, [min, max].
	KubernetesTested []string `json:"kubernetesTested,omitempty"`
	// MinKubernetes is istioctl's hard minimum.
	MinKubernetes string `json:"minKubernetes,omitempty"`
	// GatewayAPI is the Gateway API version the release is built against.
	GatewayAPI string `json:"gatewayAPI,omitempty"`

	version  mesh.Version
	released time.Time
	eol      time.Time
	k8s      [2]mesh.Version
	tested   [2]mesh.Version
	minK8s   mesh.Version
}

// Default returns the embedded release data. It panics only if the embedded file is broken, which a
// test rules out.
func Default() *Data {
	d, err := Load(strings.NewReader(string(embedded)))
	if err != nil {
		panic(err)
	}
	return d
}

// LoadFile reads release data from a YAML or JSON file.
func LoadFile(path string) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("release data: %w", err)
	}
	defer f.Close()
	d, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Load reads and checks release data: every minor parses, dates are YYYY-MM-DD, ranges have two
// entries, minors are unique.
func Load(r io.Reader) (*Data, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	var d Data
	if err := yaml.UnmarshalStrict(raw, &d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	if d.Kind != Kind || d.APIVersion != mesh.APIVersion {
		return nil, fmt.Errorf("%w: apiVersion/kind are %q/%q; want %q/%q", ErrInvalidData, d.APIVersion, d.Kind, mesh.APIVersion, Kind)
	}
	if len(d.Releases) == 0 {
		return nil, fmt.Errorf("%w: no releases", ErrInvalidData)
	}
	seen := map[string]bool{}
	for i := range d.Releases {
		m := &d.Releases[i]
		if err := m.parse(); err != nil {
			return nil, fmt.Errorf("%w: releases[%d] (minor %q): %v", ErrInvalidData, i, m.Minor, err)
		}
		if seen[m.Minor] {
			return nil, fmt.Errorf("%w: minor %q listed twice", ErrInvalidData, m.Minor)
		}
		seen[m.Minor] = true
	}
	sort.Slice(d.Releases, func(i, j int) bool { return d.Releases[i].version.Less(d.Releases[j].version) })
	return &d, nil
}

func (m *Minor) parse() error {
	v, err := mesh.ParseVersion(m.Minor + ".0")
	if err != nil {
		return fmt.Errorf("minor: %w", err)
	}
	m.version = v
	if m.released, err = time.Parse(time.DateOnly, m.Released); err != nil {
		return fmt.Errorf("released %q is not YYYY-MM-DD", m.Released)
	}
	if m.EndOfLife != "" {
		if m.eol, err = time.Parse(time.DateOnly, m.EndOfLife); err != nil {
			return fmt.Errorf("endOfLife %q is not YYYY-MM-DD", m.EndOfLife)
		}
	}
	if m.LatestPatch < 0 {
		return errors.New("latestPatch is negative")
	}
	parseRange := func(name string, r []string, required bool) ([2]mesh.Version, error) {
		var out [2]mesh.Version
		if len(r) == 0 && !required {
			return out, nil
		}
		if len(r) != 2 {
			return out, fmt.Errorf("%s must be [min, max]", name)
		}
		for i, s := range r {
			k, err := mesh.ParseKubernetesVersion(s)
			if err != nil {
				return out, fmt.Errorf("%s: %w", name, err)
			}
			out[i] = k
		}
		if out[1].Less(out[0]) {
			return out, fmt.Errorf("%s: max %s is below min %s", name, r[1], r[0])
		}
		return out, nil
	}
	if m.k8s, err = parseRange("kubernetes", m.Kubernetes, true); err != nil {
		return err
	}
	if m.tested, err = parseRange("kubernetesTested", m.KubernetesTested, false); err != nil {
		return err
	}
	if m.MinKubernetes != "" {
		if m.minK8s, err = mesh.ParseKubernetesVersion(m.MinKubernetes); err != nil {
			return fmt.Errorf("minKubernetes: %w", err)
		}
	}
	return nil
}

// Minor returns the entry for v's minor.
func (d *Data) Minor(v mesh.Version) (*Minor, bool) {
	for i := range d.Releases {
		if d.Releases[i].version.SameMinor(v) {
			return &d.Releases[i], true
		}
	}
	return nil, false
}

// Check returns nil when v is a release the data knows, and an error wrapping ErrUnknownVersion that
// names the known range otherwise. Pre-releases are refused: the data lists only releases.
func (d *Data) Check(v mesh.Version) error {
	m, ok := d.Minor(v)
	switch {
	case !ok:
		first, last := d.Releases[0].version, d.Releases[len(d.Releases)-1].version
		return fmt.Errorf("%w: %s: known minors are %s to %s; pass newer release data (releases.LoadFile) if %s exists",
			ErrUnknownVersion, v, first.MinorString(), last.MinorString(), v.MinorString())
	case v.Pre != "":
		return fmt.Errorf("%w: %s is a pre-release; plan to a release (%s.%d is the newest known)", ErrUnknownVersion, v, m.Minor, m.LatestPatch)
	case v.Patch > m.LatestPatch:
		return fmt.Errorf("%w: %s: the newest %s patch known is %s.%d; pass newer release data (releases.LoadFile) if %s exists",
			ErrUnknownVersion, v, m.Minor, m.Minor, m.LatestPatch, v)
	}
	return nil
}

// Latest returns the newest known patch of v's minor.
func (d *Data) Latest(v mesh.Version) (mesh.Version, bool) {
	m, ok := d.Minor(v)
	if !ok {
		return mesh.Version{}, false
	}
	return mesh.Version{Major: m.version.Major, Minor: m.version.Minor, Patch: m.LatestPatch}, true
}

// Next returns the newest patch of the minor after v's, if the data knows it.
func (d *Data) Next(v mesh.Version) (mesh.Version, bool) {
	return d.Latest(mesh.Version{Major: v.Major, Minor: v.Minor + 1})
}

// Newest returns the newest release the data knows.
func (d *Data) Newest() mesh.Version {
	last := d.Releases[len(d.Releases)-1]
	return mesh.Version{Major: last.version.Major, Minor: last.version.Minor, Patch: last.LatestPatch}
}

// Support says how a release line stands with a Kubernetes version.
type Support string

// Kubernetes support levels.
const (
	Supported    Support = "supported"
	TestedOnly   Support = "tested"
	TooOld       Support = "too-old"
	TooNew       Support = "too-new"
	UnknownMinor Support = "unknown"
)

// Kubernetes says whether the Istio minor of v supports Kubernetes version k.
func (d *Data) Kubernetes(v, k mesh.Version) Support {
	m, ok := d.Minor(v)
	if !ok {
		return UnknownMinor
	}
	switch {
	case k.MinorIndex() >= m.k8s[0].MinorIndex() && k.MinorIndex() <= m.k8s[1].MinorIndex():
		return Supported
	case !m.tested[0].IsZero() && k.MinorIndex() >= m.tested[0].MinorIndex() && k.MinorIndex() <= m.tested[1].MinorIndex():
		return TestedOnly
	case k.MinorIndex() > m.k8s[1].MinorIndex():
		return TooNew
	}
	return TooOld
}

// KubernetesRange returns the supported range as "1.32–1.36".
func (m *Minor) KubernetesRange() string { return m.Kubernetes[0] + "–" + m.Kubernetes[1] }

// MinimumKubernetes returns istioctl's hard minimum for the minor (zero when unknown).
func (m *Minor) MinimumKubernetes() mesh.Version { return m.minK8s }

// Version returns the minor as a version (x.y.0).
func (m *Minor) Version() mesh.Version { return m.version }

// EndOfLife returns when the minor's support ends: the listed date, or six weeks after minor+2's
// release. ok is false when neither is known.
func (d *Data) EndOfLife(v mesh.Version) (eol time.Time, estimated, ok bool) {
	m, found := d.Minor(v)
	if !found {
		return time.Time{}, false, false
	}
	if !m.eol.IsZero() {
		return m.eol, m.Estimated, true
	}
	n2, found := d.Minor(mesh.Version{Major: v.Major, Minor: v.Minor + 2})
	if !found {
		return time.Time{}, false, false
	}
	return n2.released.AddDate(0, 0, 42), n2.Estimated, true
}

// ReleasedOn returns the date of x.y.0.
func (m *Minor) ReleasedOn() time.Time { return m.released }
