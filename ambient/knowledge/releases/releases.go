package releases

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

//go:embed releases.yaml
var embedded []byte

// Kind is the kind of a release data document.
const Kind = "ReleaseData"

// ErrUnknownVersion is wrapped when a version is not in the release data, or, for data built from a
// Helm repository index, not served by that chart source.
var ErrUnknownVersion = errors.New("version not in release data")

// ErrInvalidData is wrapped by errors from Load.
var ErrInvalidData = errors.New("invalid release data")

// Data is the release table. Load it with Default, Load, LoadFile, FromHelmIndex or
// LoadHelmIndexFile; a Data built field by field in code lacks the parsed values its methods use.
type Data struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Releases   []Minor `json:"releases"`

	origin Origin
}

// Minor describes one Istio minor release line.
type Minor struct {
	// Minor is "1.31".
	Minor string `json:"minor"`
	// Released is the date of x.y.0 (YYYY-MM-DD); empty when unknown.
	Released string `json:"released"`
	// EndOfLife is when support ends; empty means six weeks after minor+2's release.
	EndOfLife string `json:"endOfLife,omitempty"`
	// Estimated is true when a date or a Kubernetes range of the minor is expected rather than
	// announced. IsEstimated says it field by field.
	Estimated bool `json:"estimated,omitempty"`
	// LatestPatch is the newest patch a plan may target. In data from a Helm repository index only the
	// patches Patches lists may be targeted; when it lists none, the index serves no release of the
	// minor and LatestPatch is the newest the base data knew.
	LatestPatch int `json:"latestPatch"`
	// Kubernetes is the supported range of Kubernetes minors, [min, max]; empty when unknown.
	Kubernetes []string `json:"kubernetes"`
	// KubernetesTested is the tested-but-not-supported range, [min, max].
	KubernetesTested []string `json:"kubernetesTested,omitempty"`
	// MinKubernetes is the minimum istioctl checks (MinK8SVersion).
	MinKubernetes string `json:"minKubernetes,omitempty"`
	// GatewayAPI is the Gateway API version the release is built against.
	GatewayAPI string `json:"gatewayAPI,omitempty"`

	version  mesh.Version
	released time.Time
	eol      time.Time
	k8s      [2]mesh.Version
	tested   [2]mesh.Version
	minK8s   mesh.Version

	// exact is true when patches lists exactly the patches a plan may target; otherwise every patch
	// from 0 to LatestPatch may be.
	exact   bool
	patches []int
	// newestKnown is the newest patch any source of the data knows to exist (at least LatestPatch).
	newestKnown int
	info        map[Field]fieldInfo
}

// Default returns the embedded release data. It panics only if the embedded file is broken, which a
// test rules out.
func Default() *Data {
	d, err := decode(embedded, Origin{Kind: OriginEmbedded})
	if err != nil {
		panic(err)
	}
	return d
}

// LoadFile reads release data from a YAML or JSON file of either document shape (APIVersion or
// APIVersionV1Alpha1).
func LoadFile(path string) (*Data, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("release data: %w", err)
	}
	d, err := decode(raw, Origin{Kind: OriginFile, Name: path})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Load reads and checks release data of either document shape: every minor parses, dates are
// YYYY-MM-DD, ranges have two entries, minors are unique, and (for APIVersion documents) every
// field states its value or why it has none.
func Load(r io.Reader) (*Data, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	return decode(raw, Origin{Kind: OriginReader})
}

// Origin says where the data came from.
func (d *Data) Origin() Origin { return d.origin }

func (d *Data) sort() {
	sort.Slice(d.Releases, func(i, j int) bool { return d.Releases[i].version.Less(d.Releases[j].version) })
}

