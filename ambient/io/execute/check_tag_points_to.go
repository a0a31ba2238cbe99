package execute

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func checkTagPointsTo(cp *checkPass, ctx context.Context, c plan.Check, a plan.TagPointsToArgs) (bool, string, error) {
	e := cp.e
	tag, rev := a.Tag, a.Revision
	name := "istio-revision-tag-" + tag
	if c.Object.Kind == "MutatingWebhookConfiguration" && c.Object.Name != "" {
		name = c.Object.Name
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	found, err := e.get(ctx, client.ObjectKey{Name: name}, &mwc)
	if err != nil || !found {
		return false, fmt.Sprintf("MutatingWebhookConfiguration %s does not exist", name), err
	}
	if got := mwc.Labels[mesh.LabelRev]; got != rev {
		return false, fmt.Sprintf("MutatingWebhookConfiguration %s is labelled %s=%s, want %s", name, mesh.LabelRev, got, rev), nil
	}
	return true, "", nil
}
