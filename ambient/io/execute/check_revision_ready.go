package execute

import (
	"context"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func checkRevisionReady(cp *checkPass, ctx context.Context, c plan.Check, a plan.RevisionReadyArgs) (bool, string, error) {
	e := cp.e
	rev := a.Revision
	ns, name := c.Object.Namespace, c.Object.Name
	if c.Object.Kind != "Deployment" || name == "" {
		name = "istiod-" + rev
		if rev == "default" {
			name = "istiod"
		}
	}
	if ns == "" {
		ns = DefaultNamespace
	}
	return e.deploymentReady(ctx, nil, ns, name)
}
