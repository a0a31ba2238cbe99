package execute

import (
	"context"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func checkHelmReleaseVersion(cp *checkPass, ctx context.Context, c plan.Check, a plan.HelmReleaseVersionArgs) (bool, string, error) {
	e := cp.e
	ns, name, want := c.Object.Namespace, c.Object.Name, a.Version
	rel, err := e.helmGet(ctx, name, ns)
	if err != nil {
		return false, "", err
	}
	switch {
	case rel == nil:
		return false, fmt.Sprintf("Helm release %s/%s does not exist", ns, name), nil
	case rel.Status != "deployed":
		return false, fmt.Sprintf("Helm release %s/%s is %s", ns, name, rel.Status), nil
	case want != "" && rel.ChartVersion != want:
		return false, fmt.Sprintf("Helm release %s/%s is at chart %s, want %s", ns, name, rel.ChartVersion, want), nil
	}
	return true, "", nil
}
