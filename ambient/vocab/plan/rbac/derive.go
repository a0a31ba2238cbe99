package rbac

import (
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Options say which run of a plan the permissions are for. The zero value is a real
// (not dry) run of the plan's steps, without their rollbacks.
type Options struct {
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
func RequiredPermissions(p *plan.Plan, opts Options) *Permissions {
	d := &derivation{ps: &Permissions{}, dry: opts.DryRun, charts: releaseCharts(p), known: releasesKnown(p, opts.Rollbacks)}
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
	// known is what the plan's steps say of each release: the values it is given last, the highest
	// Helm revision it reaches.
	known map[string]releaseKnown
}

// releaseKnown is what a plan's steps say of one release.
type releaseKnown struct {
	// values are those of the last install or upgrade that gives them all (no reuse of the release's
	// own), nil when none does.
	values map[string]any
	// revision is the highest Helm revision the plan's steps reach (an install makes 1, an upgrade
	// from revision n makes n+1); 0 when a step's revision is not known (a rollback's, an upgrade
	// that does not say what it upgrades from).
	revision int
}

// releasesKnown reads what the plan's steps say of each release, in order. A plan whose rollbacks
// are derived too knows no release's revisions: a rollback makes a revision past any the steps say.
func releasesKnown(p *plan.Plan, rollbacks bool) map[string]releaseKnown {
	out := map[string]releaseKnown{}
	if p == nil {
		return out
	}
	unknown := map[string]bool{}
	for i := range p.Steps {
		st := &p.Steps[i]
		h, rev := st.HelmInstall, 1
		if st.HelmUpgrade != nil {
			h, rev = st.HelmUpgrade, st.HelmUpgrade.PreviousRevision+1
			if st.HelmUpgrade.PreviousRevision == 0 {
				rev = 0
			}
		}
		if h == nil {
			continue
		}
		key := h.Namespace + "/" + h.Release
		k := out[key]
		if !h.ReuseValues {
			k.values = h.Values
		}
		if rev == 0 || rollbacks {
			unknown[key] = true
		}
		k.revision = max(k.revision, rev)
		out[key] = k
	}
	for key := range unknown {
		k := out[key]
		k.revision = 0
		out[key] = k
	}
	return out
}

// releaseCharts names the chart of each Helm release the plan's steps and their rollbacks touch, as
// the steps say it (their kind's release part); the last step to say it wins.
func releaseCharts(p *plan.Plan) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	note := func(s *plan.Step) {
		spec, ok := kindNeeds[s.Kind()]
		if !ok {
			return
		}
		if release, chart := spec.release(s); release != "" && chart != "" {
			out[release] = chart
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

func (d *derivation) step(st *plan.Step) {
	n := need{d: d, by: st.ID}
	if spec, ok := kindNeeds[st.Kind()]; ok {
		spec.needs(st, d.dry, n)
	}
	if d.dry { // a dry run describes checks, it does not run them
		return
	}
	for _, c := range st.Checks() {
		if f, ok := checkPermissions[c.Type]; ok {
			f(c, n)
		}
	}
}

// Upstream facts the derivation rests on, cited beside the rules (those of one kind's rules sit in
// its file, kind_<action>.go).
const (
	// srcApplyCreates: a server-side apply of an object that does not exist yet is also authorized
	// as a create of that name.
	srcApplyCreates = "k8s.io/apiserver@v0.37.2 pkg/endpoints/handlers/patch.go (createAuthorizerAttributes)"
)

// meshGroups are the API groups of the namespaced Istio and Gateway API kinds a namespace backup
// lists (execute: backup_namespace.go, meshGroup).
var meshGroups = []string{"extensions.istio.io", "gateway.networking.k8s.io", "networking.istio.io", "security.istio.io", "telemetry.istio.io"}

const srcMeshGroups = "istio/istio@1.30.3 manifests/charts/base/files/crd-all.gen.yaml (groups extensions, networking, security, telemetry.istio.io); sigs.k8s.io/gateway-api@v1.6.3 config/crd/standard"

func (n need) chartOf(ns, release string) string { return n.d.charts[ns+"/"+release] }

// valuesOf returns the values the plan's steps last give the release, and whether they give all of
// them (else the release's own are reused, and unknown).
func (n need) valuesOf(ns, release string) (map[string]any, bool) {
	k, ok := n.d.known[ns+"/"+release]
	return k.values, ok && k.values != nil
}

// apply is a server-side apply of an object: GET (real runs look first), patch, create.
func (n need) apply(o map[string]any, dry bool) {
	api, _ := o["apiVersion"].(string)
	ref := plan.ApplyObject{Object: o}.Ref()
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
