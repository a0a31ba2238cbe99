package runbook

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/plantest"
)

func render(t *testing.T, p *plan.Plan, opts Options) string {
	t.Helper()
	var b strings.Builder
	if err := RenderWith(&b, p, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestMarkdownRendersTheStepsNodesShareOnceWithATableOfWaves(t *testing.T) {
	nodes := plantest.Names("pool-a", 8)
	p := plantest.NodeWaves(nodes, 3, func(n string, s []plan.Step) {
		s[0].Cordon.Pool = "a"
		if n == "pool-a-4" {
			s[1].Drain.MayHold = []string{"StatefulSet shop/db: restarts elsewhere with the same identity"}
			s[1].Risk = plan.RiskMedium
		}
	})
	p.Findings = []plan.Finding{{Code: plan.CodePDBBlocksDrain, Severity: plan.Waivable, Object: mesh.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "shop", Name: "db"},
		Component: "node/pool-a-4", Message: "the budget allows 0 disruptions", Remedy: "relax it"}}
	tests := []struct {
		name     string
		opts     Options
		want     []string
		wantOnce []string
		not      []string
	}{
		{name: "by default the template comes once and each wave gets a row",
			want: []string{
				"### 2–28. `z/node/{node}/…` · 8 nodes in 3 waves",
				"| 1 | pool-a-0, pool-a-1, pool-a-2 | a 3 | – | – |",
				"| 2 | pool-a-3, pool-a-4, pool-a-5 | a 3 | `drain` B (pool-a-4) | StatefulSet shop/db: restarts elsewhere with the same identity (pool-a-4); finding `PDB_BLOCKS_DRAIN` (pool-a-4) |",
				"#### variant B, 1 of 8 nodes: `z/node/{node}/drain` · Drain · risk medium",
				"- differs from A: risk medium",
				"#### after each wave: `z/batch/{n}/health` · HealthGate · risk none",
				"kubectl drain {node} --ignore-daemonsets --timeout=600s",
				"| 3 | pool-a-6, pool-a-7 | a 2 | – | – |",
				"| 8 nodes (`z/node/{node}/…`) | – | – | cordon → drain → uncordon, in 3 waves | high |",
				"| 2 | z | 27 | 8 nodes in 3 waves | 8× drain ≤ 10m, 3× health gate 30s | 1m30s | 1m30s | 1h21m |",
				"- waivable finding `PDB_BLOCKS_DRAIN` on PodDisruptionBudget shop/db: waive the code or fix it (relax it)",
			},
			wantOnce: []string{"#### `z/node/{node}/cordon`", "kubectl cordon {node}"},
			not:      []string{"z/node/pool-a-1/drain`"},
		},
		{name: "with Full every step comes on its own",
			opts: Options{Full: true},
			want: []string{"### 3. `z/node/pool-a-0/drain` · Drain · risk high", "### 16. `z/node/pool-a-4/drain` · Drain · risk medium",
				"- may hold the drain: StatefulSet shop/db: restarts elsewhere with the same identity", "**What:** cordon pool-a-5 (pool a)",
				"- after: `z/node/pool-a-3/uncordon`, `z/node/pool-a-4/uncordon`, `z/node/pool-a-5/uncordon`"},
			not: []string{"#### ", "| wave |", "after each wave"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := render(t, p, tc.opts)
			plantest.ContainsAll(t, md, tc.want...)
			for _, w := range tc.wantOnce {
				if n := strings.Count(md, w); n != 1 {
					t.Errorf("markdown holds %q %d times, want once:\n%s", w, n, md)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(md, w) {
					t.Errorf("markdown holds %q:\n%s", w, md)
				}
			}
		})
	}
}

func TestMarkdownSummaryTellsWhatChangesAndWhatNeedsAPerson(t *testing.T) {
	p := plantest.SamplePlan()
	p.Steps[0].HelmUpgrade.FromVersion = "1.30.3"
	p.Steps[2].HelmUninstall.FromVersion = "1.30.3"
	p.Steps = append(p.Steps,
		plan.Step{ID: "istiod/approve", Description: "approve", Risk: plan.RiskNone, Approval: &plan.Approval{Message: "removing 1-30-3 is for good"}},
		plan.Step{ID: "tags/prod/move", Description: "move prod", Risk: plan.RiskHigh, Blocked: "nothing runs 1-31-4 yet",
			MoveTag: &plan.TagMove{Tag: "prod", From: "1-30-3", To: "1-31-4", Namespace: "istio-system"}},
		plan.Step{ID: "tags/prod/health", Description: "health gate", Risk: plan.RiskNone, HealthGate: &plan.HealthGate{Probe: "p", Scope: "tag prod", SettleSeconds: 90}},
		plan.Step{ID: "tags/prod/wait", Description: "wait", Risk: plan.RiskNone, WaitFor: &plan.WaitFor{Check: plan.NewCheck(mesh.ObjectRef{}, plan.FindingsClearArgs{}, "clear")}})
	plantest.ContainsAll(t, render(t, p, Options{}),
		"| Helm release istio-system/istio-base (chart base) | 1.30.3 | 1.31.4 | upgrade | low |",
		"| Helm release istio-system/istiod-1-30-3 | 1.30.3 | removed | back up, uninstall | medium |",
		"| tag prod | 1-30-3 | 1-31-4 | move | high |",
		"| 6 | tags | 3 | – | health gate 1m30s, wait (executor's timeout) | 1m30s | 1m30s | 1m30s + |",
		"| 1 | base | 1 | – | – | – | 1m | 1m |",
		"| | **all** | 8 | – | | 1m30s | 3m30s | 13m30s + |",
		"- approve `istiod/approve`: removing 1-30-3 is for good",
		"- `tags/prod/move` is blocked: nothing runs 1-31-4 yet",
		"- status: **not runnable**",
		"- **blocked:** nothing runs 1-31-4 yet",
	)
}

func TestTheWaveStepsOfFewerThanEightNodesAreRenderedOneByOne(t *testing.T) {
	md := render(t, plantest.NodeWaves(plantest.Names("n", 7), 3, nil), Options{})
	plantest.ContainsAll(t, md, "### 3. `z/node/n-0/drain` · Drain · risk high", "kubectl drain n-6 --ignore-daemonsets --timeout=600s")
	if strings.Contains(md, "`z/node/{node}/drain`") {
		t.Errorf("a runbook of 7 nodes should name every node, not a template:\n%s", md)
	}
}

func TestMarkdownCutsLongCommandListsUnlessFull(t *testing.T) {
	p := plantest.SamplePlan()
	var ws []mesh.ObjectRef
	for _, n := range plantest.Names("app", 20) {
		ws = append(ws, mesh.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: n})
	}
	p.Steps = append(p.Steps, plan.Step{ID: "tags/prod/restart", Description: "restart", Risk: plan.RiskMedium, Restart: &plan.Restart{Workloads: ws}})
	short, full := render(t, p, Options{}), render(t, p, Options{Full: true})
	if strings.Contains(short, "deployment/app-19 ") || !strings.Contains(short, "# ... and 36 more like these") {
		t.Errorf("the default runbook should show 4 commands (2 restarts, each waited for) and count the rest:\n%s", short)
	}
	if !strings.Contains(full, "kubectl rollout restart deployment/app-19 -n shop") {
		t.Errorf("the full runbook should show every restart:\n%s", full)
	}
}

func TestFindingsOfOneCodeOnManyObjectsShareARow(t *testing.T) {
	var fs []plan.Finding
	for _, n := range plantest.Names("node", 5) {
		fs = append(fs, plan.Finding{Code: plan.CodeBlueGreenLongLivedConnections, Severity: plan.Info, Object: mesh.ObjectRef{Kind: "Node", Name: n},
			Message: "node " + n + " runs a StatefulSet", Remedy: "reconnect"})
	}
	var b strings.Builder
	RenderFindings(&b, fs)
	want := "| info | `BLUEGREEN_LONG_LIVED_CONNECTIONS` | 5 findings on Node node-0, Node node-1, Node node-2, Node node-3, Node node-4 | e.g. node node-0 runs a StatefulSet | reconnect |"
	if !strings.Contains(b.String(), want) || strings.Count(b.String(), "\n| info") != 1 {
		t.Errorf("findings table lacks %q:\n%s", want, b.String())
	}
}

func TestAStepThatMerelyFollowsTheOnlyWaveIsNotTheWaves(t *testing.T) {
	md := render(t, plantest.NodeWaves(plantest.Names("n", 8), 8, nil), Options{})
	plantest.ContainsAll(t, md, "### 2–25. `z/node/{node}/…` · 8 nodes", "### 26. `z/batch/1/health` · HealthGate · risk none")
	if strings.Contains(md, "after each wave") {
		t.Errorf("a set of one wave has no steps after each wave:\n%s", md)
	}
}
