package revision

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/tags"
)

// InstallOptions configure AddInstall.
type InstallOptions struct {
	// Target is the version of the new revision.
	Target mesh.Version
	// Name of the new revision; empty derives it from the version ("1-31-4").
	Name string
	// IDPrefix is put before every step ID (chained hops).
	IDPrefix string
}

// AddInstall adds the installation of opts.Target as a new istiod revision beside the running ones,
// with the values of the primary revision's release (its tags left out) and profile ambient unless
// set, verified ready and leaving every gateway with its owner. It returns the new revision's name.
// Revision names are never reused: a name already used by an istiod or a tag is an error wrapping
// plan.ErrInvalidOptions.
func AddInstall(b *steps.Builder, s *mesh.Snapshot, opts InstallOptions) (string, error) {
	rev := opts.Name
	if rev == "" {
		rev = opts.Target.RevisionName()
	}
	if _, used := s.Revision(rev); used {
		return "", fmt.Errorf("%w: revision name %q is already used by a running istiod; revision names are never reused. Pass another RevisionName, or finish that canary with tags.MoveTag", plan.ErrInvalidOptions, rev)
	}
	if _, used := s.Tag(rev); used {
		return "", fmt.Errorf("%w: revision name %q is already a tag name; pass another RevisionName", plan.ErrInvalidOptions, rev)
	}
	primary := Primary(s)
	ns := "istio-system"
	var current map[string]any
	if primary != nil {
		ns = primary.Namespace
		if h, ok := b.Release(s, "istiod", primary.HelmRelease); ok {
			current = h.Values
		}
	}
	base := map[string]any{}
	steps.Merge(base, current)
	delete(base, "revisionTags")
	if base["profile"] == nil {
		base["profile"] = "ambient"
	}
	releaseName := "istiod-" + rev
	values, moved := b.ChartValues(base, "istiod", releaseName, ns, opts.Target, map[string]any{"revision": rev})
	b.Track(mesh.HelmRelease{Name: releaseName, Namespace: ns, Chart: "istiod", ChartVersion: opts.Target.String(), AppVersion: opts.Target.String(),
		Revision: 1, Status: "deployed", Values: values})
	// The Deployment's readiness is all the executor can see of a new revision (the real istiod
	// serving injection and xDS is not checked here; the tags' health gates see it at work).
	checks := []plan.Check{steps.DeploymentReady(ns, "istiod-"+rev)}
	for _, g := range s.Gateways {
		if g.Revision == "" {
			continue // owned by no revision (GATEWAY_NOT_OWNED says so): there is no owner to keep
		}
		checks = append(checks, plan.NewCheck(g.Ref(), plan.GatewayOwnerArgs{Revision: g.Revision},
			fmt.Sprintf("%s is still owned by revision %s (installing a revision must not take gateways over)", g.Ref(), g.Revision)))
	}
	id := opts.IDPrefix + "istiod/" + rev + "/install"
	st := plan.Step{
		ID:             id,
		Description:    fmt.Sprintf("install istiod revision %s (%s) beside %s", rev, opts.Target, list(s)),
		Reason:         "a revision upgrade runs both control planes side by side; nothing moves to the new one until a tag does",
		Risk:           plan.RiskLow,
		HelmInstall:    &plan.HelmRelease{Release: releaseName, Namespace: ns, Chart: b.Chart("istiod", opts.Target), Values: values, Moved: moved},
		Postconditions: checks,
		Rollback: &plan.Step{ID: id + "/undo", Description: fmt.Sprintf("uninstall the new revision %s (nothing refers to it yet)", rev), Risk: plan.RiskLow,
			HelmUninstall: &plan.HelmUninstall{Release: releaseName, Namespace: ns}},
	}
	if note := steps.MovedNote(moved, opts.Target); note != "" {
		st.Notes = append(st.Notes, note)
	}
	if primary != nil && len(primary.TrustedZtunnelAccounts) > 0 {
		st.Notes = append(st.Notes, "the new revision trusts the same ztunnel accounts as the old one: "+strings.Join(primary.TrustedZtunnelAccounts, ","))
	}
	b.Add(st)
	return rev, nil
}

// InPlaceOptions configure AddInPlace.
type InPlaceOptions struct {
	// Target is the version every revision moves to.
	Target mesh.Version
	// IDPrefix is put before every step ID (chained hops).
	IDPrefix string
}

