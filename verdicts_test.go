package ambientkit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/internal/corpustest"
	"github.com/ambientkit/ambientkit/migrate"
	"github.com/ambientkit/ambientkit/tags"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// TestEveryOperationGivesEachObjectInItsScopeOneVerdict is the accounting's property: for the demo
// mesh and every state of the broken corpus, and for every operation that can be planned on it (an
// upgrade, a ztunnel swap, each tag moved to each revision, each namespace migrated), the plan's
// verdicts name each configuration object in the operation's scope exactly once, name nothing
// else, and give each kind the dump lacks a verdict of its own. The control-plane operations'
// scope is every object; a migration's is at least every object of its namespace.
func TestEveryOperationGivesEachObjectInItsScopeOneVerdict(t *testing.T) {
	planned := 0
	for _, st := range corpustest.States(t, ".") {
		name, s := st.Name, st.Snapshot
		for _, op := range operations(s) {
			p, err := op.run()
			if err != nil && !errors.Is(err, plan.ErrBlocked) {
				continue // an operation the state does not allow (refused options): no plan to account
			}
			planned++
			t.Run(name+"/"+op.name, func(t *testing.T) {
				checkAccounting(t, s, p, op.whole, op.namespace)
			})
		}
	}
	if planned < 100 {
		t.Errorf("only %d plans were made from the corpus; the property is not exercised", planned)
	}
}

type operation struct {
	name string
	run  func() (*plan.Plan, error)
	// whole: every configuration object is in scope; otherwise namespace's are.
	whole     bool
	namespace string
}

func operations(s *mesh.Snapshot) []operation {
	var ops []operation
	for _, target := range []string{"1.31.4", "1.30.3", "1.29.4"} {
		ops = append(ops, operation{name: "upgrade-" + target, whole: true, run: func() (*plan.Plan, error) {
			return ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: mesh.MustParseVersion(target)})
		}})
	}
	if len(s.Ztunnels) == 1 {
		ops = append(ops, operation{name: "bluegreen", whole: true, run: func() (*plan.Plan, error) {
			return ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: s.Ztunnels[0].Version})
		}})
	}
	for _, tag := range s.Tags {
		for _, r := range s.Revisions {
			ops = append(ops, operation{name: "move-tag-" + tag.Name + "-" + r.Name, whole: true, run: func() (*plan.Plan, error) {
				return tags.MoveTag(s, tag.Name, r.Name, tags.MoveOptions{})
			}})
		}
	}
	for _, ns := range s.Namespaces {
		ops = append(ops, operation{name: "migrate-" + ns.Name, namespace: ns.Name, run: func() (*plan.Plan, error) {
			return migrate.MigrateNamespace(s, ns.Name, migrate.Options{})
		}})
	}
	return ops
}

func checkAccounting(t *testing.T, s *mesh.Snapshot, p *plan.Plan, whole bool, namespace string) {
	t.Helper()
	all := map[mesh.ConfigObject]bool{}
	for _, o := range s.ConfigObjects() {
		all[o] = true
	}
	unread := map[mesh.ConfigObject]bool{}
	for _, res := range s.Observation.Unread {
		plural, group, _ := strings.Cut(res, ".")
		unread[mesh.ConfigObject{Group: group, Kind: plan.KindOfResource(plural, group)}] = true
	}
	got := map[mesh.ConfigObject]int{}
	for _, v := range p.Verdicts {
		got[v.Object]++
		if !all[v.Object] && !unread[v.Object] {
			t.Errorf("a verdict names %s, which is no configuration object of the snapshot", v.Object)
		}
		if v.Reason == "" {
			t.Errorf("the verdict on %s gives no reason", v.Object)
		}
	}
	for o, n := range got {
		if n != 1 {
			t.Errorf("%s has %d verdicts, want exactly one", o, n)
		}
	}
	for o := range unread {
		if got[o] == 0 {
			t.Errorf("the dump lacks %s objects (their CRD is served), and no verdict says so", o.Kind)
		}
	}
	named := map[mesh.ObjectRef]bool{}
	for _, f := range p.Findings {
		named[f.Object] = true
		for _, r := range f.Related {
			named[r] = true
		}
	}
	for o := range all {
		inScope := whole || o.Namespace == namespace || named[o.Ref()]
		if inScope && got[o] == 0 {
			t.Errorf("%s is in the operation's scope but has no verdict", o)
		}
	}
	if t.Failed() {
		t.Logf("plan %q: %s", p.Metadata.Name, verdictList(p))
	}
}

func verdictList(p *plan.Plan) string {
	var b strings.Builder
	for _, v := range p.Verdicts {
		fmt.Fprintf(&b, "\n  %s: %s (%s)", v.Object, v.Outcome, v.Reason)
	}
	return b.String()
}
