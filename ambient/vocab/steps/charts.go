package steps

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// DefaultChartRepository is Istio's Helm chart repository.
const DefaultChartRepository = "https://istio-release.storage.googleapis.com/charts"

// ChartSource says where charts come from. Set at most one of Repository, OCI and Dir; the zero value
// means DefaultChartRepository.
type ChartSource struct {
	// Repository is a Helm repository URL.
	Repository string `json:"repository,omitempty"`
	// OCI is an oci:// registry path holding the charts (oci://registry/path; the chart name is appended).
	OCI string `json:"oci,omitempty"`
	// Dir is a local directory with one folder per chart (base, istiod, cni, ztunnel, gateway), as
	// `helm pull --untar` leaves them.
	Dir string `json:"dir,omitempty"`
	// Paths overrides the local path of single charts by chart name (for example the istio source
	// layout: istiod → manifests/charts/istio-control/istio-discovery), or of one version of a chart
	// by "name@version" ("ztunnel@1.31.4"), which wins: a folder holds one version, and a plan that
	// upgrades a release at its running version (a blue-green pins the running ztunnel and changes
	// istiod's trust) needs that version's chart beside the target's.
	Paths map[string]string `json:"paths,omitempty"`
}

// Validate checks that at most one source is set and that it has the right form.
func (c ChartSource) Validate() error {
	n := 0
	for _, s := range []string{c.Repository, c.OCI, c.Dir} {
		if s != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("chart source: set only one of repository, oci and dir")
	case c.Repository != "" && !strings.HasPrefix(c.Repository, "https://") && !strings.HasPrefix(c.Repository, "http://"):
		return fmt.Errorf("chart source: repository %q is not an http(s) URL (for an OCI registry use OCI with oci://, for a folder use Dir)", c.Repository)
	case c.OCI != "" && !strings.HasPrefix(c.OCI, "oci://"):
		return fmt.Errorf("chart source: OCI reference %q must start with oci://", c.OCI)
	case c.Dir != "" && strings.Contains(c.Dir, "://"):
		return fmt.Errorf("chart source: dir %q looks like a URL; use Repository or OCI", c.Dir)
	}
	for _, name := range sortedKeys(c.Paths) {
		if p := c.Paths[name]; p == "" || strings.Contains(p, "://") {
			return fmt.Errorf("chart source: path for chart %q (%q) must be a local path", name, p)
		}
		if chart, v, ok := strings.Cut(name, "@"); ok {
			if _, err := mesh.ParseVersion(v); err != nil || chart == "" {
				return fmt.Errorf("chart source: path key %q: want <chart> or <chart>@<version> (ztunnel@1.31.4)", name)
			}
		}
	}
	return nil
}

// Ref returns the reference of a chart at a version.
func (c ChartSource) Ref(chart string, v mesh.Version) plan.ChartRef {
	r := plan.ChartRef{Name: chart, Version: v.String()}
	switch {
	case c.Paths[chart+"@"+v.String()] != "":
		r.Path = c.Paths[chart+"@"+v.String()]
	case c.Paths[chart] != "":
		r.Path = c.Paths[chart]
	case c.Dir != "":
		r.Path = strings.TrimSuffix(c.Dir, "/") + "/" + chart
	case c.OCI != "":
		r.OCI = strings.TrimSuffix(c.OCI, "/") + "/" + chart
	case c.Repository != "":
		r.Repository = c.Repository
	default:
		r.Repository = DefaultChartRepository
	}
	return r
}

// Reinstall is the chart an undo by hand of an uninstall installs from: chart at version v in the
// source, nil when v does not parse or the source cannot name that version (a folder of the target's
// charts).
func (c ChartSource) Reinstall(chart, v string) *plan.ChartRef {
	ver, err := mesh.ParseVersion(v)
	if err != nil || chart == "" {
		return nil
	}
	r := c.Ref(chart, ver)
	if r.Path != "" && c.Paths[chart+"@"+ver.String()] == "" {
		return nil
	}
	return &r
}
