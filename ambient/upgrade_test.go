package ambient_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ambient -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Fatalf("%s differs from the golden file (run with -update and review the diff):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}

func v(s string) mesh.Version { return mesh.MustParseVersion(s) }

func withPDBBlockingDB(s *mesh.Snapshot) {
	s.PodDisruptionBudgets = append(s.PodDisruptionBudgets, mesh.PodDisruptionBudget{Namespace: "shop", Name: "db",
		Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, MaxUnavailable: "0",
		DisruptionsAllowed: 0, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2})
	s.Normalize()
}

func TestPlanUpgradeGolden(t *testing.T) {
	tests := []struct {
		name    string
		version string
		mutate  func(*mesh.Snapshot)
		opts    ambient.UpgradeOptions
		blocked bool
		check   func(t *testing.T, p *plan.Plan)
	}{
		{name: "revision-1.30-to-1.31", version: "1.30.3",
			opts: ambient.UpgradeOptions{Target: v("1.31.4"), Today: today}},
		{name: "in-place-1.30-to-1.31", version: "1.30.3",
			opts: ambient.UpgradeOptions{Target: v("1.31.4"), Strategy: ambient.StrategyInPlace, Ztunnel: ambient.ZtunnelInPlace{}, Today: today},
			check: func(t *testing.T, p *plan.Plan) {
				for _, s := range p.Steps {
					if s.MoveTag != nil || s.HelmUninstall != nil || s.HelmInstall != nil {
						t.Errorf("an in-place upgrade installs, moves and removes nothing, got %s", s.ID)
					}
				}
			}},
		{name: "chained-1.29-to-1.31", version: "1.29.6",
			opts: ambient.UpgradeOptions{Target: v("1.31.4"), Today: today},
			check: func(t *testing.T, p *plan.Plan) {
				for _, id := range []string{"1.30.8/istiod/1-30-8/install", "1.30.8/cni/upgrade", "1.30.8/istiod/1-29-6/remove", "1.31.4/istiod/1-31-4/install", "1.31.4/istiod/1-30-8/remove"} {
					if _, ok := p.Step(id); !ok {
						t.Errorf("chained plan lacks step %s", id)
					}
				}
				assertHopsComplete(t, p)
			}},
		{name: "cni-ahead-blocked", version: "1.30.3", blocked: true,
			mutate: func(s *mesh.Snapshot) { meshtest.SetCNI(s, "1.31.2") },
			opts:   ambient.UpgradeOptions{Target: v("1.31.4"), Today: today}},
		{name: "renamed-ztunnel-untrusted", version: "1.30.3", blocked: true,
			mutate: func(s *mesh.Snapshot) {
				s.Ztunnels[0].Name, s.Ztunnels[0].ServiceAccount = "ztunnel-blue", "ztunnel-blue"
			},
			opts: ambient.UpgradeOptions{Target: v("1.31.4"), Today: today}},
		{name: "waypoint-pins-old-revision", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				for i := range s.Gateways {
					if s.Gateways[i].Waypoint {
						s.Gateways[i].RevisionLabel = "1-30-3"
					}
				}
			},
			opts: ambient.UpgradeOptions{Target: v("1.31.4"), Today: today},
			check: func(t *testing.T, p *plan.Plan) {
				rm, ok := p.Step("istiod/1-30-3/remove")
				if !ok || !strings.Contains(rm.Blocked, "Gateway shop/shop-waypoint") {
					t.Fatalf("removal must be blocked naming the waypoint, got %+v", rm)
				}
				if p.Runnable() {
					t.Error("a plan with a blocked step is not runnable")
				}
			}},
		{name: "tags-owned-by-old-release", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				owner := &mesh.ReleaseRef{Namespace: "istio-system", Name: "istiod-1-30-3"}
				for i := range s.Tags {
					s.Tags[i].WebhookRelease, s.Tags[i].ServiceRelease = owner, owner
				}
				for i := range s.HelmReleases {
					if s.HelmReleases[i].Name == owner.Name {
						s.HelmReleases[i].Values["revisionTags"] = []any{"default", "prod"}
					}
				}
			},
			opts: ambient.UpgradeOptions{Target: v("1.31.4"), Today: today},
			check: func(t *testing.T, p *plan.Plan) {
				// The moves come first; the old release lets go of the moved tags before its uninstall.
				var order []string
				for _, s := range p.Steps {
					switch {
					case strings.HasPrefix(s.ID, "tags/") && strings.HasSuffix(s.ID, "/move"), strings.HasPrefix(s.ID, "istiod/1-30-3/"):
						order = append(order, s.ID)
					}
				}
				want := []string{"tags/prod/move", "tags/default/move", "istiod/1-30-3/approve", "istiod/1-30-3/backup",
					"istiod/1-30-3/tags/default/keep-webhook", "istiod/1-30-3/tags/default/keep-service",
					"istiod/1-30-3/tags/prod/keep-webhook", "istiod/1-30-3/tags/prod/keep-service",
					"istiod/1-30-3/release-tags", "istiod/1-30-3/remove",
					"istiod/1-30-3/cleanup/lease/istio-gateway-deployment-1-30-3", "istiod/1-30-3/cleanup/lease/istio-gateway-status-leader-1-30-3"}
				if d := cmp.Diff(want, order); d != "" {
					t.Errorf("tag and removal steps (-want +got):\n%s", d)
				}
				rel, _ := p.Step("istiod/1-30-3/release-tags")
				if rel.HelmUpgrade == nil || rel.HelmUpgrade.Values["revisionTags"] != nil || rel.HelmUpgrade.Chart.Version != "1.30.3" {
					t.Errorf("release-tags = %+v", rel.HelmUpgrade)
				}
				if install, _ := p.Step("istiod/1-31-4/install"); install.HelmInstall.Values["revisionTags"] != nil {
					t.Errorf("the new revision's release must not render the tags: %v", install.HelmInstall.Values)
				}
				assertHopsComplete(t, p)
			}},
		{name: "node-by-node-pdb-blocks-a-node", version: "1.30.3", mutate: withPDBBlockingDB,
			opts: ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: 2}, Today: today, Waive: []plan.Code{plan.CodePDBBlocksDrain}},
			check: func(t *testing.T, p *plan.Plan) {
				var held []string
				for _, s := range p.Steps {
					if s.Drain != nil && len(s.Drain.MayHold) > 0 && strings.Contains(strings.Join(s.Drain.MayHold, ";"), "PodDisruptionBudget shop/db") {
						held = append(held, s.Drain.Node)
					}
				}
				if len(held) != 2 {
					t.Fatalf("the db budget should be named on the drains of the two nodes running db, got %v", held)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy(tc.version, 4)
			if tc.mutate != nil {
				tc.mutate(s)
				s.Normalize()
			}
			p, err := ambient.PlanUpgrade(s, tc.opts)
			if tc.blocked {
				if !errors.Is(err, ambient.ErrBlocked) || p == nil || len(p.Steps) != 0 {
					t.Fatalf("want a blocked plan with findings and no steps, got err=%v", err)
				}
			} else if err != nil {
				t.Fatalf("PlanUpgrade: %v", err)
			}
			b, err := plan.EncodeYAML(p)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "upgrade/"+tc.name+".plan.yaml", b)
			back, err := plan.Decode(b)
			if err != nil {
				t.Fatalf("the plan does not decode: %v", err)
			}
			if d := cmp.Diff(p, back); d != "" {
				t.Fatalf("YAML round trip changed the plan:\n%s", d)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func TestNodeByNodeCordonsDrainsAndUncordonsEveryNodeButOnesCordonedBefore(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 4)
	s.Nodes[3].Unschedulable = true // general-2, cordoned by its owner before the upgrade
	p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: v("1.31.4"), Today: today})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Nodes {
		for _, suffix := range []string{"cordon", "drain", "replace", "wait", "uncordon"} {
			st, ok := p.Step("ztunnel/node/" + n.Name + "/" + suffix)
			if suffix == "uncordon" && n.Unschedulable {
				if ok {
					t.Errorf("%s was cordoned before the upgrade and must stay cordoned", n.Name)
				}
				continue
			}
			if !ok {
				t.Errorf("node %s lacks step %s", n.Name, suffix)
				continue
			}
			// A node that ran no ambient pod when planned still gets an ambient-only drain: the drains
			// of earlier nodes may reschedule ambient pods onto it.
			if suffix == "drain" && st.Drain.AmbientOnly == (s.AmbientNodes()[n.Name] > 0) {
				t.Errorf("node %s: ambientOnly=%v, want %v", n.Name, st.Drain.AmbientOnly, s.AmbientNodes()[n.Name] == 0)
			}
		}
	}
}

