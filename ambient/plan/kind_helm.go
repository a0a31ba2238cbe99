package plan

import (
	"errors"
	"fmt"
	"strings"
)

// ChartRef says where a chart comes from. Exactly one of Repository, OCI and Path is set.
type ChartRef struct {
	// Name of the chart in the repository (base, istiod, cni, ztunnel, gateway).
	Name string `json:"name"`
	// Repository is a chart repository URL (https://istio-release.storage.googleapis.com/charts).
	Repository string `json:"repository,omitempty"`
	// OCI is an oci:// reference to the chart, without the version.
	OCI string `json:"oci,omitempty"`
	// Path is a local chart directory or .tgz.
	Path string `json:"path,omitempty"`
	// Version of the chart (the Istio version for released charts).
	Version string `json:"version"`
}

// Validate checks that exactly one source is set and that it has the right form.
func (c ChartRef) Validate() error {
	n := 0
	for _, s := range []string{c.Repository, c.OCI, c.Path} {
		if s != "" {
			n++
		}
	}
	switch {
	case c.Name == "":
		return errors.New("chart name is empty")
	case n != 1:
		return fmt.Errorf("chart %q: set exactly one of repository, oci and path (got %d)", c.Name, n)
	case c.Repository != "" && !strings.HasPrefix(c.Repository, "https://") && !strings.HasPrefix(c.Repository, "http://"):
		return fmt.Errorf("chart %q: repository %q is not an http(s) URL", c.Name, c.Repository)
	case c.OCI != "" && !strings.HasPrefix(c.OCI, "oci://"):
		return fmt.Errorf("chart %q: oci reference %q must start with oci://", c.Name, c.OCI)
	case c.Path == "" && c.Version == "":
		return fmt.Errorf("chart %q: version is empty", c.Name)
	}
	return nil
}

// HelmRelease is a Helm install or upgrade.
type HelmRelease struct {
	Release   string   `json:"release"`
	Namespace string   `json:"namespace"`
	Chart     ChartRef `json:"chart"`
	// Values are passed as given (helm --values). Only JSON types: string, bool, float64, []any, map[string]any.
	Values map[string]any `json:"values,omitempty"`
	// ReuseValues keeps the release's current user values under Values (helm --reuse-values).
	ReuseValues bool `json:"reuseValues,omitempty"`
	// PreviousRevision is the Helm revision to roll back to, for upgrades.
	PreviousRevision int `json:"previousRevision,omitempty"`
}

func validateHelmRelease(h *HelmRelease, where string, bad func(string, ...any)) {
	if h.Release == "" || h.Namespace == "" {
		bad("%s: helm release and namespace must be set", where)
	}
	if err := h.Chart.Validate(); err != nil {
		bad("%s: %v", where, err)
	}
}

// helmCommand renders helm install/upgrade with the chart's source, version and every value.
func helmCommand(verb string, h *HelmRelease) string {
	chart := h.Chart.Path
	switch {
	case h.Chart.Repository != "":
		chart = h.Chart.Name + " --repo " + h.Chart.Repository
	case h.Chart.OCI != "":
		chart = strings.TrimSuffix(h.Chart.OCI, "/")
	}
	c := fmt.Sprintf("helm %s %s %s -n %s", verb, h.Release, chart, h.Namespace)
	if h.Chart.Version != "" && h.Chart.Path == "" {
		c += " --version " + h.Chart.Version
	}
	if h.ReuseValues {
		c += " --reuse-values"
	}
	for _, kv := range flattenValues("", h.Values) {
		c += " --set " + kv
	}
	if verb == "upgrade" {
		c += " --wait"
	}
	return c
}

// flattenValues turns nested values into sorted key=value strings as --set takes them. A null value
// (Helm's "drop the chart default") is written as null, which --set understands.
func flattenValues(prefix string, v map[string]any) []string {
	var out []string
	for _, k := range sortedKeys(v) {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch x := v[k].(type) {
		case nil:
			out = append(out, key+"=null")
		case map[string]any:
			out = append(out, flattenValues(key, x)...)
		case []any:
			var parts []string
			for _, e := range x {
				parts = append(parts, fmt.Sprint(e))
			}
			out = append(out, fmt.Sprintf("%s={%s}", key, strings.Join(parts, ",")))
		case string:
			if strings.ContainsAny(x, ", ") {
				out = append(out, fmt.Sprintf("%s=%q", key, x))
			} else {
				out = append(out, key+"="+x)
			}
		default:
			out = append(out, fmt.Sprintf("%s=%v", key, x))
		}
	}
	return out
}
