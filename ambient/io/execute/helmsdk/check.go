package helmsdk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	helmgetter "helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// ErrChartVersionMissing is wrapped (through *ChartVersionError) when a chart source was read but
// does not have the chart at the version a plan asks for. Other errors from CheckChart mean the
// source could not be read at all.
var ErrChartVersionMissing = errors.New("chart version missing from its source")

// ChartVersionError says which chart version a source lacks and what the source does have.
type ChartVersionError struct {
	// Chart and Version are what the plan asked for.
	Chart, Version string
	// Source is the repository URL or oci:// reference that was read.
	Source string
	// NewestSameMinor is the newest release of the asked version's major.minor the source has, and
	// Newest the newest release it has at all; empty when it has none.
	NewestSameMinor, Newest string
	// Local is set when Source is a local chart folder or archive, which holds Newest only.
	Local bool
}

// Error names the chart, the version, the source, what it has instead and the fix.
func (e *ChartVersionError) Error() string {
	if e.Local {
		return fmt.Sprintf("%v: chart %s %s is not at %s: the chart there is %s; point the chart source at a folder holding %s %s (ChartSource.Paths takes %q)",
			ErrChartVersionMissing, e.Chart, e.Version, e.Source, e.Newest, e.Chart, e.Version, e.Chart+"@"+e.Version)
	}
	var has string
	switch {
	case e.NewestSameMinor != "":
		has = fmt.Sprintf("the newest %s it has is %s (newest release: %s)", minorOf(e.Version), e.NewestSameMinor, e.Newest)
	case e.Newest != "":
		has = fmt.Sprintf("it has no %s release; the newest release it has is %s", minorOf(e.Version), e.Newest)
	default:
		has = fmt.Sprintf("it has no release of chart %s at all", e.Chart)
	}
	return fmt.Sprintf("%v: chart %s %s is not in %s: %s; plan for a version the source has (releases.FromHelmIndex over its index), or publish %s %s there",
		ErrChartVersionMissing, e.Chart, e.Version, e.Source, has, e.Chart, e.Version)
}

// Unwrap returns ErrChartVersionMissing.
func (e *ChartVersionError) Unwrap() error { return ErrChartVersionMissing }

// CheckChart confirms, before anything changes, that the chart a plan step names exists at its
// version where the reference says, and returns the version it found:
//
//   - Repository: the repository's index.yaml is read through Helm's getters (the same settings,
//     plugins and no repositories.yaml credentials, as locating the chart for an install does) and
//     the version must be listed with a download URL. Nothing is written to the Helm cache.
//   - OCI: the tag is resolved through the client's registry client (its credentials file); when it
//     does not resolve, the repository's tags are listed to say what it has.
//   - Path: the local chart directory or .tgz is loaded and its Chart.yaml must state the version
//     asked for (when one is): a folder holds one version, and a step that would install another
//     from it is refused before it changes anything.
//
// When the source was read but lacks the version, the error is a *ChartVersionError (wrapping
// ErrChartVersionMissing) and have is the newest release of the same minor the source has, or else
// its newest release. Any other error means the source could not be read.
func (c *Client) CheckChart(ctx context.Context, ref plan.ChartRef) (have string, err error) {
	if err := ref.Validate(); err != nil {
		return "", fmt.Errorf("helm: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	switch {
	case ref.Path != "":
		ch, err := loader.Load(ref.Path)
		if err != nil {
			return "", fmt.Errorf("helm: chart %s: load %s: %w", ref.Name, ref.Path, err)
		}
		have := ch.Metadata.Version
		if ref.Version != "" && !sameVersion(have, ref.Version) {
			return have, &ChartVersionError{Chart: ref.Name, Version: ref.Version, Source: ref.Path, Newest: have, Local: true}
		}
		return have, nil
	case ref.Repository != "":
		return c.checkRepository(ref)
	default:
		return c.checkOCI(ctx, ref)
	}
}

func (c *Client) checkRepository(ref plan.ChartRef) (string, error) {
	dir, err := os.MkdirTemp("", "ambientkit-index-")
	if err != nil {
		return "", fmt.Errorf("helm: chart %s: %w", ref.Name, err)
	}
	defer os.RemoveAll(dir)
	r, err := repo.NewChartRepository(&repo.Entry{Name: "ambientkit-check", URL: ref.Repository}, helmgetter.All(c.settings))
	if err != nil {
		return "", fmt.Errorf("helm: chart %s: repository %s: %w", ref.Name, ref.Repository, err)
	}
	r.CachePath = dir
	path, err := r.DownloadIndexFile()
	if err != nil {
		return "", fmt.Errorf("helm: chart %s: read the index of %s: %w", ref.Name, ref.Repository, err)
	}
	idx, err := repo.LoadIndexFile(path)
	if err != nil {
		return "", fmt.Errorf("helm: chart %s: index of %s: %w", ref.Name, ref.Repository, err)
	}
	var versions []string
	for _, cv := range idx.Entries[ref.Name] {
		if cv == nil || len(cv.URLs) == 0 {
			continue // Helm cannot download a version without a URL
		}
		if sameVersion(cv.Version, ref.Version) {
			return cv.Version, nil
		}
		versions = append(versions, cv.Version)
	}
	return missing(ref, ref.Repository, versions)
}

func (c *Client) checkOCI(ctx context.Context, ref plan.ChartRef) (string, error) {
	base := strings.TrimPrefix(ref.OCI, "oci://")
	// OCI tags cannot hold "+"; Helm stores it as "_".
	_, err := c.registry.Resolve(base + ":" + strings.ReplaceAll(ref.Version, "+", "_"))
	if err == nil {
		return ref.Version, nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	tags, terr := c.registry.Tags(base)
	if terr != nil {
		return "", fmt.Errorf("helm: chart %s: resolve %s:%s: %w (listing its tags: %v)", ref.Name, ref.OCI, ref.Version, err, terr)
	}
	for _, t := range tags {
		if sameVersion(t, ref.Version) {
			return "", fmt.Errorf("helm: chart %s: %s lists tag %s but it does not resolve: %w", ref.Name, ref.OCI, t, err)
		}
	}
	return missing(ref, ref.OCI, tags)
}

// missing builds the *ChartVersionError for a source that has the given versions.
func missing(ref plan.ChartRef, source string, versions []string) (string, error) {
	want, wantErr := mesh.ParseVersion(ref.Version)
	var releases []mesh.Version
	for _, s := range versions {
		if v, err := mesh.ParseVersion(s); err == nil && v.Pre == "" {
			releases = append(releases, v)
		}
	}
	sort.Slice(releases, func(i, j int) bool { return releases[j].Less(releases[i]) })
	e := &ChartVersionError{Chart: ref.Name, Version: ref.Version, Source: source}
	if len(releases) > 0 {
		e.Newest = releases[0].String()
	}
	for _, v := range releases {
		if wantErr == nil && v.SameMinor(want) {
			e.NewestSameMinor = v.String()
			break
		}
	}
	have := e.NewestSameMinor
	if have == "" {
		have = e.Newest
	}
	return have, e
}

// sameVersion compares chart versions exactly, or as Istio release numbers ("1.30.3" and "v1.30.3").
func sameVersion(a, b string) bool {
	if a == b {
		return true
	}
	va, errA := mesh.ParseVersion(strings.TrimPrefix(a, "v"))
	vb, errB := mesh.ParseVersion(strings.TrimPrefix(b, "v"))
	return errA == nil && errB == nil && va == vb
}

func minorOf(version string) string {
	if v, err := mesh.ParseVersion(version); err == nil {
		return v.MinorString()
	}
	return version
}