// parse checks the values that are set and fills the parsed fields.
func (m *Minor) parse() error {
	v, err := mesh.ParseVersion(m.Minor + ".0")
	if err != nil {
		return fmt.Errorf("minor: %w", err)
	}
	m.version = v
	if m.Released != "" {
		if m.released, err = time.Parse(time.DateOnly, m.Released); err != nil {
			return fmt.Errorf("released %q is not YYYY-MM-DD", m.Released)
		}
	}
	if m.EndOfLife != "" {
		if m.eol, err = time.Parse(time.DateOnly, m.EndOfLife); err != nil {
			return fmt.Errorf("endOfLife %q is not YYYY-MM-DD", m.EndOfLife)
		}
	}
	if m.LatestPatch < 0 {
		return errors.New("latestPatch is negative")
	}
	parseRange := func(name string, r []string) ([2]mesh.Version, error) {
		var out [2]mesh.Version
		if len(r) == 0 {
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
	if m.k8s, err = parseRange("kubernetes", m.Kubernetes); err != nil {
		return err
	}
	if m.tested, err = parseRange("kubernetesTested", m.KubernetesTested); err != nil {
		return err
	}
	if m.MinKubernetes != "" {
		if m.minK8s, err = mesh.ParseKubernetesVersion(m.MinKubernetes); err != nil {
			return fmt.Errorf("minKubernetes: %w", err)
		}
	}
	if m.GatewayAPI != "" {
		if _, err := mesh.ParseKubernetesVersion(m.GatewayAPI); err != nil {
			return fmt.Errorf("gatewayAPI: %w", err)
		}
	}
	m.Estimated = m.IsEstimated(FieldReleased) || m.IsEstimated(FieldEndOfLife) || m.IsEstimated(FieldKubernetes) ||
		m.IsEstimated(FieldKubernetesTested) || m.IsEstimated(FieldMinKubernetes)
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

// Patches returns the patches of the minor a plan may target, ascending: exactly those a chart
// repository index serves, or every patch from 0 to LatestPatch.
func (m *Minor) Patches() []int {
	if m.exact {
		return append([]int(nil), m.patches...)
	}
	out := make([]int, 0, m.LatestPatch+1)
	for p := 0; p <= m.LatestPatch; p++ {
		out = append(out, p)
	}
	return out
}

// HasPatch reports whether a plan may target patch p of the minor.
func (m *Minor) HasPatch(p int) bool {
	if !m.exact {
		return p >= 0 && p <= m.LatestPatch
	}
	i := sort.SearchInts(m.patches, p)
	return i < len(m.patches) && m.patches[i] == p
}

// latest returns the newest targetable patch.
func (m *Minor) latest() (mesh.Version, bool) {
	if m.exact && len(m.patches) == 0 {
		return mesh.Version{}, false
	}
	p := m.LatestPatch
	if m.exact {
		p = m.patches[len(m.patches)-1]
	}
	return mesh.Version{Major: m.version.Major, Minor: m.version.Minor, Patch: p}, true
}

// targetMinors returns the first and last minors that have a targetable patch.
func (d *Data) targetMinors() (first, last mesh.Version, ok bool) {
	for i := range d.Releases {
		if _, has := d.Releases[i].latest(); has {
			if !ok {
				first = d.Releases[i].version
			}
			last, ok = d.Releases[i].version, true
		}
	}
	return first, last, ok
}

// Check returns nil when a plan may target v, and an error wrapping ErrUnknownVersion that says what
// may be targeted otherwise. For the embedded data or a release data file that is any patch up to
// the newest the data knows. For data from a Helm repository index it is exactly the versions every
// chart of an install has there, and the error names the newest patch of v's minor the index does
// have. Pre-releases are refused: the data lists only releases.
func (d *Data) Check(v mesh.Version) error {
	fromIndex := d.origin.Kind == OriginHelmIndex
	m, ok := d.Minor(v)
	if ok {
		if _, has := m.latest(); !has {
			ok = false
		}
	}
	if !ok {
		first, last, found := d.targetMinors()
		switch {
		case !found:
			return fmt.Errorf("%w: %s: %s has no release a plan may target", ErrUnknownVersion, v, d.origin.short())
		case fromIndex:
			return fmt.Errorf("%w: %s: %s serves no %s release (it serves %s to %s); target one of those, or point at a chart repository that has %s",
				ErrUnknownVersion, v, d.origin.short(), v.MinorString(), first.MinorString(), last.MinorString(), v.MinorString())
		}
		return fmt.Errorf("%w: %s: known minors are %s to %s; pass newer release data (releases.LoadFile) or the chart repository's index (releases.LoadHelmIndexFile) if %s exists",
			ErrUnknownVersion, v, first.MinorString(), last.MinorString(), v.MinorString())
	}
	newest, _ := m.latest()
	switch {
	case v.Pre != "" && fromIndex:
		return fmt.Errorf("%w: %s is a pre-release; plan to a release (%s has %s as the newest %s patch)", ErrUnknownVersion, v, d.origin.short(), newest, m.Minor)
	case v.Pre != "":
		return fmt.Errorf("%w: %s is a pre-release; plan to a release (%s is the newest known)", ErrUnknownVersion, v, newest)
	case m.HasPatch(v.Patch):
		return nil
	case fromIndex:
		return fmt.Errorf("%w: %s is not in %s; the newest %s patch it has is %s; target that, or have the repository serve %s",
			ErrUnknownVersion, v, d.origin.short(), m.Minor, newest, v)
	case m.exact:
		return fmt.Errorf("%w: %s is not in %s; the newest %s patch it has is %s", ErrUnknownVersion, v, d.origin.short(), m.Minor, newest)
	}
	return fmt.Errorf("%w: %s: the newest %s patch known is %s; pass newer release data (releases.LoadFile) or the chart repository's index (releases.LoadHelmIndexFile) if %s exists",
		ErrUnknownVersion, v, m.Minor, newest, v)
}

// CheckRunning returns nil when the data describes v's minor and knows a patch at least as new as v:
// it is for versions observed running, which need not be targetable (a chart repository may no
// longer serve the patch a cluster runs). It returns an error wrapping ErrUnknownVersion otherwise.
func (d *Data) CheckRunning(v mesh.Version) error {
	m, ok := d.Minor(v)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s: %s does not describe %s; pass newer release data (releases.LoadFile)", ErrUnknownVersion, v, d.origin.short(), v.MinorString())
	case v.Pre == "" && v.Patch > max(m.newestKnown, m.LatestPatch):
		return fmt.Errorf("%w: %s: the newest %s patch known is %s.%d; pass newer release data (releases.LoadFile)",
			ErrUnknownVersion, v, m.Minor, m.Minor, max(m.newestKnown, m.LatestPatch))
	}
	return nil
}

// Latest returns the newest patch of v's minor a plan may target.
func (d *Data) Latest(v mesh.Version) (mesh.Version, bool) {
	m, ok := d.Minor(v)
	if !ok {
		return mesh.Version{}, false
	}
	return m.latest()
}

// Next returns the newest patch of the minor after v's, if a plan may target one.
func (d *Data) Next(v mesh.Version) (mesh.Version, bool) {
	return d.Latest(mesh.Version{Major: v.Major, Minor: v.Minor + 1})
}

// Newest returns the newest release a plan may target (the zero Version when there is none).
func (d *Data) Newest() mesh.Version {
	for i := len(d.Releases) - 1; i >= 0; i-- {
		if v, ok := d.Releases[i].latest(); ok {
			return v
		}
	}
	return mesh.Version{}
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
	// UnknownRange is returned for a minor the data lists without a supported Kubernetes range, such
	// as a minor a Helm repository index serves that the base release data does not describe.
	UnknownRange Support = "unknown-range"
)

// Kubernetes says whether the Istio minor of v supports Kubernetes version k.
func (d *Data) Kubernetes(v, k mesh.Version) Support {
	m, ok := d.Minor(v)
	if !ok {
		return UnknownMinor
	}
	if m.k8s[1].IsZero() {
		return UnknownRange
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

// KubernetesRange returns the supported range as "1.32–1.36", or "unknown".
func (m *Minor) KubernetesRange() string {
	if len(m.Kubernetes) != 2 {
		return "unknown"
	}
	return m.Kubernetes[0] + "–" + m.Kubernetes[1]
}

// MinimumKubernetes returns the minimum Kubernetes istioctl checks for the minor (zero when unknown).
func (m *Minor) MinimumKubernetes() mesh.Version { return m.minK8s }

// Version returns the minor as a version (x.y.0).
func (m *Minor) Version() mesh.Version { return m.version }

// EndOfLife returns when the minor's support ends: the listed date, or six weeks after minor+2's
// release (the support policy). estimated is true when that date, or the release date it is derived
// from, is an estimate. ok is false when neither is known.
func (d *Data) EndOfLife(v mesh.Version) (eol time.Time, estimated, ok bool) {
	m, found := d.Minor(v)
	if !found {
		return time.Time{}, false, false
	}
	if !m.eol.IsZero() {
		return m.eol, m.IsEstimated(FieldEndOfLife) || m.info == nil && m.Estimated, true
	}
	n2, found := d.Minor(mesh.Version{Major: v.Major, Minor: v.Minor + 2})
	if !found || n2.released.IsZero() {
		return time.Time{}, false, false
	}
	return n2.released.AddDate(0, 0, 42), n2.IsEstimated(FieldReleased) || n2.info == nil && n2.Estimated, true
}

// ReleasedOn returns the date of x.y.0 (zero when unknown).
func (m *Minor) ReleasedOn() time.Time { return m.released }
