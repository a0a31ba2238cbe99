package cli

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// RegisterDemoRun adds --demo to a command that applies plans (upgrade): with --dry-run, it plans
// the embedded demo mesh held by an in-memory cluster and runs the executor on it, so the executor
// can be seen at work with no cluster. Without --dry-run it is refused.
func (s *Source) RegisterDemoRun(c *Command) {
	s.demoRun = true
	c.OfflineDryRun = true
	c.fs.BoolVar(&s.Demo, "demo", false, "")
	c.add(Spec{Name: "demo", Usage: "with --dry-run: plan the embedded demo mesh held by an in-memory cluster that plays the charts' effects, and run the executor on it " +
		"(drains, waves, gates, approvals granted); nothing outside this process changes", Example: "--demo --dry-run"})
	c.check(func() error {
		switch {
		case !s.Demo:
			return nil
		case c.IsSet("kubeconfig") || c.IsSet("context"):
			return usage("say which cluster once: --demo (the in-memory demo cluster) or --kubeconfig/--context (a live one)")
		case !c.IsSet("dry-run"):
			return usage("--demo runs the executor only on the in-memory demo cluster, and only as a try-out: add --dry-run (%s --demo --dry-run); "+
				"to plan the demo mesh without running anything, use plan-upgrade --demo", c.Invocation)
		}
		return nil
	})
}

// InMemory reports whether the run is on the in-memory demo cluster (RegisterDemoRun).
func (s *Source) InMemory() bool { return s.Demo && s.demoRun }

// connectMemory builds the in-memory demo cluster: the demo mesh's objects in a fake API server
// whose controllers schedule and replace pods, enforce budgets, and play the Istio charts' effects
// (executetest.World), with a fake Helm over it and a clock that moves by the time waited for.
func connectMemory(ctx context.Context) (*Cluster, error) {
	objs, err := demo.Objects()
	if err != nil {
		return nil, err
	}
	w := executetest.NewWorld(executetest.PanicReporter{}, objs...)
	if err := w.PrepareDemo(ctx); err != nil { // relaxes the postgres budget so the run can end
		return nil, fmt.Errorf("the in-memory demo cluster: %w", err)
	}
	return &Cluster{Client: w.Client, Source: plan.SourceDemo, memory: &memory{world: w}}, nil
}

// memory is what an in-memory cluster lends the executor in place of a live one's.
type memory struct {
	world *executetest.World
}

func (m *memory) helm() execute.HelmClient { return m.world.Helm }
func (m *memory) clock() execute.Clock     { return m.world.Clock }
