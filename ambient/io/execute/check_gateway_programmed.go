package execute

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkGatewayProgrammed: the Gateway API Gateway has Programmed=True for its generation (one GET).
func checkGatewayProgrammed(cp *checkPass, ctx context.Context, c plan.Check, _ plan.GatewayProgrammedArgs) (bool, string, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("gateway.networking.k8s.io/v1")
	u.SetKind("Gateway")
	what := fmt.Sprintf("Gateway %s/%s", c.Object.Namespace, c.Object.Name)
	found, err := cp.e.get(ctx, client.ObjectKey{Namespace: c.Object.Namespace, Name: c.Object.Name}, u)
	if err != nil {
		return false, "", err
	}
	if !found {
		return false, what + " does not exist", nil
	}
	if ok, why := conditionHolds(u, what, "Programmed"); !ok {
		return false, why + " (istiod programs a waypoint once its Deployment and Service run)", nil
	}
	return true, "", nil
}
