package execute_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// chartRefs returns the distinct chart references of the plan's Helm install and upgrade steps, as
// FakeHelm.ChartChecks keys them.
func chartRefs(p *plan.Plan) map[string]int {
	out := map[string]int{}
	for _, s := range p.Steps {
		h := s.HelmInstall
		if h == nil {
			h = s.HelmUpgrade
		}
		if h != nil {
			out[h.Chart.Name+" "+h.Chart.Version+" "+h.Chart.Repository+h.Chart.OCI+h.Chart.Path] = 1
		}
	}
	return out
}

func TestAChartVersionMissingFromItsSourceRefusesTheRunBeforeAnyChange(t *testing.T) {
	for _, dry := range []bool{false, true} {
		w := upgradeWorld(t, 3)
		p := upgradePlan(w)
		// The mirror has every chart at 1.31.4 but istiod, which it has only up to 1.31.2.
		w.Helm.Charts = map[string][]string{"base": {"1.30.3", toV}, "istiod": {"1.30.3", "1.31.1", "1.31.2"}, "cni": {toV}, "ztunnel": {toV}}
		_, err := w.Executor(func(o *execute.Options) { o.DryRun = dry }).Apply(context.Background(), p, execute.ApplyOptions{})
		if !errors.Is(err, execute.ErrChartMissing) {
			t.Fatalf("dry run %v: Apply: %v, want ErrChartMissing", dry, err)
		}
		for _, want := range []string{"istiod/1-31-4/install", "chart istiod 1.31.4", "https://istio-release.storage.googleapis.com/charts", "the newest it has is 1.31.2", "nothing was changed", "re-plan"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("dry run %v: error %q does not say %q", dry, err, want)
			}
		}
		var se *execute.StepError
		if errors.As(err, &se) {
			t.Errorf("the refusal is the plan's, not step %s's", se.StepID)
		}
		if eff := w.Effects(); len(eff) != 0 {
			t.Errorf("dry run %v: a plan with a missing chart changed the cluster: %v", dry, eff)
		}
		if calls := w.Helm.Calls(); len(calls) != 0 {
			t.Errorf("dry run %v: Helm changed releases: %v", dry, calls)
		}
		var cms corev1.ConfigMapList
		_ = w.Base.List(context.Background(), &cms, client.InNamespace("istio-system"))
		if len(cms.Items) != 0 {
			t.Errorf("dry run %v: a refused plan left a journal %s", dry, cms.Items[0].Name)
		}
	}
}

func TestChartsAreCheckedOncePerSourceChartAndVersionOnFreshRunsOnly(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	want := chartRefs(p)
	if len(want) < 4 {
		t.Fatalf("the fixture plan names %d charts, want base, istiod, cni and ztunnel at least", len(want))
	}
	helmSteps := 0
	for _, s := range p.Steps {
		if s.HelmInstall != nil || s.HelmUpgrade != nil {
			helmSteps++
		}
	}
	if helmSteps <= len(want) {
		t.Fatalf("the fixture plan has %d Helm steps over %d charts; want a chart named twice", helmSteps, len(want))
	}
	kill := 8
	w.KillAfterWrites(kill, nil)
	if _, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{}); err == nil {
		t.Fatalf("the run was to be killed after %d writes", kill)
	}
	got := w.Helm.ChartChecks()
	for k, n := range got {
		if want[k] == 0 || n != 1 {
			t.Errorf("chart %q checked %d times, want once, and only the plan's charts %v", k, n, want)
		}
	}
	if len(got) != len(want) {
		t.Errorf("checked %v, want %v", got, want)
	}
	// The resumed run continues from its journal: the charts were confirmed when it started.
	w.Revive()
	if _, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{Resume: true}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	for k, n := range w.Helm.ChartChecks() {
		if n != 1 {
			t.Errorf("chart %q checked %d times after the resume, want once", k, n)
		}
	}
}

// checker is a ChartChecker given to Options.Charts.
type checker func(ctx context.Context, ref plan.ChartRef) (string, error)

func (c checker) CheckChart(ctx context.Context, ref plan.ChartRef) (string, error) {
	return c(ctx, ref)
}

func TestAChartSourceThatCannotBeReadRefusesTheRunThroughOptionsCharts(t *testing.T) {
	w := upgradeWorld(t, 3)
	p := upgradePlan(w)
	unreachable := errors.New(`Get "https://istio-release.storage.googleapis.com/charts/index.yaml": dial tcp: lookup istio-release.storage.googleapis.com: no such host`)
	asked := 0
	_, err := w.Executor(func(o *execute.Options) {
		o.Charts = checker(func(context.Context, plan.ChartRef) (string, error) { asked++; return "", unreachable })
	}).Apply(context.Background(), p, execute.ApplyOptions{})
	if !errors.Is(err, execute.ErrChartMissing) || !errors.Is(err, unreachable) {
		t.Fatalf("Apply: %v, want ErrChartMissing wrapping the checker's error", err)
	}
	if asked != 1 {
		t.Errorf("the checker was asked %d times; the first unreadable chart stops the run", asked)
	}
	if !strings.Contains(err.Error(), "does not have it or cannot be read") {
		t.Errorf("error %q should say the source named no versions", err)
	}
	if eff := w.Effects(); len(eff) != 0 {
		t.Errorf("the run changed the cluster: %v", eff)
	}
	if n := len(w.Helm.ChartChecks()); n != 0 {
		t.Errorf("Options.Charts replaces the Helm client's own check; the Helm client was asked %d times", n)
	}
}
