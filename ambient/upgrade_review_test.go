package ambient_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

// The review budget of issue 12: a node-by-node upgrade of a 1,000-node mesh renders in a runbook a
// person reads, and its YAML stays small enough to review and store. Issue 20 added what to do when
// a step fails, a line per rendered step (not per node).
const (
	// 400 again (issue 30), with what to do when a step fails (issue 20) and the two Leases a
	// revision's uninstall leaves (advisory istio#61155): past 50 waves, a row of the wave table
	// holds several, each still named with its nodes.
	maxRunbookLines = 400
	maxPlanYAML     = 1 << 20
	// maxBlueGreenRunbookLines: a blue-green proves green with a probe pod before any blue node is
	// cordoned (issue 18), five steps whose objects and commands the runbook shows in full (its
	// namespace, its Deployment, the wait, its backup and removal): some 60 lines the node-by-node
	// runbook has no need for.
	maxBlueGreenRunbookLines = maxRunbookLines + 60
)

// largeMesh is the mesh of the scale benchmark: 2 namespaces per 5 nodes, 50 pods each.
func largeMesh(nodes int) *mesh.Snapshot { return meshtest.Large("1.30.3", nodes, nodes*2/5, 50) }

var nodeByNode10 = ambient.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 10}, Today: today}

func TestThePlanOfAThousandNodesFitsAReview(t *testing.T) {
	s := largeMesh(1000)
	p, err := ambient.PlanUpgrade(s, nodeByNode10)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) < 5000 {
		t.Fatalf("the plan has %d steps; the test wants the node-by-node plan of 1,000 nodes", len(p.Steps))
	}
	md := runbookOf(t, p)
	if n := strings.Count(md, "\n"); n > maxRunbookLines {
		t.Errorf("the runbook has %d lines; the budget is %d", n, maxRunbookLines)
	}
	y, err := plan.EncodeYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(y) > maxPlanYAML {
		t.Errorf("the YAML has %d bytes; the budget is %d", len(y), maxPlanYAML)
	}
	back, err := plan.Decode(y)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plan.EncodeJSON(p)
	if got, _ := plan.EncodeJSON(back); !bytes.Equal(got, want) {
		t.Error("the YAML does not decode to the plan it was written from")
	}
	nothingLeftOut(t, s, p, md)
	t.Logf("%d steps: %d lines of Markdown, %d bytes of YAML", len(p.Steps), strings.Count(md, "\n"), len(y))
}

func TestTheBlueGreenPlanOfAThousandNodesFitsAReview(t *testing.T) {
	s := largeMesh(1000)
	s.NodePools = []mesh.NodePool{{Name: "batch"}, {Name: "general"}}
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3"),
		Strategy: ztunnel.BlueGreen{BatchSize: 10, Capacity: ztunnel.GreenCapacity{NodePools: []string{"general", "batch"}}}})
	if err != nil {
		t.Fatal(err)
	}
	md := runbookOf(t, p)
	if n := strings.Count(md, "\n"); n > maxBlueGreenRunbookLines {
		t.Errorf("the runbook has %d lines; the budget is %d", n, maxBlueGreenRunbookLines)
	}
	nothingLeftOut(t, s, p, md)
	y, err := plan.EncodeYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Decode(y); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d steps: %d lines of Markdown, %d bytes of YAML", len(p.Steps), strings.Count(md, "\n"), len(y))
}

func TestTheRunbookOfAFortyNodeMeshOpensWithASummary(t *testing.T) {
	p, err := ambient.PlanUpgrade(largeMesh(40), nodeByNode10)
	if err != nil {
		t.Fatal(err)
	}
	md := runbookOf(t, p)
	golden(t, "upgrade/large-40-nodes.plan.md", []byte(md))
	summary, _, _ := strings.Cut(md, "\n## Steps")
	for _, want := range []string{"### What changes", "### Findings", "### Phases", "### What needs a person", "40 nodes in 4 waves"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
}

// waveNumbered replaces the segments of an ID that are numbers with {n}.
func waveNumbered(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			segs[i] = "{n}"
		}
	}
	return strings.Join(segs, "/")
}

func runbookOf(t *testing.T, p *plan.Plan) string {
	t.Helper()
	var b strings.Builder
	if err := runbook.Render(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// nothingLeftOut checks that the runbook names every node the plan works on, every step that is no
// node's, every finding code, every approval and every blocked step.
func nothingLeftOut(t *testing.T, s *mesh.Snapshot, p *plan.Plan, md string) {
	t.Helper()
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(md, func(r rune) bool { return strings.ContainsRune(" ,;()|`\n", r) }) {
		words[w] = true
	}
	missing := 0
	for _, n := range s.Nodes {
		if !words[n.Name] {
			missing++
			if missing <= 5 {
				t.Errorf("the runbook never names node %s", n.Name)
			}
		}
	}
	nodeSteps := 0
	for _, st := range p.Steps {
		if strings.Contains(st.ID, "/node/") || strings.Contains(st.ID, "/cordon/") || strings.Contains(st.ID, "/drain/") {
			nodeSteps++
			continue
		}
		// A health gate after each wave is named once, its wave's number as {n}.
		if !strings.Contains(md, "`"+st.ID+"`") && !strings.Contains(md, "`"+waveNumbered(st.ID)+"`") {
			t.Errorf("the runbook never names step %s", st.ID)
		}
		if st.Approval != nil && !strings.Contains(md, st.Approval.Message) {
			t.Errorf("the runbook leaves out the approval of %s", st.ID)
		}
		if st.Blocked != "" && !strings.Contains(md, st.Blocked) {
			t.Errorf("the runbook leaves out why %s is blocked", st.ID)
		}
	}
	if nodeSteps == 0 {
		t.Error("the plan has no node steps; the test is not looking at a node-by-node plan")
	}
	for _, c := range plan.Codes(p.Findings) {
		if !strings.Contains(md, "`"+string(c)+"`") {
			t.Errorf("the runbook leaves out finding %s", c)
		}
	}
}
