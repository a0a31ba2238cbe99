package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func checkGatewayOwner(cp *checkPass, ctx context.Context, c plan.Check, a plan.GatewayOwnerArgs) (bool, string, error) {
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	want := a.Revision
	for _, g := range s.Gateways {
		if g.Kind != c.Object.Kind || g.Namespace != c.Object.Namespace || g.Name != c.Object.Name {
			continue
		}
		if g.Revision == want || (g.Revision != "" && s.ResolveRevision(want) == g.Revision) {
			return true, "", nil
		}
		return false, fmt.Sprintf("%s is owned by revision %q, want %q", c.Object, g.Revision, want), nil
	}
	return false, fmt.Sprintf("%s was not found among the mesh's gateways", c.Object), nil
}
