package plan

import (
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// PermissionOptions say which run of a plan the permissions are for. The zero value is a real
// (not dry) run of the plan's steps, without their rollbacks.
type PermissionOptions struct {
	// DryRun derives what Options.DryRun of the executor needs: its reads, and its writes sent with
	// dryRun=All, which the API server authorizes like real ones; no Helm release records are written
	// and no check runs.
	DryRun bool
	// Rollbacks adds what the steps' Rollback steps need (Executor.Rollback, RollbackTo).
	Rollbacks bool
}

// RequiredPermissions derives, from the plan's steps alone, every permission the executor's
// Kubernetes client needs to carry them out: each step's action (what its helm install or upgrade
// stores and applies, what a drain lists and evicts, ...) and each check of its preconditions,
// verification, waits and verifications, each named with the steps that need it. It does not cover
// what the executor needs for itself (its lock Lease, journal and backup store: see
// execute.Executor.RequiredPermissions) nor what Options.Snapshot reads (observe.RequiredPermissions).
// Kinds of objects named by ApplyObject, PatchLabels, Annotate, DeleteObject and WaitFor checks are
// turned into resources the way the API server names them by default (lower case, plural).
func RequiredPermissions(p *Plan, opts PermissionOptions) *Permissions {
	d := &derivation{ps: &Permissions{}, dry: opts.DryRun, charts: releaseCharts(p)}
	if p == nil {
		return d.ps
	}
	for i := range p.Steps {
		st := &p.Steps[i]
		d.step(st)
		if opts.Rollbacks && st.Rollback != nil {
			d.step(st.Rollback)
		}
	}
	return d.ps
}

// derivation adds the needs of a plan's steps.
type derivation struct {
	ps  *Permissions
	dry bool
	// charts names the chart of each release ("namespace/release") the plan installs, upgrades or
	// uninstalls, so that a rollback or an uninstall knows what objects its release holds.
	charts map[string]string
}

func releaseCharts(p *Plan) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	note := func(s *Step) {
		switch {
		case s.HelmInstall != nil:
			out[s.HelmInstall.Namespace+"/"+s.HelmInstall.Release] = s.HelmInstall.Chart.Name
		case s.HelmUpgrade != nil:
			out[s.HelmUpgrade.Namespace+"/"+s.HelmUpgrade.Release] = s.HelmUpgrade.Chart.Name
		case s.HelmUninstall != nil && s.HelmUninstall.Chart != "":
			out[s.HelmUninstall.Namespace+"/"+s.HelmUninstall.Release] = s.HelmUninstall.Chart
		}
	}
	for i := range p.Steps {
		note(&p.Steps[i])
		if p.Steps[i].Rollback != nil {
			note(p.Steps[i].Rollback)
		}
	}
	return out
}

// need adds permissions for one step.
type need struct {
	d  *derivation
	by string
}

func (n need) add(verb, group, resource, namespace, name string, sources ...string) {
	sub := ""
	if r, s, ok := strings.Cut(resource, "/"); ok {
		resource, sub = r, s
	}
	n.d.ps.Add(Permission{Verb: verb, Group: group, Resource: resource, Subresource: sub, Namespace: namespace, Name: name}, n.by, sources...)
}

// verbs adds several verbs on one resource.
func (n need) verbs(verbs []string, group, resource, namespace, name string, sources ...string) {
	for _, v := range verbs {
		n.add(v, group, resource, namespace, name, sources...)
	}
}

func (d *derivation) step(st *Step) {
	n := need{d: d, by: st.ID}
	if f, ok := kindPermissions[st.Kind()]; ok {
		f(st, d.dry, n)
	}
	if d.dry { // a dry run describes checks, it does not run them
		return
	}
	for _, c := range stepChecks(st) {
		if f, ok := checkPermissions[c.Type]; ok {
			f(c, n)
		}
	}
}

// Upstream facts the derivation rests on, cited beside the rules.
const (
	// srcApplyCreates: a server-side apply of an object that does not exist yet is also authorized
	// as a create of that name.
	srcApplyCreates = "k8s.io/apiserver@v0.37.2 pkg/endpoints/handlers/patch.go (createAuthorizerAttributes)"
	// srcEviction: a drain evicts through the pods/eviction subresource.
	srcEviction = "k8s.io/api@v0.37.2 policy/v1 Eviction (POST pods/<name>/eviction)"
)