// AddInPlace adds the in-place upgrade of every istiod revision's release to opts.Target. In place
// keeps the revision names, so tags, namespaces and gateways need no move; sidecars keep their proxy
// until they restart.
func AddInPlace(b *steps.Builder, s *mesh.Snapshot, opts InPlaceOptions) {
	for _, r := range s.Revisions {
		h, ok := b.Release(s, "istiod", r.HelmRelease)
		if !ok {
			b.NoRelease(mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}, "istiod revision "+r.Name)
			continue
		}
		st := b.Upgrade(opts.IDPrefix+"istiod/"+r.Name+"/upgrade", fmt.Sprintf("upgrade istiod revision %s in place from %s to %s", r.Name, r.Version, opts.Target),
			"in place keeps the revision name, so tags, namespaces and gateways need no move; sidecars keep their proxy until restarted",
			h, opts.Target, nil, plan.RiskHigh, steps.DeploymentReady(r.Namespace, r.Deployment))
		st.Notes = append(st.Notes, "sidecar workloads keep their current proxy until they restart; one minor behind the control plane is supported",
			fmt.Sprintf("istiod %s redeploys the waypoints and gateways it manages (Gateway resources) with the %s proxy as it starts", r.Name, opts.Target))
		b.Add(st)
		health := plan.Step{ID: opts.IDPrefix + "istiod/" + r.Name + "/health", Description: fmt.Sprintf("health gate after istiod %s moved to %s in place", r.Name, opts.Target),
			Reason: "every proxy of the revision, sidecars, gateways, waypoints and ztunnel, reconnects to the new istiod; nothing else moves until the mesh is healthy",
			Risk:   plan.RiskNone, HealthGate: &plan.HealthGate{Probe: b.Probe(), Scope: "istiod " + r.Name, SettleSeconds: 60}}
		if f, ok := oldSidecars(s, r, opts.Target); ok {
			b.Finding(f)
			health.Notes = append(health.Notes, f.Message+"; "+f.Remedy)
		}
		b.Add(health)
	}
}

// oldSidecars is the reminder, after an in-place upgrade of revision r to target, of the sidecar
// workloads r injected that keep their old proxy until their pods are recreated (injection happens
// only at pod creation): they run one minor behind, which is supported, and the next upgrade would
// leave them two behind. Gateways and waypoints are left out: the plan upgrades or istiod
// redeploys them.
func oldSidecars(s *mesh.Snapshot, r mesh.Revision, target mesh.Version) (plan.Finding, bool) {
	var names, commands []string
	var related []mesh.ObjectRef
	pods := 0
	for _, w := range s.Workloads {
		n := w.SidecarRevisions[r.Name]
		if n == 0 || w.GatewayName != "" || !anyOlder(w.ProxyVersions, target) {
			continue
		}
		pods += n
		names = append(names, w.Ref().String())
		related = append(related, w.Ref())
		if restartable(w.Kind) {
			commands = append(commands, fmt.Sprintf("kubectl rollout restart %s/%s -n %s", strings.ToLower(w.Kind), w.Name, w.Namespace))
		}
	}
	if pods == 0 {
		return plan.Finding{}, false
	}
	remedy := "restart them once the health gate passes, so they pick up the " + target.String() + " proxy before the next upgrade"
	if len(commands) > 0 {
		remedy += ": " + plan.ListSome(commands, 5)
	}
	return plan.Finding{Code: plan.CodeSidecarsKeepOldProxy, Severity: plan.Info, Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment},
		Component: "istiod/" + r.Name, Related: related,
		Message: fmt.Sprintf("%d sidecar pod(s) injected by revision %s keep their old proxy after the in-place upgrade to %s until restarted: %s", pods, r.Name, target, plan.ListSome(names, 5)),
		Remedy:  remedy,
		Details: map[string]string{"revision": r.Name, "pods": fmt.Sprint(pods), "workloads": fmt.Sprint(len(names))}}, true
}

func anyOlder(vs []mesh.Version, target mesh.Version) bool {
	if len(vs) == 0 {
		return true // not read: assume the proxy the revision injected before
	}
	for _, v := range vs {
		if v.Less(target) {
			return true
		}
	}
	return false
}

func restartable(kind string) bool {
	return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet"
}

