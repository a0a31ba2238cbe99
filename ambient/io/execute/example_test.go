package execute_test

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Applying the first steps of the demo mesh's upgrade plan to a fake cluster (executetest) that
// plays the real charts' effects: the gate re-checked, the CRDs, the new istiod revision beside the
// old one, then the CNI. An embedder's own tests can drive their tool the same way.
func ExampleExecutor_Apply() {
	ctx := context.Background()
	objs, err := demo.Objects()
	if err != nil {
		panic(err)
	}
	w := executetest.NewWorld(executetest.PanicReporter{}, objs...)
	snap, err := w.Snapshot(ctx)
	if err != nil {
		panic(err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"),
		Waive: []plan.Code{plan.CodePDBBlocksDrain}})
	if err != nil {
		panic(err)
	}
	ex, err := execute.New(w.Client, w.Options(func(o *execute.Options) {
		o.Gates = ambient.Gates() // the gates the plan's checks ask for, judged as the planner judged them
	}))
	if err != nil {
		panic(err)
	}
	res, err := ex.Apply(ctx, p, execute.ApplyOptions{Until: "cni/health"})
	if err != nil {
		panic(err)
	}
	for _, sr := range res.Steps {
		fmt.Printf("%-22s %-10s %s\n", sr.StepID, sr.Status, sr.Message)
	}
	fmt.Println("done up to cni/health:", res.Done)
	// Output:
	// prechecks              done       verified 1 check
	// base/upgrade           done       upgraded Helm release istio-system/istio-base from chart base-1.30.3 #2 to base 1.31.4 (values that changed: none)
	// istiod/1-31-4/install  done       installed Helm release istio-system/istiod-1-31-4 from chart istiod 1.31.4
	// cni/upgrade            done       upgraded Helm release istio-system/istio-cni from chart cni-1.30.3 #1 to cni 1.31.4 (values that changed: none)
	// cni/health             done       probe "mesh-health" says istio-cni is healthy
	// done up to cni/health: true
}