// kindPermissions is what each action kind needs, from its payload; a test fails when a kind has
// no entry. The comments name the executor's file that does the requests.
var kindPermissions = map[Kind]func(st *Step, dry bool, n need){
	KindHelmInstall: func(st *Step, dry bool, n need) {
		n.helm(helmInstallOp, st.HelmInstall.Namespace, st.HelmInstall.Release, st.HelmInstall.Chart.Name, st.HelmInstall.Values, st.HelmInstall.ReuseValues, dry)
	},
	KindHelmUpgrade: func(st *Step, dry bool, n need) {
		n.helm(helmUpgradeOp, st.HelmUpgrade.Namespace, st.HelmUpgrade.Release, st.HelmUpgrade.Chart.Name, st.HelmUpgrade.Values, st.HelmUpgrade.ReuseValues, dry)
	},
	KindHelmUninstall: func(st *Step, dry bool, n need) {
		u := st.HelmUninstall
		n.helm(helmUninstallOp, u.Namespace, u.Release, n.chartOf(u.Namespace, u.Release), nil, true, dry)
	},
	KindHelmRollback: func(st *Step, dry bool, n need) {
		r := st.HelmRollback
		n.helm(helmRollbackOp, r.Namespace, r.Release, n.chartOf(r.Namespace, r.Release), nil, true, dry)
		// Helm reads the revision to return to by its record's name.
		n.add("get", "", "secrets", r.Namespace, helmRecordName(r.Release, r.Revision), srcHelmStorage)
	},
	// action_apply_object.go: a GET to see whether the object already holds the plan's fields, then a
	// server-side apply (patch; create when it does not exist).
	KindApplyObject: func(st *Step, dry bool, n need) { n.apply(st.ApplyObject.Object, dry) },
	KindMoveTag: func(st *Step, dry bool, n need) {
		for _, o := range st.MoveTag.Objects {
			n.apply(o, dry)
		}
	},
	// action_delete_object.go: a DELETE; a rollback naming no backup step reads the object first.
	KindDeleteObject: func(st *Step, dry bool, n need) {
		d := st.DeleteObject
		g, res := Resource(d.APIVersion, d.Object.Kind)
		n.add("delete", g, res, d.Object.Namespace, d.Object.Name)
		if !dry && d.BackupStep == "" {
			n.add("get", g, res, d.Object.Namespace, d.Object.Name)
		}
	},
	// action_patch_labels.go: one object is read and merge-patched; several are read with one LIST
	// of their metadata, then patched one by one.
	KindPatchLabels: func(st *Step, _ bool, n need) { n.metadata(st.PatchLabels.APIVersion, st.PatchLabels.Targets()) },
	KindAnnotate:    func(st *Step, _ bool, n need) { n.metadata(st.Annotate.APIVersion, st.Annotate.Targets()) },
	// action_cordon.go: GET the node, merge-patch spec.unschedulable.
	KindCordon:   func(st *Step, _ bool, n need) { n.verbs([]string{"get", "patch"}, "", "nodes", "", st.Cordon.Node) },
	KindUncordon: func(st *Step, _ bool, n need) { n.verbs([]string{"get", "patch"}, "", "nodes", "", st.Uncordon.Node) },
	// action_drain.go: one LIST of the node's pods in every namespace (field selector spec.nodeName),
	// an eviction per pod, one LIST of the budgets when evictions are refused, one LIST of the
	// namespaces for ambient-only drains, and a GET of the node once the drain timed out (is it gone?).
	KindDrain: func(st *Step, dry bool, n need) {
		d := st.Drain
		n.add("list", "", "pods", "", "")
		n.add("create", "", "pods/eviction", "", "", srcEviction)
		n.add("list", "policy", "poddisruptionbudgets", "", "")
		if d.AmbientOnly {
			n.add("list", "", "namespaces", "", "")
		}
		if !dry {
			n.add("get", "", "nodes", "", d.Node)
		}
	},
	// action_delete_pod.go: one LIST by labels in the namespace; a DELETE per pod with a UID
	// precondition, and a GET when that conflicts (is it a replacement?).
	KindDeletePod: func(st *Step, dry bool, n need) {
		ns := st.DeletePod.Namespace
		n.add("list", "", "pods", ns, "")
		if !dry {
			n.add("delete", "", "pods", ns, "")
			n.add("get", "", "pods", ns, "")
		}
	},
	// action_restart.go: GET and merge-patch each workload's pod template, then GET it until it rolled
	// out. A dry run only describes the restart.
	KindRestart: func(st *Step, dry bool, n need) {
		if !dry {
			n.restart(st.Restart.Workloads)
		}
	},
	// action_reinject.go: the namespace's labels (GET, merge-patch), then the restart.
	KindReinject: func(st *Step, dry bool, n need) {
		n.verbs([]string{"get", "patch"}, "", "namespaces", "", st.Reinject.Namespace)
		if !dry {
			n.restart(st.Reinject.Workloads)
		}
	},
	// The checks of WaitFor and Verify steps are added with every step's checks.
	KindWaitFor: func(*Step, bool, need) {},
	KindVerify:  func(*Step, bool, need) {},
	// action_backup.go: a GET of each object, a Helm read of each release, and for a namespace one LIST
	// of the CRDs, then one LIST per Istio and Gateway API kind the cluster serves. Writing the backup
	// is the executor's backup store's business.
	KindBackup: func(st *Step, _ bool, n need) {
		b := st.Backup
		for _, o := range b.Objects {
			if o.HelmRelease != "" {
				n.add("list", "", "secrets", o.Object.Namespace, "", srcHelmStorage)
				continue
			}
			g, res := Resource(o.APIVersion, o.Object.Kind)
			n.add("get", g, res, o.Object.Namespace, o.Object.Name)
		}
		if b.Namespace != "" {
			n.add("list", "apiextensions.k8s.io", "customresourcedefinitions", "", "")
			for _, g := range meshGroups {
				n.add("list", g, "*", b.Namespace, "", srcMeshGroups)
			}
		}
	},
	// action_restore.go: the objects are server-side applied again, as ApplyObject does.
	KindRestore: func(st *Step, dry bool, n need) {
		for _, o := range st.Restore.Objects {
			n.apply(map[string]any{"apiVersion": o.APIVersion, "kind": o.Object.Kind,
				"metadata": map[string]any{"namespace": o.Object.Namespace, "name": o.Object.Name}}, dry)
		}
	},
	// Approvals ask the Approve hook, health gates the caller's probe: nothing of the cluster.
	KindApproval:   func(*Step, bool, need) {},
	KindHealthGate: func(*Step, bool, need) {},
}

