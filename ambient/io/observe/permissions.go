package observe

import (
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// ByLive names observe.Live in the needs RequiredPermissions returns.
const ByLive = "observe.Live"

// RequiredPermissions is what Live needs of its reader to observe the cluster s was observed from:
// list on every kind it reads, cluster-wide (optional kinds too: the server refuses a LIST it does
// not allow before it says whether it serves the kind), and list on Secrets only in the namespaces
// holding Istio's Helm releases (s.HelmReleases), where it reads their records and nothing else.
// It is what an executor's Snapshot over Live needs (execute.Options.Permissions). A release added
// after s was observed adds its namespace; the plan that installs it needs list there anyway.
// It is RequiredPermissionsFor with the zero Options.
func RequiredPermissions(s *mesh.Snapshot) *rbac.Permissions {
	return RequiredPermissionsFor(s, Options{})
}

// RequiredPermissionsFor is what Live needs with opts: RequiredPermissions, and with
// Options.WatchList also watch wherever it lists (a watch-list is a watch request; a server or RBAC
// that refuses it makes Live list that kind instead, one more request).
func RequiredPermissionsFor(s *mesh.Snapshot, opts Options) *rbac.Permissions {
	verbs := []string{"list"}
	if opts.WatchList {
		verbs = append(verbs, "watch")
	}
	ps := &rbac.Permissions{}
	for _, k := range kinds {
		if k.perRelease {
			continue
		}
		for _, v := range verbs {
			ps.Add(rbac.Permission{Verb: v, Group: k.group, Resource: k.plural}, ByLive)
		}
	}
	if s == nil {
		return ps
	}
	// Kinds of mesh.ConfigGroups newer than the table: their definitions, then their objects
	// (listNewConfigKinds). Refused, the kind stays unread and the plans say so.
	listed := map[string]bool{}
	for _, k := range kinds {
		listed[k.resource()] = true
	}
	for _, c := range s.CRDs {
		if !mesh.IsConfigGroup(c.Group) || listed[c.Name] {
			continue
		}
		plural, _, _ := strings.Cut(c.Name, ".")
		ps.Add(rbac.Permission{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, ByLive+": the definition of "+c.Name)
		for _, v := range verbs {
			ps.Add(rbac.Permission{Verb: v, Group: c.Group, Resource: plural}, ByLive)
		}
	}
	for _, h := range s.HelmReleases {
		for _, k := range kinds {
			if k.perRelease {
				for _, v := range verbs {
					ps.Add(rbac.Permission{Verb: v, Group: k.group, Resource: k.plural, Namespace: h.Namespace}, ByLive+": Helm records of "+h.Namespace+"/"+h.Name)
				}
			}
		}
	}
	return ps
}
