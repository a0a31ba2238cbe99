package execute

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/rbac"
)

// Who needs the executor's own permissions, as Need.By names them.
const (
	byLock    = "executor: lock Lease " + LockName
	byJournal = "executor: journal"
	byBackups = "executor: backup store"
	byEvents  = "KubernetesEvents"
	byWatches = "executor: watches its waits wake on"
)

// requiredPermissions is Executor.RequiredPermissions.
func (e *engine) requiredPermissions(p *plan.Plan) (*rbac.Permissions, error) {
	hash, err := PlanHash(p)
	if err != nil {
		return nil, err
	}
	dry := e.opts.DryRun
	ps := rbac.RequiredPermissions(p, rbac.Options{DryRun: dry})
	ns := e.opts.Namespace
	add := func(verb, group, resource, name, by string, sources ...string) {
		ps.Add(rbac.Permission{Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name}, by, sources...)
	}
	if !dry { // lock.go: GET the Lease, CREATE it when there is none, UPDATE it to take, renew and release it
		add("get", "coordination.k8s.io", "leases", LockName, byLock)
		add("create", "coordination.k8s.io", "leases", "", byLock)
		add("update", "coordination.k8s.io", "leases", LockName, byLock)
	}
	if _, ok := e.c.(client.WithWatch); ok && !dry {
		// watch.go: one LIST (limit 1, or whole for the kinds it keeps) for a resourceVersion, then one cluster-wide WATCH, per kind
		// the plan's steps wait on
		for _, k := range watchedKinds(p) {
			kw := watchKinds[k]
			ps.Add(rbac.Permission{Verb: "list", Group: kw.group, Resource: kw.resource}, byWatches)
			ps.Add(rbac.Permission{Verb: "watch", Group: kw.group, Resource: kw.resource}, byWatches)
		}
	}
	if j, ok := e.journal.(*ConfigMapJournal); ok { // journal.go: GET, and a server-side apply to save
		name := j.Name(hash)
		ps.Add(rbac.Permission{Verb: "get", Resource: "configmaps", Namespace: j.Namespace, Name: name}, byJournal)
		if !dry {
			ps.Add(rbac.Permission{Verb: "patch", Resource: "configmaps", Namespace: j.Namespace, Name: name}, byJournal)
			ps.Add(rbac.Permission{Verb: "create", Resource: "configmaps", Namespace: j.Namespace, Name: name}, byJournal, srcApplyCreates)
		}
	}
	if s, ok := e.backups.(*SecretBackupStore); ok { // backup.go: a server-side apply to write, a GET to read
		for _, u := range backupUses(p, dry) {
			name := s.Name(backupKey(hash, u.step))
			by := byBackups + " (step " + u.by + ")"
			ps.Add(rbac.Permission{Verb: "get", Resource: "secrets", Namespace: s.Namespace, Name: name}, by)
			if u.write {
				ps.Add(rbac.Permission{Verb: "patch", Resource: "secrets", Namespace: s.Namespace, Name: name}, by)
				ps.Add(rbac.Permission{Verb: "create", Resource: "secrets", Namespace: s.Namespace, Name: name}, by, srcApplyCreates)
			}
		}
	}
	ps.Merge(e.opts.Permissions)
	return ps, nil
}

// srcApplyCreates: a server-side apply of an object that does not exist yet is also authorized as a
// create of that name.
const srcApplyCreates = "k8s.io/apiserver@v0.37.2 pkg/endpoints/handlers/patch.go (createAuthorizerAttributes)"

// backupUse is one step's use of the executor's backup store: step is the Backup step whose key is
// read or written, by the step that does it.
type backupUse struct {
	step, by string
	write    bool
}

// backupUses lists what the plan's steps read from and write to the executor's backup store (not
// those of Backup steps writing to a File): what their actions say (action.backup) and what their
// BackupReadable checks read.
func backupUses(p *plan.Plan, dry bool) []backupUse {
	toStore := func(id string) bool {
		st, ok := p.Step(id)
		return ok && st.Backup != nil && st.Backup.File == ""
	}
	var out []backupUse
	for i := range p.Steps {
		st := &p.Steps[i]
		if a, ok := actions[st.Kind()]; ok && a.backup != nil {
			if from, write := a.backup(st, dry); from != "" && (write || toStore(from)) {
				out = append(out, backupUse{step: from, by: st.ID, write: write})
			}
		}
		if dry {
			continue
		}
		for _, c := range append(append([]plan.Check{}, st.Preconditions...), st.Postconditions...) {
			if c.Type != plan.CheckBackupReadable {
				continue
			}
			a, err := plan.ArgsOf[plan.BackupReadableArgs](c)
			from := st.ID
			if err == nil && a.Step != "" {
				from = a.Step
			}
			if toStore(from) {
				out = append(out, backupUse{step: from, by: st.ID})
			}
		}
	}
	return out
}

// KubernetesEventsPermissions is what KubernetesEvents with these options needs of its client:
// events.k8s.io Events in the namespace (create; get and patch to continue a series, by names made
// when an event happens, so not known before) and a GET of the plan's journal ConfigMap (its UID).
// Add it to Options.Permissions when the run records its events so.
func KubernetesEventsPermissions(opts KubernetesEventsOptions) *rbac.Permissions {
	ns := opts.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	ps := &rbac.Permissions{}
	for _, v := range []string{"create", "get", "patch"} {
		ps.Add(rbac.Permission{Verb: v, Group: "events.k8s.io", Resource: "events", Namespace: ns}, byEvents)
	}
	ps.Add(rbac.Permission{Verb: "get", Resource: "configmaps", Namespace: ns, Name: (&ConfigMapJournal{}).Name(opts.PlanHash)}, byEvents)
	return ps
}
