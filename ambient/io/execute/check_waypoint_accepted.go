package execute

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// policyAPIVersions are the versions WaypointAccepted reads a policy in when the check names none.
var policyAPIVersions = map[string]string{
	"AuthorizationPolicy":   "security.istio.io/v1",
	"RequestAuthentication": "security.istio.io/v1",
	"PeerAuthentication":    "security.istio.io/v1",
	"Telemetry":             "telemetry.istio.io/v1",
	"WasmPlugin":            "extensions.istio.io/v1alpha1",
}

// checkWaypointAccepted: istiod wrote WaypointAccepted=True on the policy for its generation (one GET).
func checkWaypointAccepted(cp *checkPass, ctx context.Context, c plan.Check, a plan.WaypointAcceptedArgs) (bool, string, error) {
	api := a.APIVersion
	if api == "" {
		api = policyAPIVersions[c.Object.Kind]
	}
	if api == "" || c.Object.Name == "" {
		return false, "", fmt.Errorf("check WaypointAccepted of %q: name the policy and, for a kind other than %v, its apiVersion; fix the plan", c.Object.String(), sortedKindNames())
	}
	u, err := refObject(api, c.Object)
	if err != nil {
		return false, "", err
	}
	found, err := cp.e.get(ctx, client.ObjectKey{Namespace: c.Object.Namespace, Name: c.Object.Name}, u)
	if err != nil {
		return false, "", err
	}
	if !found {
		return false, c.Object.String() + " does not exist", nil
	}
	if ok, why := conditionHolds(u, c.Object.String(), mesh.ConditionWaypointAccepted); !ok {
		return false, why, nil
	}
	return true, "", nil
}

func sortedKindNames() []string {
	out := make([]string, 0, len(policyAPIVersions))
	for k := range policyAPIVersions {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
