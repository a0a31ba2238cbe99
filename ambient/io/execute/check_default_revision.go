package execute

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func (e *engine) defaultRevision(ctx context.Context, rev string) (bool, string, error) {
	const name = "istiod-default-validator"
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	found, err := e.get(ctx, client.ObjectKey{Name: name}, &vwc)
	if err != nil || !found {
		return false, "ValidatingWebhookConfiguration " + name + " does not exist", err
	}
	if got := vwc.Labels[mesh.LabelRev]; got != rev {
		return false, fmt.Sprintf("ValidatingWebhookConfiguration %s is labelled %s=%s, want %s", name, mesh.LabelRev, got, rev), nil
	}
	return true, "", nil
}

func checkDefaultRevision(cp *checkPass, ctx context.Context, _ plan.Check, a plan.DefaultRevisionArgs) (bool, string, error) {
	return cp.e.defaultRevision(ctx, a.Revision)
}
