package advisories_test

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// A planner checks the istio-cni it finds running against the embedded advisories, decides their
// conditions from what it observed, and names the patch to move to among those it can install.
func Example() {
	d := advisories.Default()
	running := mesh.MustParseVersion("1.30.3")
	installable := []mesh.Version{
		mesh.MustParseVersion("1.30.3"), mesh.MustParseVersion("1.30.4"), mesh.MustParseVersion("1.30.5"),
	}
	facts := advisories.Facts{Flags: map[advisories.ConditionKind]bool{
		advisories.CNIAmbientDisabled:          true,
		advisories.CNINativeNftables:           false,
		advisories.CNIExcludesAmbientNamespace: false,
		advisories.HostNetworkPodsInAmbient:    false,
	}}
	for _, a := range d.Affecting(advisories.CNI, running) {
		applies, _ := a.Applies(running, facts)
		if !applies || a.ID != "istio#60668" {
			continue
		}
		fix, _ := a.FixedPatch(running)
		to, _ := a.NewestUnaffected(running, installable)
		fmt.Printf("istio-cni %s is affected by %s (%s); %s is the first %s patch without it, %s the newest installable\n",
			running, a.ID, a.Title, fix.Version, running.MinorString(), to)
	}

	// Removing revision 1-30-3 leaves objects behind for a cleanup step.
	for _, l := range d.LeftBehind(advisories.RevisionUninstall, advisories.Istiod, running) {
		ns, name := l.Resolve("1-30-3", "istio-system")
		fmt.Printf("%s: delete %s %s/%s\n", l.AdvisoryID, l.Kind, ns, name)
	}
	// Output:
	// istio-cni 1.30.3 is affected by istio#60668 (a sidecar-mode istio-cni node agent can deadlock on its own kubeconfig after a node reboot); 1.30.4 is the first 1.30 patch without it, 1.30.5 the newest installable
	// istio#61155: delete Lease istio-system/istio-gateway-deployment-1-30-3
	// istio#61155: delete Lease istio-system/istio-gateway-status-leader-1-30-3
}
