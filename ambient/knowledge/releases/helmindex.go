package releases

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// ErrInvalidIndex is wrapped by errors from FromHelmIndex and LoadHelmIndexFile: the input is not a
// Helm repository index, lacks a chart an install needs, or has no version every such chart serves.
var ErrInvalidIndex = errors.New("invalid Helm repository index")

// DefaultCharts returns the charts of an ambient install, in install order: the ones every
// targetable version must be served for.
func DefaultCharts() []string { return []string{"base", "istiod", "cni", "ztunnel"} }

// IndexOptions configure FromHelmIndex.
type IndexOptions struct {
	// Charts are the charts a plan installs, named as in the index; a version is targetable only
	// when every one of them serves it. Nil means DefaultCharts.
	Charts []string
	// Gateway adds the "gateway" chart to Charts, for plans that upgrade chart-deployed gateways.
	Gateway bool
	// Base supplies the dates, end of life, Kubernetes ranges and Gateway API versions; nil means
	// Default(). A minor the index serves that Base does not describe has none of those.
	Base *Data
	// Name describes the index in messages and in Origin: its URL, or the file it was read from.
	Name string
}

func (o IndexOptions) charts() []string {
	charts := o.Charts
	if charts == nil {
		charts = DefaultCharts()
	}
	if o.Gateway {
		charts = append(append([]string(nil), charts...), "gateway")
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range charts {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// helmIndex is the part of a Helm repository index (helm.sh/helm/v3/pkg/repo.IndexFile) read here.
// Entries of charts that are not needed are never decoded, so an odd entry elsewhere does no harm.
type helmIndex struct {
	APIVersion string                     `json:"apiVersion"`
	Entries    map[string]json.RawMessage `json:"entries"`
	Generated  string                     `json:"generated,omitempty"`
}

type helmIndexEntry struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
}

// LoadHelmIndexFile reads a Helm repository index from a file (see FromHelmIndex). opts.Name
// defaults to the path.
//
// `helm repo add <name> <url>` and `helm repo update` cache each repository's index as
// <cache>/<name>-index.yaml, where <cache> is $HELM_CACHE_HOME/repository, else
// $XDG_CACHE_HOME/helm/repository, else ~/.cache/helm/repository on Linux,
// ~/Library/Caches/helm/repository on macOS and %TEMP%\helm\repository on Windows; `helm env
// HELM_REPOSITORY_CACHE` prints it. A mirror serves its index at <mirror URL>/index.yaml.
func LoadHelmIndexFile(path string, opts IndexOptions) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("helm repository index: %w", err)
	}
	defer f.Close()
	if opts.Name == "" {
		opts.Name = path
	}
	return FromHelmIndex(f, opts)
}