// DefaultOptions configure AddDefault.
type DefaultOptions struct {
	// Target is the version the base chart is at after the upgrade.
	Target mesh.Version
	// NewRevision becomes the default revision.
	NewRevision string
	// IDPrefix is put before every step ID (chained hops).
	IDPrefix string
}

// AddDefault adds the step that makes opts.NewRevision the default revision (the base chart's
// defaultRevision, rendered as the istio.io/rev label of istiod-default-validator), when the default
// revision is another one. Nothing is planned without a default revision or a base release.
func AddDefault(b *steps.Builder, s *mesh.Snapshot, opts DefaultOptions) {
	if s.DefaultRevision == "" || s.DefaultRevision == opts.NewRevision {
		return
	}
	h, ok := b.Release(s, "base", "")
	if !ok {
		return
	}
	b.Add(b.Upgrade(opts.IDPrefix+"base/default-revision", fmt.Sprintf("make %s the default revision (istiod-default-validator)", opts.NewRevision),
		fmt.Sprintf("the default revision was %s; config validation and, from 1.28, unlabelled gateways follow it", s.DefaultRevision),
		h, opts.Target, map[string]any{"defaultRevision": opts.NewRevision}, plan.RiskMedium,
		plan.NewCheck(mesh.ObjectRef{}, plan.DefaultRevisionArgs{Revision: opts.NewRevision}, "istiod-default-validator is labelled istio.io/rev="+opts.NewRevision)))
}

// RemovalOptions configure AddRemoval.
type RemovalOptions struct {
	// NewRevision is the revision that stays.
	NewRevision string
	// IDPrefix is put before every step ID (chained hops).
	IDPrefix string
	// Advisories name what an uninstall leaves behind; nil means advisories.Default().
	Advisories *advisories.Data
}

