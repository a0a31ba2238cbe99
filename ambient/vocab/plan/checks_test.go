package plan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

func TestCheckArgumentsRoundTripThroughParams(t *testing.T) {
	ds := mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}
	c := plan.NewCheck(ds, plan.NodeAgentReadyArgs{Node: "n1", Version: "1.31.4"}, "d")
	if d := cmp.Diff(map[string]string{"node": "n1", "version": "1.31.4"}, c.Params); d != "" {
		t.Fatalf("params (-want +got):\n%s", d)
	}
	a, err := plan.ArgsOf[plan.NodeAgentReadyArgs](c)
	if err != nil || a != (plan.NodeAgentReadyArgs{Node: "n1", Version: "1.31.4"}) {
		t.Fatalf("ArgsOf = %+v, %v", a, err)
	}
	tr := plan.NewCheck(mesh.ObjectRef{}, plan.TrustedAccountsArgs{Accounts: []string{"istio-system/ztunnel", "ztunnel-green/ztunnel-green"}}, "d")
	if tr.Params["accounts"] != "istio-system/ztunnel,ztunnel-green/ztunnel-green" {
		t.Fatalf("accounts param = %q", tr.Params["accounts"])
	}
	back, err := plan.ArgsOf[plan.TrustedAccountsArgs](tr)
	if err != nil || len(back.Accounts) != 2 {
		t.Fatalf("ArgsOf accounts = %+v, %v", back, err)
	}
	w := plan.NewCheck(mesh.ObjectRef{}, plan.NoSandboxFailuresArgs{RetryWindowSeconds: 90}, "d")
	if w.Params["retryWindowSeconds"] != "90" {
		t.Fatalf("int param = %q", w.Params["retryWindowSeconds"])
	}
}

func TestBadCheckArgumentsAreRefused(t *testing.T) {
	ds := mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}
	tests := []struct {
		name  string
		check plan.Check
		says  string
	}{
		{"a param the check does not take is refused", plan.Check{Type: plan.CheckTagPointsTo, Params: map[string]string{"tag": "t", "revision": "r", "colour": "red"}}, "unknown params [colour]"},
		{"a misspelt param is refused", plan.Check{Type: plan.CheckNodeAgentReady, Object: ds, Params: map[string]string{"nod": "n1"}}, "unknown params [nod]"},
		{"a missing required param is refused", plan.Check{Type: plan.CheckTagPointsTo, Params: map[string]string{"tag": "t"}}, "param revision is required"},
		{"a boolean that is not one is refused", plan.Check{Type: plan.CheckNodeAgentReady, Object: ds, Params: map[string]string{"all": "yes"}}, "not true or false"},
		{"a number that is not one is refused", plan.Check{Type: plan.CheckNoSandboxFailures, Params: map[string]string{"retryWindowSeconds": "two minutes"}}, "not a whole number"},
		{"node agent readiness needs a node or all", plan.Check{Type: plan.CheckNodeAgentReady, Object: ds}, "exactly one of params node and all"},
		{"a check without the object its type needs is refused", plan.Check{Type: plan.CheckDeploymentReady}, "needs an object of kind Deployment"},
		{"a check that takes no params refuses one", plan.Check{Type: plan.CheckDeploymentReady, Object: mesh.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "b"}, Params: map[string]string{"x": "1"}}, "it takes none"},
		{"an unknown since is refused", plan.Check{Type: plan.CheckPodsRedirected, Params: map[string]string{"since": "yesterday"}}, "step-start"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plantest.SamplePlan()
			p.Steps[0].Postconditions = []plan.Check{tc.check}
			b, err := plan.EncodeYAML(p)
			if err != nil {
				t.Fatal(err)
			}
			_, err = plan.Decode(b)
			if !errors.Is(err, plan.ErrInvalidPlan) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Decode: %v; want ErrInvalidPlan saying %q", err, tc.says)
			}
		})
	}
}

func TestNormalizeValuesRefusesValuesThatAreNotJSON(t *testing.T) {
	_, err := plan.NormalizeValues(map[string]any{"ztunnel": map[string]any{"env": map[any]any{"A": "b"}}})
	if !errors.Is(err, plan.ErrInvalidOptions) || !strings.Contains(err.Error(), "at ztunnel.env") {
		t.Fatalf("err = %v; want ErrInvalidOptions naming ztunnel.env", err)
	}
	got, err := plan.NormalizeValues(map[string]any{"n": 2, "m": map[string]any{"b": true}})
	if err != nil || got["n"] != float64(2) {
		t.Fatalf("JSON values: %v, %v", got, err)
	}
}

func TestRunbookCommandsNeverShowGoZeroValues(t *testing.T) {
	st := plan.Step{ID: "z", Risk: plan.RiskLow, HelmUpgrade: &plan.HelmRelease{Release: "ztunnel", Namespace: "istio-system",
		Chart:  plan.ChartRef{Name: "ztunnel", Repository: "https://example.com/charts", Version: "1.31.4"},
		Values: map[string]any{"updateStrategy": map[string]any{"type": "OnDelete", "rollingUpdate": nil}}}}
	cmds := plan.Commands(&st)
	if len(cmds) != 1 || !strings.Contains(cmds[0], "--set updateStrategy.rollingUpdate=null") || strings.Contains(cmds[0], "<nil>") {
		t.Fatalf("commands %q: want --set updateStrategy.rollingUpdate=null and no <nil>", cmds)
	}
}