func TestPlanUpgradeFindingsNameWhatStopsIt(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*mesh.Snapshot)
		want   plan.Code
	}{
		{"CNI ahead of the control plane is blocking", func(s *mesh.Snapshot) { meshtest.SetCNI(s, "1.31.2") }, plan.CodeCNIAheadOfControlPlane},
		{"an untrusted renamed ztunnel is blocking", func(s *mesh.Snapshot) { s.Ztunnels[0].ServiceAccount = "zt2" }, plan.CodeZtunnelNotTrusted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 3)
			tc.mutate(s)
			p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: v("1.31.4")})
			if !errors.Is(err, ambient.ErrBlocked) || !strings.Contains(err.Error(), string(tc.want)) {
				t.Fatalf("err = %v, want ErrBlocked naming %s", err, tc.want)
			}
			if !containsCode(plan.Codes(plan.Stopping(p.Findings)), tc.want) {
				t.Fatalf("stopping findings %v lack %s", plan.Codes(plan.Stopping(p.Findings)), tc.want)
			}
		})
	}
}

func containsCode(cs []plan.Code, c plan.Code) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func TestPlanUpgradeRefusesBadInput(t *testing.T) {
	healthy := func() *mesh.Snapshot { return meshtest.Healthy("1.30.3", 2) }
	tests := []struct {
		name string
		snap *mesh.Snapshot
		opts ambient.UpgradeOptions
		says string
	}{
		{"a missing target is refused", healthy(), ambient.UpgradeOptions{}, "target version is required"},
		{"a target older than the control plane is refused", healthy(), ambient.UpgradeOptions{Target: v("1.29.6")}, "older than the running control plane"},
		{"an unknown target is refused", healthy(), ambient.UpgradeOptions{Target: v("1.35.0")}, "releases.LoadFile"},
		{"a used revision name is refused", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), RevisionName: "1-30-3"}, "already used"},
		{"a chart repository that is not a URL is refused", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), Charts: ambient.ChartSource{Repository: "istio/charts"}}, "not an http(s) URL"},
		{"an OCI reference without its scheme is refused", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), Charts: ambient.ChartSource{OCI: "ghcr.io/x"}}, "oci://"},
		{"two chart sources are refused", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), Charts: ambient.ChartSource{Dir: "/c", OCI: "oci://x"}}, "only one"},
		{"an unknown waiver is refused", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), Waive: []plan.Code{"NOPE"}}, "NOPE"},
		{"in place with a revision name conflicts", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), Strategy: ambient.StrategyInPlace, RevisionName: "x"}, "in-place"},
		{"a negative node-by-node batch size is refused", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: -1}}, "batch size"},
		{"a node-by-node drain timeout under a second is refused", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: ambient.ZtunnelNodeByNode{DrainTimeout: time.Millisecond}}, "under a second"},
		{"Helm values that are not JSON are refused, naming the key", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), Values: map[string]map[string]any{"ztunnel": {"env": map[any]any{"A": "b"}}}}, "at env"},
		{"a tag order naming an unknown tag is refused", healthy(), ambient.UpgradeOptions{Target: v("1.31.4"), TagOrder: []string{"nope"}}, "nope"},
		{"two minors with chaining forbidden names the hop", meshtest.Healthy("1.29.6", 2), ambient.UpgradeOptions{Target: v("1.31.4"), NoChain: true}, "upgrade to 1.30.8 first"},
		{"a nil snapshot is refused", nil, ambient.UpgradeOptions{Target: v("1.31.4")}, "observe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ambient.PlanUpgrade(tc.snap, tc.opts)
			if err == nil || p != nil {
				t.Fatalf("want an error and no plan, got plan=%v err=%v", p != nil, err)
			}
			if errors.Is(err, ambient.ErrBlocked) {
				t.Fatalf("bad input must not look like blocking findings: %v", err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q should say %q", err, tc.says)
			}
		})
	}
}

