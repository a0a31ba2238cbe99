package charts

import (
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chartutil"
)

// ChartFolders maps the name each chart has in its Chart.yaml (the name Helm releases record) to its
// folder under ChartsDir.
var ChartFolders = map[string]string{
	"base":    ChartBase,
	"istiod":  ChartIstiod,
	"cni":     ChartCNI,
	"ztunnel": ChartZtunnel,
	"gateway": ChartGateway,
}

// StampCharts writes every Istio chart of ChartsDir into dst, one folder per chart name
// (dst/base, dst/istiod, ...), with version and appVersion stamped to version as Istio's release
// build does: the charts a release of that version would ship, from the same sources. It loads them
// with LoadChart, so the stamping is the one the installation uses. It returns the folder of each
// chart by chart name, as ambient.ChartSource.Paths takes them.
func (h *Helm) StampCharts(dst, version string) (map[string]string, error) {
	stamped := *h
	stamped.ReleaseVersion = version
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, folder := range ChartFolders {
		ch, err := stamped.LoadChart(folder)
		if err != nil {
			return nil, err
		}
		if ch.Name() != name {
			return nil, fmt.Errorf("chart folder %s holds chart %q, want %q", folder, ch.Name(), name)
		}
		if err := chartutil.SaveDir(ch, dst); err != nil {
			return nil, fmt.Errorf("write chart %s %s to %s: %w", name, version, dst, err)
		}
		out[name] = filepath.Join(dst, name)
	}
	return out, nil
}