// AddRemoval adds, for every revision of s but opts.NewRevision: an approval, a backup of its Helm
// release, Deployment and injector that is read back, and the removal, preconditioned on nothing
// referring to it. after is the mesh as the earlier steps leave it; a revision still referred to
// there gets a blocked removal step that names what refers to it, and an info finding.
func AddRemoval(b *steps.Builder, s, after *mesh.Snapshot, opts RemovalOptions) {
	for _, r := range s.Revisions {
		if r.Name == opts.NewRevision {
			continue
		}
		refs := References(after, r.Name)
		id := opts.IDPrefix + "istiod/" + r.Name + "/"
		h, hasRelease := b.Release(s, "istiod", r.HelmRelease)
		b.Add(plan.Step{ID: id + "approve", Description: fmt.Sprintf("approve removing revision %s (%s)", r.Name, r.Version), Risk: plan.RiskNone,
			Approval: &plan.Approval{Message: fmt.Sprintf("every tag now points at %s; removing %s can be undone only by reinstalling from the backup", opts.NewRevision, r.Name)}})
		objs := []plan.BackupObject{
			{APIVersion: "apps/v1", Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}},
			{APIVersion: "admissionregistration.k8s.io/v1", Object: mesh.ObjectRef{Kind: "MutatingWebhookConfiguration", Name: InjectorName(r)}},
		}
		if hasRelease {
			objs = append([]plan.BackupObject{{HelmRelease: h.Name, Object: steps.HelmRef(h)}}, objs...)
		}
		left := leftBehind(opts.Advisories, r)
		what := "Helm release, Deployment, injector"
		for _, l := range left {
			objs = append(objs, l.object)
		}
		if len(left) > 0 {
			what += ", what its uninstall leaves behind"
		}
		b.Add(plan.Step{ID: id + "backup", Description: fmt.Sprintf("back up revision %s (%s) and read the backup back", r.Name, what),
			Risk: plan.RiskNone, Backup: &plan.Backup{Objects: objs},
			Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.BackupReadableArgs{Revision: r.Name}, "every backed-up object reads back equal")}})
		rm := plan.Step{ID: id + "remove", Description: fmt.Sprintf("remove the old control plane revision %s", r.Name),
			Reason: "an old revision left running keeps serving whatever still points at it, and hides mistakes", Risk: plan.RiskMedium,
			Preconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.NoReferencesArgs{Revision: r.Name},
				fmt.Sprintf("no tag, namespace, pod, gateway, waypoint, ztunnel or default revision refers to %s", r.Name))},
			Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.NoReferencesArgs{Revision: r.Name, Gone: true},
				fmt.Sprintf("revision %s is gone and nothing refers to it", r.Name))},
		}
		if hasRelease && len(refs) == 0 {
			if why := keepTags(b, after, r, h, id); why != "" {
				rm.Blocked = why
				b.Finding(plan.Finding{Code: plan.CodeTagOwnedByOldRelease, Severity: plan.Info, Object: steps.HelmRef(h), Component: "istiod/" + r.Name,
					Message: why, Remedy: "take the tag objects out of the release by hand (annotate them helm.sh/resource-policy=keep, then helm upgrade the release with revisionTags=null), then re-plan"})
			}
		}
		if hasRelease {
			b.RequireDeployed(h)
			rm.HelmUninstall = &plan.HelmUninstall{Release: h.Name, Namespace: h.Namespace, Chart: h.Chart, BackupStep: id + "backup", FromVersion: h.ChartVersion,
				Reinstall: b.Charts().Reinstall(h.Chart, h.ChartVersion)}
			if len(refs) == 0 && rm.Blocked == "" {
				gone := h
				gone.Status = steps.StatusUninstalled
				b.Track(gone)
			}
		} else {
			rm.DeleteObject = &plan.DeleteObject{APIVersion: "apps/v1", Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}, BackupStep: id + "backup"}
			rm.Notes = append(rm.Notes, "not installed with Helm: only the Deployment is deleted here; remove the rest with istioctl uninstall --revision "+r.Name)
		}
		if len(refs) > 0 {
			var what []string
			for _, ref := range refs {
				what = append(what, ref.String())
			}
			rm.Blocked = fmt.Sprintf("revision %s is still referred to after the planned moves: %s", r.Name, strings.Join(what, "; "))
			f := plan.Finding{Code: plan.CodeOldRevisionStillReferenced, Severity: plan.Info,
				Object: mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}, Component: "istiod/" + r.Name,
				Message: rm.Blocked,
				Remedy:  fmt.Sprintf("point each of them at a tag or at %s, then re-plan; the removal step stays blocked, and the plan not runnable, until then", opts.NewRevision)}
			if r.Name == "default" {
				// An unrevisioned istiod is what everything refers to by default: upgrading it in
				// place keeps every reference working (ambient.DefaultStrategy).
				f.Remedy += "; or upgrade the unrevisioned control plane in place (UpgradeOptions.Strategy: in-place)"
				f.RemedyOptions = []plan.RemedyOption{{Option: "UpgradeOptions.Strategy", Value: "in-place"}}
			}
			b.Finding(f)
		}
		b.Add(rm)
		if rm.Blocked == "" {
			addLeftBehind(b, left, id)
		}
	}
}

// leftover is an object an uninstall of a revision leaves behind, by the advisory that says so.
type leftover struct {
	advisory string
	object   plan.BackupObject
}

// leftBehind lists what removing revision r leaves behind, by the advisories that affect its
// version: istio#61155, the per-revision leader election Leases istiod creates at run time and
// neither helm uninstall nor istioctl uninstall --revision deletes (advisories.yaml names the
// sources: pilot/pkg/leaderelection/leaderelection.go, operator/pkg/uninstall/prune.go).
func leftBehind(adv *advisories.Data, r mesh.Revision) []leftover {
	if adv == nil {
		adv = advisories.Default()
	}
	var out []leftover
	for _, l := range adv.LeftBehind(advisories.RevisionUninstall, advisories.Istiod, r.Version) {
		ns, name := l.Resolve(r.Name, r.Namespace)
		out = append(out, leftover{advisory: l.AdvisoryID, object: plan.BackupObject{APIVersion: l.APIVersion, Object: mesh.ObjectRef{Kind: l.Kind, Namespace: ns, Name: name}}})
	}
	return out
}

// addLeftBehind deletes, after the removal, each object it leaves behind, from the revision's
// backup (a missing object is backed up as missing and its deletion is a no-op), each with a
// rollback that restores it.
func addLeftBehind(b *steps.Builder, left []leftover, id string) {
	for _, l := range left {
		ref := l.object.Object
		sid := id + "cleanup/" + strings.ToLower(ref.Kind) + "/" + ref.Name
		b.Add(plan.Step{ID: sid, Description: fmt.Sprintf("delete %s, which removing the revision leaves behind (advisory %s)", ref, l.advisory),
			Reason: "nothing deletes it once its revision is gone; only that revision's istiod used it",
			Risk:   plan.RiskLow, DeleteObject: &plan.DeleteObject{APIVersion: l.object.APIVersion, Object: ref, BackupStep: id + "backup"},
			Rollback: &plan.Step{ID: sid + "/undo", Description: fmt.Sprintf("restore %s from the backup", ref), Risk: plan.RiskLow,
				Restore: &plan.Restore{BackupStep: id + "backup", Objects: []plan.BackupObject{l.object}}}})
	}
}

