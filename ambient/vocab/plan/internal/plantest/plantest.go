// Package plantest holds the plans and checks the tests of the plan package and its runbook share.
package plantest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// NodeWaves is a plan that cordons, drains and uncordons nodes one after another, with a health
// gate after each batch, as the node-by-node planners do; edit changes the steps of one node.
func NodeWaves(nodes []string, batch int, edit func(node string, steps []plan.Step)) *plan.Plan {
	p := plan.New(plan.Metadata{Name: "waves", Operation: "upgrade", Fingerprint: "sha256:abc"})
	p.Steps = []plan.Step{{ID: "start", Description: "start", Risk: plan.RiskNone,
		Verify: &plan.Verification{Checks: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.FindingsClearArgs{}, "all clear")}}}}
	before := []string{"start"}
	for i := 0; i < len(nodes); i += batch {
		var done []string
		for _, n := range nodes[i:min(i+batch, len(nodes))] {
			id := "z/node/" + n + "/"
			ref := mesh.ObjectRef{Kind: "Node", Name: n}
			steps := []plan.Step{
				{ID: id + "cordon", Description: "cordon " + n, DependsOn: before, Risk: plan.RiskLow, Cordon: &plan.NodeRef{Node: n},
					Rollback: &plan.Step{ID: id + "cordon/undo", Description: "uncordon " + n, Risk: plan.RiskLow, Uncordon: &plan.NodeRef{Node: n}}},
				{ID: id + "drain", Description: "drain " + n + ".", DependsOn: []string{id + "cordon"}, Risk: plan.RiskHigh,
					Drain:          &plan.NodeDrain{Node: n, TimeoutSeconds: 600, IgnoreDaemonSets: true},
					Postconditions: []plan.Check{plan.NewCheck(ref, plan.NodeDrainedArgs{}, "only DaemonSet pods are left on "+n)}},
				{ID: id + "uncordon", Description: "uncordon " + n, DependsOn: []string{id + "drain"}, Risk: plan.RiskLow, Uncordon: &plan.NodeRef{Node: n}},
			}
			if edit != nil {
				edit(n, steps)
			}
			p.Steps = append(p.Steps, steps...)
			done = append(done, id+"uncordon")
		}
		gate := fmt.Sprintf("z/batch/%d/health", i/batch+1)
		p.Steps = append(p.Steps, plan.Step{ID: gate, Description: "health gate", DependsOn: done, Risk: plan.RiskNone,
			HealthGate: &plan.HealthGate{Probe: "mesh-health", Scope: "batch", SettleSeconds: 30}})
		before = []string{gate}
	}
	return p
}

// Names are n names prefix-0, prefix-1, ...
func Names(prefix string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// ContainsAll checks that text holds every one of want.
func ContainsAll(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the text lacks %q:\n%s", w, text)
		}
	}
}

// SamplePlan is a small plan of one step of several kinds: a Helm upgrade, a backup, an uninstall
// from that backup and a drain with a rollback.
func SamplePlan() *plan.Plan {
	p := plan.New(plan.Metadata{Name: "sample", Operation: "upgrade", Fingerprint: "sha256:abc",
		From: mesh.MustParseVersion("1.30.3"), To: mesh.MustParseVersion("1.31.4")})
	p.Findings = []plan.Finding{{Code: plan.CodeTrustedAccountWithoutZtunnel, Severity: plan.Info, Object: mesh.ObjectRef{Kind: "Deployment", Namespace: "istio-system", Name: "istiod"}, Message: "m"}}
	p.Steps = []plan.Step{
		{ID: "base/upgrade", Description: "upgrade CRDs", Risk: plan.RiskLow,
			HelmUpgrade: &plan.HelmRelease{Release: "istio-base", Namespace: "istio-system",
				Chart:  plan.ChartRef{Name: "base", Repository: "https://istio-release.storage.googleapis.com/charts", Version: "1.31.4"},
				Values: plan.MustNormalizeValues(map[string]any{"defaultRevision": "1-30-3", "n": 2})},
			Postconditions: []plan.Check{{Type: plan.CheckHelmReleaseVersion, Object: mesh.ObjectRef{Kind: "HelmRelease", Namespace: "istio-system", Name: "istio-base"}, Description: "base at 1.31.4"}}},
		{ID: "backup/istiod", Description: "back up", Risk: plan.RiskNone, DependsOn: []string{"base/upgrade"},
			Backup: &plan.Backup{Objects: []plan.BackupObject{{HelmRelease: "istiod-1-30-3", Object: mesh.ObjectRef{Kind: "HelmRelease", Namespace: "istio-system", Name: "istiod-1-30-3"}}}}},
		{ID: "istiod/remove", Description: "remove old", Risk: plan.RiskMedium, DependsOn: []string{"backup/istiod"},
			HelmUninstall: &plan.HelmUninstall{Release: "istiod-1-30-3", Namespace: "istio-system", BackupStep: "backup/istiod"}},
		{ID: "ztunnel/node/a/drain", Description: "drain a", Risk: plan.RiskHigh,
			Drain:    &plan.NodeDrain{Node: "a", IgnoreDaemonSets: true, TimeoutSeconds: 600, MayHold: []string{"PodDisruptionBudget shop/cart"}},
			Rollback: &plan.Step{ID: "ztunnel/node/a/drain/undo", Description: "uncordon a", Risk: plan.RiskLow, Uncordon: &plan.NodeRef{Node: "a"}}},
	}
	return p
}

// GoldenPlanFiles returns every golden plan (*.plan.yaml under a testdata folder) of the repository,
// the v1alpha1 fixtures of old documents apart.
func GoldenPlanFiles(t *testing.T) []string {
	t.Helper()
	root := moduleRoot(t)
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "v1alpha1" && strings.Contains(p, "ambient/vocab/plan")) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".plan.yaml") && strings.Contains(p, "testdata") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 12 {
		t.Fatalf("found %d golden plans, want the repository's (12 or more)", len(files))
	}
	return files
}

// moduleRoot is the folder of the module's go.mod, above the test's working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

// ZeroStep is a step of kind k with a zero payload, for the tests that call every part of a kind
// table's entry on a step of its kind.
func ZeroStep(t *testing.T, k plan.Kind) *plan.Step {
	t.Helper()
	f, ok := reflect.TypeOf(plan.Step{}).FieldByName(string(k))
	if !ok {
		t.Fatalf("kind %s is no Step field", k)
	}
	var s plan.Step
	reflect.ValueOf(&s).Elem().FieldByIndex(f.Index).Set(reflect.New(f.Type.Elem()))
	return &s
}
