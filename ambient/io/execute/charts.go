package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// ErrChartMissing means a chart version the plan's Helm steps name could not be found in the plan's
// chart source: the source does not have that version, or it could not be read to tell (the wrapped
// error says which). It is found before the first change of a fresh run, so nothing was changed:
// re-plan for a version the source has, or with a chart source that has it (a mirror, an OCI
// registry, a local folder: ambient.UpgradeOptions.Charts).
var ErrChartMissing = errors.New("chart version missing from its source")

// ChartChecker confirms that a chart version exists in its source before anything changes, the way
// helmsdk.Client.CheckChart does: a repository's index lists it, an OCI tag resolves, a local chart
// directory or .tgz loads and states the version. It returns the
// version it found; when the source was read but lacks the version, an error and the newest version
// the source has (of the same minor, else at all; empty when it has none).
type ChartChecker interface {
	// CheckChart confirms ref's chart at ref's version exists where ref says.
	CheckChart(ctx context.Context, ref plan.ChartRef) (have string, err error)
}

// chartChecker is Options.Charts, else Options.Helm when it can check charts, else nil.
func (e *engine) chartChecker() ChartChecker {
	if e.opts.Charts != nil {
		return e.opts.Charts
	}
	if cc, ok := e.helm.(ChartChecker); ok {
		return cc
	}
	return nil
}

// checkCharts confirms, once per distinct chart reference (source, chart, version) of the plan's
// HelmInstall and HelmUpgrade steps, that the chart exists in its source. It runs before the first
// change of a fresh run, after the staleness check.
func (e *engine) checkCharts(ctx context.Context, p *plan.Plan) error {
	cc := e.chartChecker()
	if cc == nil {
		return nil
	}
	seen := map[plan.ChartRef]bool{}
	for i := range p.Steps {
		st := &p.Steps[i]
		h := st.HelmInstall
		if h == nil {
			h = st.HelmUpgrade
		}
		if h == nil || seen[h.Chart] {
			continue
		}
		ref := h.Chart
		seen[ref] = true
		var have string
		err := e.retry(ctx, "check chart "+ref.Name+" "+ref.Version, func(ctx context.Context) error {
			var err error
			have, err = cc.CheckChart(ctx, ref)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("check chart %s %s of plan %q: %w", ref.Name, ref.Version, p.Metadata.Name, err)
			}
			what := "which does not have it or cannot be read"
			if have != "" {
				what = "which does not have it (the newest it has is " + have + ")"
			}
			return fmt.Errorf("%w: step %q needs chart %s %s from %s, %s; nothing was changed: re-plan for a version the source has, or with a chart source that has it (a mirror, an OCI registry or a local folder) (%w)",
				ErrChartMissing, st.ID, ref.Name, ref.Version, chartSource(ref), what, err)
		}
		e.log.Debug("chart found in its source", "chart", ref.Name, "version", ref.Version, "source", chartSource(ref), "found", have)
	}
	return nil
}

// chartSource names where a chart reference points: its repository URL, oci:// reference or path.
func chartSource(ref plan.ChartRef) string {
	switch {
	case ref.Repository != "":
		return ref.Repository
	case ref.OCI != "":
		return ref.OCI
	}
	return ref.Path
}
