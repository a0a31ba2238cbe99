package plan_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

func TestPlanRoundTripsThroughYAMLAndJSON(t *testing.T) {
	p := plantest.SamplePlan()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, enc := range map[string]func(*plan.Plan) ([]byte, error){"yaml": plan.EncodeYAML, "json": plan.EncodeJSON} {
		t.Run(name, func(t *testing.T) {
			b, err := enc(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := plan.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(p, got); d != "" {
				t.Fatalf("round trip changed the plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestDecodeRejectsPlansEditedIntoInvalidStates(t *testing.T) {
	good, _ := plan.EncodeYAML(plantest.SamplePlan())
	tests := []struct {
		name, from, to, says string
	}{
		{"an unknown field is refused", "operation: upgrade", "operation: upgrade\n  color: red", "unknown field"},
		{"a step with two actions is refused", "  drain:\n", "  cordon:\n    node: a\n  drain:\n", "2 actions"},
		{"a dependency on a later step is refused", "dependsOn: [base/upgrade]", "dependsOn: [istiod/remove]", "comes later"},
		{"a dependency on a missing step is refused", "dependsOn: [base/upgrade]", "dependsOn: [nope]", "unknown step"},
		{"an uninstall without its backup is refused", "backupStep: backup/istiod", "backupStep: base/upgrade", "not a Backup"},
		{"an empty fingerprint is refused", "fingerprint: sha256:abc", "fingerprint: \"\"", "fingerprint"},
		{"a wrong apiVersion is refused", "apiVersion: ambientkit.io/v1alpha3", "apiVersion: v9", "apiVersion"},
		{"a newer version than this build reads is refused naming the versions it reads", "apiVersion: ambientkit.io/v1alpha3", "apiVersion: ambientkit.io/v1beta9", "v1alpha1, ambientkit.io/v1alpha2, ambientkit.io/v1alpha3"},
		{"a repository that is not a URL is refused", "repository: https://istio-release", "repository: istio-release", "not an http(s) URL"},
		{"an unknown check type is refused", "type: HelmReleaseVersion", "type: Vibes", "unknown"},
		{"a bad risk is refused", "risk: high", "risk: extreme", "risk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { refusesEdit(t, good, tc.from, tc.to, tc.says) })
	}
}

// refusesEdit checks that Decode refuses the encoded plan good with from replaced by to, saying says.
func refusesEdit(t *testing.T, good []byte, from, to, says string) {
	t.Helper()
	if !bytes.Contains(good, []byte(from)) {
		t.Fatalf("fixture does not contain %q:\n%s", from, good)
	}
	_, err := plan.Decode(bytes.Replace(good, []byte(from), []byte(to), 1))
	if !errors.Is(err, plan.ErrInvalidPlan) || !strings.Contains(err.Error(), says) {
		t.Fatalf("err = %v; want ErrInvalidPlan mentioning %q", err, says)
	}
}

func TestMarkdownShowsCommandsVerificationAndUndo(t *testing.T) {
	var b strings.Builder
	if err := runbook.Render(&b, plantest.SamplePlan()); err != nil {
		t.Fatal(err)
	}
	plantest.ContainsAll(t, b.String(),
		"helm upgrade istio-base base --repo https://istio-release.storage.googleapis.com/charts --version 1.31.4 -n istio-system --set defaultRevision=1-30-3 --set n=2",
		"helm get metadata istio-base -n istio-system | awk",
		"helm get all istiod-1-30-3 -n istio-system > backup/helm-istiod-1-30-3.yaml",
		"helm uninstall istiod-1-30-3 -n istio-system",
		"kubectl drain a --ignore-daemonsets --timeout=600s",
		"- undo: uncordon a (`kubectl uncordon a`)",
		"- may hold the drain: PodDisruptionBudget shop/cart",
		"kubectl uncordon a",
		"| info | `TRUSTED_ACCOUNT_WITHOUT_ZTUNNEL` |",
	)
}

func TestYAMLKeepsStringsThatLookLikeOtherTypes(t *testing.T) {
	tricky := []string{"yes", "No", "on", "OFF", "y", "1:30", "010", "0x1F", "1_000", "1.30", "1e3", ".inf", "null", "~", "true", "",
		" padded ", "a: b", "- x", "#x", "[x]", "{x}", "x, y", "line one\nline two\n", "trailing\n", "'q'", "\"dq\"", "@x", "`x`", "%x", "!x", "&x", "*x", "<<"}
	p := plantest.SamplePlan()
	values := map[string]any{}
	for i, s := range tricky {
		values[s+"-key"] = s
		values[fmt.Sprintf("k%02d", i)] = []any{s, map[string]any{"v": s}}
	}
	p.Steps[0].HelmUpgrade.Values = plan.MustNormalizeValues(values)
	p.Steps[0].Notes = tricky[1:]
	roundTrip(t, p)
}

func TestAWaveIsRefusedWhenItsUnitsWaitForEachOtherOrItsStepsAreApart(t *testing.T) {
	wave := func(id, node string) *plan.WaveUnit { return &plan.WaveUnit{ID: id, Node: node} }
	cordon := func(id, node string, w *plan.WaveUnit, deps ...string) plan.Step {
		return plan.Step{ID: id, Description: "cordon", Risk: plan.RiskLow, DependsOn: deps, Wave: w, Cordon: &plan.NodeRef{Node: node}}
	}
	gate := plan.Step{ID: "gate", Description: "gate", Risk: plan.RiskNone, HealthGate: &plan.HealthGate{Probe: "p", Scope: "s"}}
	tests := []struct {
		name  string
		steps []plan.Step
		says  string
	}{
		{"units that depend only on what comes before the wave are valid", []plan.Step{gate,
			cordon("a/1", "a", wave("w", "a"), "gate"), cordon("a/2", "a", wave("w", "a"), "a/1"), cordon("b/1", "b", wave("w", "b"), "gate")}, ""},
		{"a unit that waits for another unit of its wave is refused", []plan.Step{gate,
			cordon("a/1", "a", wave("w", "a"), "gate"), cordon("b/1", "b", wave("w", "b"), "a/1")}, "units of a wave do not wait for each other"},
		{"a wave interrupted by another step is refused", []plan.Step{
			cordon("a/1", "a", wave("w", "a")), gate, cordon("b/1", "b", wave("w", "b"))}, "continues after other steps"},
		{"a wave step without a node is refused", []plan.Step{cordon("a/1", "a", wave("w", ""))}, "names no node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.New(plan.Metadata{Name: "waves", Operation: "test", Fingerprint: "sha256:x"})
			p.Steps = tc.steps
			err := p.Validate()
			if tc.says == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, plan.ErrInvalidPlan) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v; want it to say %q", err, tc.says)
			}
		})
	}
}

func render(t *testing.T, p *plan.Plan, opts runbook.Options) string {
	t.Helper()
	var b strings.Builder
	if err := runbook.RenderWith(&b, p, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
