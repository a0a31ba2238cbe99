package observe

import (
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

// ByLive names observe.Live in the needs RequiredPermissions returns.
const ByLive = "observe.Live"

// RequiredPermissions is what Live needs of its reader to observe the cluster s was observed from:
// list on every kind it reads, cluster-wide (optional kinds too: the server refuses a LIST it does
// not allow before it says whether it serves the kind), and list on Secrets only in the namespaces
// holding Istio's Helm releases (s.HelmReleases), where it reads their records and nothing else.
// It is what an executor's Snapshot over Live needs (execute.Options.Permissions). A release added
// after s was observed adds its namespace; the plan that installs it needs list there anyway.
func RequiredPermissions(s *mesh.Snapshot) *plan.Permissions {
	ps := &plan.Permissions{}
	for _, k := range kinds {
		if k.perRelease {
			continue
		}
		ps.Add(plan.Permission{Verb: "list", Group: k.group, Resource: k.plural}, ByLive)
	}
	if s == nil {
		return ps
	}
	for _, h := range s.HelmReleases {
		for _, k := range kinds {
			if k.perRelease {
				ps.Add(plan.Permission{Verb: "list", Group: k.group, Resource: k.plural, Namespace: h.Namespace}, ByLive+": Helm records of "+h.Namespace+"/"+h.Name)
			}
		}
	}
	return ps
}