// assertHopsComplete checks that within each hop the control plane comes before CNI, CNI before
// ztunnel, ztunnel before tags, tags before removal, and that no hop starts before the last one ended.
func assertHopsComplete(t *testing.T, p *plan.Plan) {
	t.Helper()
	phase := func(id string) (string, int) {
		hop := ""
		if i := strings.Index(id, "/"); i > 0 && strings.Count(id[:i], ".") == 2 {
			hop, id = id[:i], id[i+1:]
		}
		switch {
		case id == "prechecks", strings.HasSuffix(id, "prechecks"):
			return hop, 0
		case strings.HasPrefix(id, "base/upgrade"):
			return hop, 1
		case strings.HasPrefix(id, "istiod/") && (strings.HasSuffix(id, "/install") || strings.HasSuffix(id, "/upgrade") || strings.HasSuffix(id, "/health")):
			return hop, 2
		case strings.HasPrefix(id, "cni/"):
			return hop, 3
		case strings.HasPrefix(id, "ztunnel/"):
			return hop, 4
		case strings.HasPrefix(id, "tags/"):
			return hop, 5
		case strings.HasPrefix(id, "gateways/"), strings.HasPrefix(id, "waypoints/"), strings.HasPrefix(id, "base/default-revision"):
			return hop, 6
		case strings.HasPrefix(id, "istiod/"):
			return hop, 7
		}
		t.Fatalf("step %s belongs to no phase", id)
		return "", 0
	}
	lastHop, lastPhase := "", -1
	hopsSeen := map[string]bool{}
	for _, s := range p.Steps {
		hop, ph := phase(s.ID)
		if hop != lastHop {
			if hopsSeen[hop] {
				t.Fatalf("hop %s resumes at step %s after another hop started", hop, s.ID)
			}
			hopsSeen[hop] = true
			lastHop, lastPhase = hop, -1
		}
		if ph < lastPhase {
			t.Fatalf("step %s (phase %d) comes after a phase %d step in hop %q", s.ID, ph, lastPhase, hop)
		}
		lastPhase = ph
	}
}