// meshGroups are the API groups of the namespaced Istio and Gateway API kinds a namespace backup
// lists (execute: backup_namespace.go, meshGroup).
var meshGroups = []string{"extensions.istio.io", "gateway.networking.k8s.io", "networking.istio.io", "security.istio.io", "telemetry.istio.io"}

const srcMeshGroups = "istio/istio@1.30.3 manifests/charts/base/files/crd-all.gen.yaml (groups extensions, networking, security, telemetry.istio.io); sigs.k8s.io/gateway-api@v1.6.3 config/crd/standard"

func (n need) chartOf(ns, release string) string { return n.d.charts[ns+"/"+release] }

// apply is a server-side apply of an object: GET (real runs look first), patch, create.
func (n need) apply(o map[string]any, dry bool) {
	api, _ := o["apiVersion"].(string)
	ref := objectRef(o)
	g, res := Resource(api, ref.Kind)
	if !dry {
		n.add("get", g, res, ref.Namespace, ref.Name)
	}
	n.add("patch", g, res, ref.Namespace, ref.Name)
	n.add("create", g, res, ref.Namespace, ref.Name, srcApplyCreates)
}

// metadata is a label or annotation patch of one object (GET, patch) or several (LIST, patch each).
func (n need) metadata(apiVersion string, objs []mesh.ObjectRef) {
	if len(objs) == 0 {
		return
	}
	g, res := Resource(apiVersion, objs[0].Kind)
	if len(objs) > 1 {
		n.add("list", g, res, objs[0].Namespace, "")
	}
	for _, o := range objs {
		if len(objs) == 1 {
			n.add("get", g, res, o.Namespace, o.Name)
		}
		n.add("patch", g, res, o.Namespace, o.Name)
	}
}

func (n need) restart(ws []mesh.ObjectRef) {
	for _, w := range ws {
		n.verbs([]string{"get", "patch"}, "apps", kindResource(w.Kind), w.Namespace, w.Name)
	}
}

// Resource returns the API group of apiVersion and the resource of kind: its lower-case English
// plural ("y" after a consonant → "ies", "s", "x", "ch", "sh" → "+es", else "+s"), the plural every kind of
// Kubernetes, Istio and the Gateway API is served under but Endpoints. (The API server's own guess,
// k8s.io/apimachinery@v0.37.2 pkg/api/meta/restmapper.go UnsafeGuessKindToResource, would say
// "gatewaies"; CRDs name their plural, and these are the plurals they name.)
func Resource(apiVersion, kind string) (group, resource string) {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		group = g
	}
	return group, kindResource(kind)
}

func kindResource(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case k == "":
		return ""
	case k == "endpoints":
		return k
	case strings.HasSuffix(k, "s") || strings.HasSuffix(k, "x") || strings.HasSuffix(k, "ch") || strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return strings.TrimSuffix(k, "y") + "ies"
	}
	return k + "s"
}
