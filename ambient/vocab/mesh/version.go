package mesh

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidVersion is wrapped by every error that rejects a version string.
var ErrInvalidVersion = errors.New("invalid version")

// Version is an Istio (or Kubernetes) release number: major.minor.patch with an optional pre-release
// such as "alpha.1", "beta.0" or "rc.2". The zero Version means "unknown".
type Version struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
	Patch int `json:"patch"`
	// Pre is the pre-release part without its dash ("rc.0"), empty for a release.
	Pre string `json:"pre,omitempty"`
}

// ParseVersion parses an exact Istio release number such as "1.31.2" or "1.31.0-rc.0".
//
// It is strict on purpose, because a version given by a person decides what gets installed: no leading
// "v", all three numbers, and a pre-release only of the forms alpha.N, beta.N or rc.N. Image tags carry
// variants ("1.30.3-distroless"); read those with VersionFromImageTag.
func ParseVersion(s string) (Version, error) {
	orig := s
	bad := func(why string) (Version, error) {
		return Version{}, fmt.Errorf("%w %q: %s", ErrInvalidVersion, orig, why)
	}
	if strings.TrimSpace(s) == "" {
		return bad(`empty; give major.minor.patch, e.g. "1.31.2"`)
	}
	if s != strings.TrimSpace(s) {
		return bad("surrounding spaces; remove them")
	}
	if s[0] == 'v' || s[0] == 'V' {
		return bad(fmt.Sprintf(`drop the leading "v" and give major.minor.patch, e.g. %q`, withPatch(s[1:])))
	}
	core, pre, hasPre := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return bad(fmt.Sprintf("want major.minor.patch, e.g. %q", withPatch(core)))
	}
	var n [3]int
	for i, p := range parts {
		v, err := parseNumber(p)
		if err != nil {
			return bad(fmt.Sprintf("%q is not a number", p))
		}
		n[i] = v
	}
	if n[0] == 0 {
		return bad("major version 0 is not an Istio release")
	}
	if hasPre {
		if !validPre(pre) {
			return bad(fmt.Sprintf("pre-release %q is not alpha.N, beta.N or rc.N (image variants such as -distroless belong to image tags, not versions)", pre))
		}
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2], Pre: pre}, nil
}

// MustParseVersion is ParseVersion for constants in code and tests; it panics on a bad version.
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// imageVariants are suffixes Istio appends to image tags; they do not change the release.
var imageVariants = []string{"-distroless", "-debug", "-slim", "-ubi", "-fips"}

// VersionFromImageTag reads the Istio release from a container image reference or a bare tag:
// "docker.io/istio/ztunnel:1.30.3-distroless", "1.30.3", "reg/pilot:1.31.0-rc.0@sha256:...".
// Variant suffixes are stripped. It fails for tags that do not name a release ("latest", "master").
func VersionFromImageTag(image string) (Version, error) {
	tag := image
	if i := strings.Index(tag, "@"); i >= 0 {
		tag = tag[:i]
	}
	if i := strings.LastIndex(tag, ":"); i >= 0 && !strings.Contains(tag[i:], "/") {
		tag = tag[i+1:]
	} else if strings.Contains(image, "/") || strings.Contains(image, "@") {
		return Version{}, fmt.Errorf("%w: image %q has no tag; the version cannot be read from it", ErrInvalidVersion, image)
	}
	for _, v := range imageVariants {
		tag = strings.TrimSuffix(tag, v)
	}
	v, err := ParseVersion(tag)
	if err != nil {
		return Version{}, fmt.Errorf("%w: image %q: tag %q does not name an Istio release", ErrInvalidVersion, image, tag)
	}
	return v, nil
}

// ParseKubernetesVersion reads a Kubernetes server or kubelet version such as "v1.34.2",
// "v1.33.5-eks-3cfe0ce" or "v1.32.1+k3s1". Only major.minor.patch are kept.
func ParseKubernetesVersion(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(t, "-+"); i >= 0 {
		t = t[:i]
	}
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("%w: Kubernetes version %q: want v<major>.<minor>.<patch>", ErrInvalidVersion, s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := parseNumber(strings.TrimRight(p, "+"))
		if err != nil {
			return Version{}, fmt.Errorf("%w: Kubernetes version %q: %q is not a number", ErrInvalidVersion, s, p)
		}
		n[i] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

func parseNumber(p string) (int, error) {
	if p == "" || len(p) > 6 {
		return 0, errors.New("not a number")
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return 0, errors.New("not a number")
		}
	}
	if len(p) > 1 && p[0] == '0' {
		return 0, errors.New("leading zero")
	}
	return strconv.Atoi(p)
}

func validPre(pre string) bool {
	kind, num, ok := strings.Cut(pre, ".")
	if !ok {
		return false
	}
	switch kind {
	case "alpha", "beta", "rc":
	default:
		return false
	}
	_, err := parseNumber(num)
	return err == nil
}

func withPatch(s string) string {
	core, _, _ := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	if len(parts) > 3 {
		parts = parts[:3]
	}
	for i, p := range parts {
		if _, err := parseNumber(p); err != nil {
			parts[i] = "0"
		}
	}
	return strings.Join(parts, ".")
}

// IsZero reports whether v is the unknown version.
func (v Version) IsZero() bool { return v == Version{} }

// String prints "1.31.2" or "1.31.0-rc.0"; the zero Version prints "unknown".
func (v Version) String() string {
	if v.IsZero() {
		return "unknown"
	}
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// MinorString prints "1.31".
func (v Version) MinorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// RevisionName is the revision name Istio's docs derive from a version: "1.31.2" → "1-31-2".
func (v Version) RevisionName() string {
	return strings.NewReplacer(".", "-").Replace(v.String())
}

// MinorIndex maps major.minor onto one integer so minors can be subtracted across majors.
func (v Version) MinorIndex() int { return v.Major*1000 + v.Minor }

// MinorsAhead returns how many minors v is ahead of o (negative when behind).
func (v Version) MinorsAhead(o Version) int { return v.MinorIndex() - o.MinorIndex() }

// SameMinor reports whether v and o share major and minor.
func (v Version) SameMinor(o Version) bool { return v.Major == o.Major && v.Minor == o.Minor }

// Compare returns -1, 0 or +1. A pre-release sorts before its release; pre-releases compare by kind
// (alpha < beta < rc) and then by number.
func (v Version) Compare(o Version) int {
	for _, d := range [3]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	switch {
	case v.Pre == o.Pre:
		return 0
	case v.Pre == "":
		return 1
	case o.Pre == "":
		return -1
	}
	return comparePre(v.Pre, o.Pre)
}

func comparePre(a, b string) int {
	rank := map[string]int{"alpha": 0, "beta": 1, "rc": 2}
	ak, an, _ := strings.Cut(a, ".")
	bk, bn, _ := strings.Cut(b, ".")
	if rank[ak] != rank[bk] {
		if rank[ak] < rank[bk] {
			return -1
		}
		return 1
	}
	x, _ := strconv.Atoi(an)
	y, _ := strconv.Atoi(bn)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// Less reports whether v sorts before o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

// MarshalText writes the version as "1.31.2" so snapshots and plans stay readable.
func (v Version) MarshalText() ([]byte, error) {
	if v.IsZero() {
		return []byte(""), nil
	}
	return []byte(v.String()), nil
}

// UnmarshalText reads what MarshalText wrote; an empty string is the unknown version.
func (v *Version) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*v = Version{}
		return nil
	}
	p, err := ParseVersion(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}