// FromHelmIndex builds release data from a Helm repository index (the index.yaml a chart repository
// serves at <url>/index.yaml: apiVersion v1, entries by chart name, each a list of chart versions
// with their download URLs). The versions a plan may target are then exactly the release versions
// that every chart of opts.Charts serves with a download URL: Check refuses any other, naming the
// newest patch of the minor the index does have, and Latest, Next and Newest return only versions
// that exist there. Pre-releases and versions that are not an Istio release number are skipped.
//
// Dates, end of life, Kubernetes ranges and Gateway API versions come from opts.Base (the embedded
// data by default). A minor of Base that the index does not serve stays in the data, for the
// versions a cluster runs, with no targetable patch. A minor the index serves that Base does not
// describe can be targeted but has no dates and no ranges: Minor.Unknown lists them and
// Minor.Source says why.
//
// The input is read into memory; the index of istio-release.storage.googleapis.com is a few
// megabytes.
func FromHelmIndex(r io.Reader, opts IndexOptions) (*Data, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidIndex, opts.displayName(), err)
	}
	var idx helmIndex
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("%w: %s is not a Helm repository index (%v); give the index.yaml of the chart repository", ErrInvalidIndex, opts.displayName(), err)
	}
	if idx.APIVersion != "v1" {
		return nil, fmt.Errorf("%w: %s is not a Helm repository index: apiVersion is %q, want \"v1\"; give the index.yaml of the chart repository", ErrInvalidIndex, opts.displayName(), idx.APIVersion)
	}
	if len(idx.Entries) == 0 {
		return nil, fmt.Errorf("%w: %s has no entries; the chart repository serves no charts", ErrInvalidIndex, opts.displayName())
	}
	charts := opts.charts()
	if len(charts) == 0 {
		return nil, fmt.Errorf("%w: IndexOptions.Charts is empty; name the charts a plan installs (nil means %s)", ErrInvalidIndex, strings.Join(DefaultCharts(), ", "))
	}
	// count[v] is the number of charts that serve release v.
	count := map[mesh.Version]int{}
	for _, chart := range charts {
		rawEntries, ok := idx.Entries[chart]
		if !ok {
			return nil, fmt.Errorf("%w: %s has no chart %q (it has %s); pass IndexOptions.Charts if the repository names the charts differently",
				ErrInvalidIndex, opts.displayName(), chart, strings.Join(sortedKeys(idx.Entries), ", "))
		}
		var entries []helmIndexEntry
		if err := json.Unmarshal(rawEntries, &entries); err != nil {
			return nil, fmt.Errorf("%w: %s: entries of chart %q are not a list of chart versions: %v", ErrInvalidIndex, opts.displayName(), chart, err)
		}
		served := map[mesh.Version]bool{}
		for _, e := range entries {
			v, err := mesh.ParseVersion(e.Version)
			if err != nil || v.Pre != "" || len(e.URLs) == 0 {
				continue
			}
			served[v] = true
		}
		for v := range served {
			count[v]++
		}
	}
	byMinor := map[mesh.Version][]int{}
	for v, n := range count {
		if n == len(charts) {
			k := mesh.Version{Major: v.Major, Minor: v.Minor}
			byMinor[k] = append(byMinor[k], v.Patch)
		}
	}
	if len(byMinor) == 0 {
		return nil, fmt.Errorf("%w: %s has no release version that all of %s serve; check the repository, or narrow IndexOptions.Charts",
			ErrInvalidIndex, opts.displayName(), strings.Join(charts, ", "))
	}
	base := opts.Base
	if base == nil {
		base = Default()
	}
	baseOrigin := base.origin
	d := &Data{APIVersion: APIVersion, Kind: Kind,
		origin: Origin{Kind: OriginHelmIndex, Name: opts.Name, Generated: idx.Generated, Charts: charts, Base: &baseOrigin}}
	served := fmt.Sprintf("served by every chart of %s (%s)", d.origin.nameOrIndex(), strings.Join(charts, ", "))
	for i := range base.Releases {
		m := base.Releases[i].clone()
		key := mesh.Version{Major: m.version.Major, Minor: m.version.Minor}
		patches := byMinor[key]
		delete(byMinor, key)
		sort.Ints(patches)
		m.exact, m.patches = true, patches
		src := served
		if len(patches) == 0 {
			src = fmt.Sprintf("none: %s has no %s release that every chart (%s) serves", d.origin.nameOrIndex(), m.Minor, strings.Join(charts, ", "))
		} else {
			m.LatestPatch = patches[len(patches)-1]
			m.newestKnown = max(m.newestKnown, m.LatestPatch)
		}
		m.info[FieldPatches] = fieldInfo{known: true, source: src}
		d.Releases = append(d.Releases, m)
	}
	for key, patches := range byMinor {
		sort.Ints(patches)
		m := Minor{Minor: key.MinorString(), version: key, exact: true, patches: patches,
			LatestPatch: patches[len(patches)-1], newestKnown: patches[len(patches)-1], info: map[Field]fieldInfo{}}
		unknown := fmt.Sprintf("unknown: %s serves %s, which %s does not describe", d.origin.nameOrIndex(), m.Minor, baseOrigin)
		for _, f := range Fields() {
			m.info[f] = fieldInfo{source: unknown}
		}
		m.info[FieldEndOfLife] = fieldInfo{}
		m.info[FieldPatches] = fieldInfo{known: true, source: served}
		d.Releases = append(d.Releases, m)
	}
	d.sort()
	return d, nil
}

func (o IndexOptions) displayName() string {
	if o.Name != "" {
		return "Helm repository index " + o.Name
	}
	return "the Helm repository index"
}

func (o Origin) nameOrIndex() string {
	if o.Name != "" {
		return o.Name
	}
	return "the index"
}

// clone copies a minor so that the copy's slices and maps are its own.
func (m *Minor) clone() Minor {
	c := *m
	c.Kubernetes = append([]string(nil), m.Kubernetes...)
	c.KubernetesTested = append([]string(nil), m.KubernetesTested...)
	c.patches = append([]int(nil), m.patches...)
	c.info = make(map[Field]fieldInfo, len(m.info))
	for f, i := range m.info {
		c.info[f] = i
	}
	return c
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