// keepResourcePolicy is the annotation that makes Helm leave an object behind: an upgrade does not
// delete a live object carrying it that the new manifest drops (helm.sh/helm/v3@v3.22.0:
// pkg/kube/client.go, Update reads the live object's annotations), while uninstall honours it only
// in the stored manifest (pkg/action/uninstall.go deleteRelease and pkg/action/resource_policy.go
// filterManifestsToKeep read the release record, never the live object). Uninstall deletes what the
// record lists by name whatever the live object's ownership annotations say, so stripping them
// does not protect a tag either.
const keepResourcePolicy = "helm.sh/resource-policy"

// keepTags adds, before the removal of revision r's release h, the steps that take the tag objects
// h owns out of it, so that helm uninstall does not delete tags that were moved to another
// revision. The istiod chart renders the tags of its revisionTags value (istio/istio@1.30.3 and
// @release-1.31: manifests/charts/istio-control/istio-discovery/templates/revision-tags-mwc.yaml
// and revision-tags-svc.yaml range over .Values.revisionTags), so h owns them and its uninstall
// deletes them, wherever a move has pointed them since. The safe sequence:
//
//  1. re-apply each such object as it is now, with helm.sh/resource-policy: keep added;
//  2. helm upgrade h at its chart version with revisionTags null: the objects leave its manifest,
//     and Helm leaves them in place because the live objects say keep;
//  3. helm uninstall h (the removal step) no longer lists them.
//
// It returns why the removal must be blocked instead, or "".
func keepTags(b *steps.Builder, after *mesh.Snapshot, r mesh.Revision, h mesh.HelmRelease, id string) string {
	var owned []mesh.Tag
	for _, t := range after.Tags {
		if t.OwnedBy(h.Namespace, h.Name) {
			owned = append(owned, t)
		}
	}
	if len(owned) == 0 {
		return ""
	}
	var names []string
	for _, t := range owned {
		names = append(names, t.Name)
	}
	version, err := mesh.ParseVersion(h.ChartVersion)
	if err != nil {
		version = r.Version
	}
	if version.IsZero() {
		return fmt.Sprintf("Helm release %s/%s owns tag(s) %s, and its chart version %q is unknown, so they cannot be taken out of it before the uninstall deletes them",
			h.Namespace, h.Name, strings.Join(names, ", "), h.ChartVersion)
	}
	set := map[string]any{"revisionTags": nil}
	if tagsAfter, _ := b.UpgradeValues(h, set)["revisionTags"].([]any); len(tagsAfter) > 0 {
		return fmt.Sprintf("Helm release %s/%s owns tag(s) %s, and the caller's values set revisionTags %v for it, which would point them back at %s",
			h.Namespace, h.Name, strings.Join(names, ", "), tagsAfter, r.Name)
	}
	for _, t := range owned { // decide before adding any step
		if _, ok := after.Revision(t.Revision); !ok {
			return fmt.Sprintf("tag %s, owned by Helm release %s/%s, points at revision %q, which has no istiod; move it first", t.Name, h.Namespace, h.Name, t.Revision)
		}
	}
	var checks []plan.Check
	for _, t := range owned {
		rev, _ := after.Revision(t.Revision)
		check := plan.NewCheck(t.WebhookRef(), plan.TagPointsToArgs{Tag: t.Name, Revision: rev.Name},
			fmt.Sprintf("tag %s still points at revision %s", t.Name, rev.Name))
		checks = append(checks, check)
		for _, obj := range tags.Render(t.Name, rev.Name, rev.Namespace, rev.Version) {
			kind, _ := obj["kind"].(string)
			meta, _ := obj["metadata"].(map[string]any)
			var suffix string
			switch {
			case kind == "MutatingWebhookConfiguration" && ownedBy(t.WebhookRelease, h):
				meta["name"], suffix = t.Webhook, "webhook"
			case kind == "Service" && ownedBy(t.ServiceRelease, h):
				meta["name"], meta["namespace"], suffix = t.Service, t.ServiceNamespace, "service"
			default:
				continue
			}
			meta["annotations"] = map[string]any{keepResourcePolicy: "keep"}
			b.Add(plan.Step{ID: fmt.Sprintf("%stags/%s/keep-%s", id, t.Name, suffix),
				Description: fmt.Sprintf("mark the %s of tag %s helm.sh/resource-policy: keep, as it is (pointing at %s)", kind, t.Name, rev.Name),
				Reason:      fmt.Sprintf("Helm release %s owns it; the next step drops it from the release, and Helm deletes a dropped object unless the live one says keep", h.Name),
				Risk:        plan.RiskLow, ApplyObject: &plan.ApplyObject{Object: obj}, Postconditions: []plan.Check{check}})
		}
	}
	st := b.Upgrade(id+"release-tags", fmt.Sprintf("take tag(s) %s out of Helm release %s (revisionTags null, chart %s unchanged)", strings.Join(names, ", "), h.Name, version),
		fmt.Sprintf("helm uninstall %s would delete every tag object its manifest lists, wherever the tag points now", h.Name),
		h, version, set, plan.RiskLow, checks...)
	st.Rollback = nil
	st.Notes = append(st.Notes,
		fmt.Sprintf("no automatic rollback: rolling %s back renders its tags again, pointing at %s, which undoes the tag moves", h.Name, r.Name),
		"the tag objects keep Helm's annotations of the old release and helm.sh/resource-policy: keep; a release that later renders the same tags must adopt them first")
	b.Add(st)
	return ""
}

func ownedBy(r *mesh.ReleaseRef, h mesh.HelmRelease) bool {
	return r != nil && r.Namespace == h.Namespace && r.Name == h.Name
}

// PinnedNamespaces reports the namespaces labelled with an old revision's name directly: a plan does
// not relabel them (the pin is the owner's decision), so they keep the old revision in use.
func PinnedNamespaces(s *mesh.Snapshot, newRev string) []plan.Finding {
	var out []plan.Finding
	for _, n := range s.Namespaces {
		rev := n.Labels[mesh.LabelRev]
		if _, isRev := s.Revision(rev); !isRev || rev == newRev {
			continue
		}
		out = append(out, plan.Finding{Code: plan.CodeOldRevisionStillReferenced, Severity: plan.Info,
			Object:  mesh.ObjectRef{Kind: "Namespace", Name: n.Name},
			Message: fmt.Sprintf("namespace %s is pinned to revision %s by name, not through a tag; the plan leaves it there", n.Name, rev),
			Remedy:  fmt.Sprintf("kubectl label namespace %s istio.io/rev=%s --overwrite and restart its workloads, or point it at a tag", n.Name, newRev)})
	}
	return out
}

// InjectorName returns the name of a revision's own sidecar-injector MutatingWebhookConfiguration as
// the istiod chart renders it: istio-sidecar-injector[-<rev>][-<namespace>] (the namespace suffix when
// istiod does not run in istio-system).
func InjectorName(r mesh.Revision) string {
	name := "istio-sidecar-injector"
	if r.Name != "default" {
		name += "-" + r.Name
	}
	if r.Namespace != "istio-system" {
		name += "-" + r.Namespace
	}
	return name
}

// Primary is the revision the default tag, or else the default revision, points at, or else the
// newest; nil when there is no revision.
func Primary(s *mesh.Snapshot) *mesh.Revision {
	for _, name := range []string{s.ResolveRevision("default"), s.DefaultRevision} {
		for i := range s.Revisions {
			if name != "" && s.Revisions[i].Name == name {
				return &s.Revisions[i]
			}
		}
	}
	if len(s.Revisions) == 0 {
		return nil
	}
	best := &s.Revisions[0]
	for i := range s.Revisions {
		if best.Version.Less(s.Revisions[i].Version) {
			best = &s.Revisions[i]
		}
	}
	return best
}

func list(s *mesh.Snapshot) string {
	var out []string
	for _, r := range s.Revisions {
		out = append(out, fmt.Sprintf("%s (%s)", r.Name, r.Version))
	}
	if len(out) == 0 {
		return "no other revision"
	}
	return strings.Join(out, ", ")
}
