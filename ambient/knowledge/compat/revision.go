package compat

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// revisionOptions select the rules that depend on an intended upgrade.
type revisionOptions struct {
	// Target is the version the control plane is to move to; zero checks the current state only.
	Target mesh.Version
	// InPlace is true for an in-place upgrade (one minor at a time) and false for a revision (canary)
	// upgrade (at most two minors).
	InPlace bool
}

// revisionRules applies the control-plane rules to the snapshot and returns findings in no particular order.
func revisionRules(s *mesh.Snapshot, opts revisionOptions) []plan.Finding {
	var out []plan.Finding
	add := func(f plan.Finding) { out = append(out, f) }
	if len(s.Revisions) == 0 {
		add(plan.Finding{
			Code: plan.CodeIstiodMissing, Severity: plan.Blocking,
			Object:  mesh.ObjectRef{Kind: "Deployment", Namespace: "istio-system", Name: "istiod"},
			Message: "no istiod Deployment was found (looked for pods labelled app=istiod or a discovery container running a pilot image)",
			Remedy:  "install istiod first, or observe the namespace where it runs; nothing can be upgraded without a control plane",
		})
	}
	minors := map[int]bool{}
	for _, r := range s.Revisions {
		ref := mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}
		comp := "istiod/" + r.Name
		if r.Version.IsZero() {
			add(plan.Finding{Code: plan.CodeComponentVersionUnknown, Severity: plan.Waivable, Object: ref, Component: comp,
				Message: fmt.Sprintf("the version of revision %q cannot be read from image %q", r.Name, r.Image),
				Remedy:  "use a released Istio image tag (e.g. 1.30.3 or 1.30.3-distroless), or waive if you know the version"})
		} else {
			minors[r.Version.MinorIndex()] = true
		}
		if !r.Ready() {
			add(plan.Finding{Code: plan.CodeIstiodNotReady, Severity: plan.Blocking, Object: ref, Component: comp,
				Message: fmt.Sprintf("revision %q has %d of %d replicas ready", r.Name, r.ReadyReplicas, r.Replicas),
				Remedy:  fmt.Sprintf("fix istiod first: kubectl -n %s describe deployment %s", r.Namespace, r.Deployment)})
		}
		if !opts.Target.IsZero() && !r.Version.IsZero() {
			out = append(out, checkDistance(r, opts, ref, comp)...)
		}
	}
	if len(minors) > 1 {
		vs := s.ControlPlaneVersions()
		add(plan.Finding{Code: plan.CodeControlPlaneVersionsMixed, Severity: plan.Info,
			Object:  mesh.ObjectRef{Kind: "Namespace", Name: s.Revisions[0].Namespace},
			Message: fmt.Sprintf("istiod revisions run %s to %s; a canary upgrade is in progress or was left unfinished", vs[0], vs[len(vs)-1]),
			Remedy:  "finish moving tags and remove the old revision once nothing refers to it"})
	}
	for _, t := range s.Tags {
		out = append(out, checkTag(s, t)...)
	}
	if s.DefaultRevision != "" {
		if _, ok := s.Revision(s.DefaultRevision); !ok {
			add(defaultValidatorMissing(s))
		}
	}
	for _, n := range s.Namespaces {
		ref := mesh.ObjectRef{Kind: "Namespace", Name: n.Name}
		if rev := n.Labels[mesh.LabelRev]; rev != "" && s.ResolveRevision(rev) == "" {
			add(plan.Finding{Code: plan.CodeNamespaceRevisionMissing, Severity: plan.Waivable, Object: ref,
				Message: fmt.Sprintf("namespace %q is labelled istio.io/rev=%s, which is neither a revision nor a tag; new pods there get no sidecar", n.Name, rev),
				Remedy:  fmt.Sprintf("kubectl label namespace %s istio.io/rev=<revision or tag> --overwrite, or create tag %q", n.Name, rev)})
		}
		if n.Ambient() && (n.Labels[mesh.LabelRev] != "" || n.Labels[mesh.LabelInjection] == "enabled") {
			add(plan.Finding{Code: plan.CodeNamespaceSidecarAndAmbient, Severity: plan.Waivable, Object: ref,
				Message: fmt.Sprintf("namespace %q is labelled for ambient and for sidecar injection; new pods get sidecars and are then left out of ambient", n.Name),
				Remedy:  fmt.Sprintf("remove the injection label: kubectl label namespace %s istio.io/rev- istio-injection-", n.Name)})
		}
	}
	out = append(out, checkSidecars(s, opts)...)
	out = append(out, checkGateways(s, opts)...)
	return out
}

// checkTag reports a tag whose objects name a revision that has no istiod, and a tag whose webhook
// configuration and Service name different revisions.
//
// From 1.28 istiod counts a tag as its own when either object names it (istio/istio@1.30.3 and
// @release-1.31: pkg/revisions/tag_watcher.go, GetMyTags reads the webhook configurations and the
// Services labelled istio.io/tag). A split tag is therefore claimed by both revisions: both deploy
// the gateways and waypoints that follow it, while injection goes where the webhook points and xDS
// clients of istiod-revision-tag-<tag> where the Service points. The docs' webhook-only command
// (helm template -s templates/revision-tags-mwc.yaml) leaves exactly that behind.
func checkTag(s *mesh.Snapshot, t mesh.Tag) []plan.Finding {
	var out []plan.Finding
	type object struct {
		ref mesh.ObjectRef
		rev string
	}
	var objs []object
	if rev, ok := t.WebhookPointsAt(); ok {
		objs = append(objs, object{t.WebhookRef(), rev})
	}
	if rev, ok := t.ServicePointsAt(); ok && (len(objs) == 0 || rev != objs[0].rev) {
		objs = append(objs, object{t.ServiceRef(), rev})
	}
	if len(objs) == 0 {
		objs = append(objs, object{t.Ref(), t.Revision})
	}
	for _, o := range objs {
		if _, ok := s.Revision(o.rev); !ok {
			radius, _ := s.TagRadius(t.Name)
			followers := radius.Followers()
			reach := "nothing follows it yet"
			if len(followers) > 0 {
				var names []string
				for _, f := range followers {
					names = append(names, f.String())
				}
				reach = "what follows it breaks: " + strings.Join(names, ", ")
			}
			out = append(out, plan.Finding{Code: plan.CodeTagRevisionMissing, Severity: plan.Blocking,
				Object:        o.ref,
				Related:       followers,
				Message:       fmt.Sprintf("tag %q points at revision %q, which has no istiod; %s", t.Name, o.rev, reach),
				Remedy:        fmt.Sprintf("move the tag to a running revision (tags.MoveTag: %s) or reinstall revision %q", t.Name, o.rev),
				RemedyOptions: []plan.RemedyOption{{Option: "tags.MoveTag", Value: t.Name}},
				Details:       map[string]string{"tag": t.Name, "revision": o.rev}})
		}
	}
	if t.Split() {
		w, _ := t.WebhookPointsAt()
		svc, _ := t.ServicePointsAt()
		out = append(out, plan.Finding{Code: plan.CodeTagWebhookAndServiceDisagree, Severity: plan.Blocking, Object: t.WebhookRef(),
			Related: []mesh.ObjectRef{t.ServiceRef()},
			Message: fmt.Sprintf("tag %q is split: %s points at revision %q and %s at revision %q; istiod counts both, so both revisions claim the gateways and waypoints that follow the tag, while injection goes to %q",
				t.Name, t.WebhookRef(), w, t.ServiceRef(), svc, w),
			Remedy:  fmt.Sprintf("re-render both objects for one revision: istioctl tag set %s --revision <revision> --overwrite, or helm template with -s templates/revision-tags-mwc.yaml -s templates/revision-tags-svc.yaml (the webhook template alone leaves the Service behind)", t.Name),
			Details: map[string]string{"tag": t.Name, "webhookRevision": w, "serviceRevision": svc}})
	}
	return out
}

func checkDistance(r mesh.Revision, opts revisionOptions, ref mesh.ObjectRef, comp string) []plan.Finding {
	d := opts.Target.MinorsAhead(r.Version)
	switch {
	case opts.Target.Less(r.Version):
		return []plan.Finding{{Code: plan.CodeTargetOlderThanCurrent, Severity: plan.Blocking, Object: ref, Component: comp,
			Message: fmt.Sprintf("target %s is older than revision %q (%s); downgrades are not planned", opts.Target, r.Name, r.Version),
			Remedy:  "pick a target at or above the running version"}}
	case opts.Target == r.Version:
		return []plan.Finding{{Code: plan.CodeTargetEqualsCurrent, Severity: plan.Info, Object: ref, Component: comp,
			Message: fmt.Sprintf("revision %q already runs %s", r.Name, r.Version)}}
	case opts.InPlace && d > 1:
		next := mesh.Version{Major: r.Version.Major, Minor: r.Version.Minor + 1}
		return []plan.Finding{{Code: plan.CodeInPlaceSkipsMinor, Severity: plan.Blocking, Object: ref, Component: comp,
			Message: fmt.Sprintf("an in-place upgrade of %q from %s to %s skips %d minor(s); in place goes one minor at a time", r.Name, r.Version, opts.Target, d-1),
			Remedy:  fmt.Sprintf("upgrade to %s first, or use a revision (canary) upgrade", next.MinorString())}}
	case !opts.InPlace && d > 2:
		next := mesh.Version{Major: r.Version.Major, Minor: r.Version.Minor + 2}
		return []plan.Finding{{Code: plan.CodeRevisionUpgradeSkipsTooManyMinors, Severity: plan.Blocking, Object: ref, Component: comp,
			Message: fmt.Sprintf("a revision upgrade of %q from %s to %s moves %d minors; at most two are supported", r.Name, r.Version, opts.Target, d),
			Remedy:  fmt.Sprintf("upgrade to %s first", next.MinorString())}}
	}
	return nil
}

// controlPlaneVersion returns the version of the revision a namespace-level reference resolves to.
func controlPlaneVersion(s *mesh.Snapshot, rev string) (mesh.Version, bool) {
	r, ok := s.Revision(s.ResolveRevision(rev))
	if !ok || r.Version.IsZero() {
		return mesh.Version{}, false
	}
	return r.Version, true
}

// afterUpgrade returns the version a revision will run after an in-place upgrade to the target.
func afterUpgrade(v mesh.Version, opts revisionOptions) mesh.Version {
	if opts.InPlace && !opts.Target.IsZero() && v.Less(opts.Target) {
		return opts.Target
	}
	return v
}

type skewKey struct {
	ns   string
	code plan.Code
}

func checkSidecars(s *mesh.Snapshot, opts revisionOptions) []plan.Finding {
	type agg struct {
		pods      int
		workloads []string
		proxy, cp mesh.Version
	}
	found := map[skewKey]*agg{}
	for _, w := range s.Workloads {
		if len(w.SidecarRevisions) == 0 || w.GatewayName != "" {
			continue
		}
		revs := make([]string, 0, len(w.SidecarRevisions))
		for r := range w.SidecarRevisions {
			revs = append(revs, r)
		}
		sort.Strings(revs)
		for _, rev := range revs {
			cp, ok := controlPlaneVersion(s, rev)
			if !ok {
				continue
			}
			cp = afterUpgrade(cp, opts)
			for _, pv := range w.ProxyVersions {
				var code plan.Code
				switch d := cp.MinorsAhead(pv); {
				case d < 0:
					code = plan.CodeSidecarAheadOfControlPlane
				case d > 1:
					code = plan.CodeSidecarTooFarBehindControlPlane
				default:
					continue
				}
				k := skewKey{w.Namespace, code}
				a := found[k]
				if a == nil {
					a = &agg{proxy: pv, cp: cp}
					found[k] = a
				}
				a.pods += w.SidecarRevisions[rev]
				a.workloads = append(a.workloads, w.Kind+"/"+w.Name)
			}
		}
	}
	var out []plan.Finding
	for k, a := range found {
		f := plan.Finding{Code: k.code, Object: mesh.ObjectRef{Kind: "Namespace", Name: k.ns}, Component: "sidecars/" + k.ns}
		names := summarize(a.workloads)
		if k.code == plan.CodeSidecarAheadOfControlPlane {
			f.Severity = plan.Blocking
			f.Message = fmt.Sprintf("%d sidecar pod(s) in %q run proxies at %s, newer than their control plane at %s (%s)", a.pods, k.ns, a.proxy, a.cp, names)
			f.Remedy = "upgrade the control plane they connect to first, or restart them onto a revision at least as new"
		} else {
			f.Severity = plan.Waivable
			f.Message = fmt.Sprintf("%d sidecar pod(s) in %q run proxies at %s, more than one minor behind their control plane at %s (%s)", a.pods, k.ns, a.proxy, a.cp, names)
			f.Remedy = "restart them (kubectl rollout restart) so they pick up a current proxy before upgrading further"
		}
		out = append(out, f)
	}
	return out
}

func checkGateways(s *mesh.Snapshot, opts revisionOptions) []plan.Finding {
	var out []plan.Finding
	for _, g := range s.Gateways {
		what := "gateway"
		if g.Waypoint {
			what = "waypoint"
		}
		if g.Revision == "" {
			sev := plan.Waivable
			out = append(out, plan.Finding{Code: plan.CodeGatewayNotOwned, Severity: sev, Object: g.Ref(), Component: what + "/" + g.Namespace + "/" + g.Name,
				Message: fmt.Sprintf("no istiod revision owns %s %s/%s (label istio.io/rev=%q); it is not programmed", what, g.Namespace, g.Name, g.RevisionLabel),
				Remedy:  "label it (or its namespace) istio.io/rev=<revision or tag>, or create a default tag"})
			continue
		}
		if len(g.Owners) > 1 && g.Kind == mesh.GatewayKindAPI {
			out = append(out, plan.Finding{Code: plan.CodeGatewayClaimedBySeveralRevisions, Severity: plan.Blocking, Object: g.Ref(), Component: what + "/" + g.Namespace + "/" + g.Name,
				Message: fmt.Sprintf("revisions %s all claim %s %s/%s (%s): each of their istiods deploys and programs it, and they overwrite each other",
					strings.Join(g.Owners, ", "), what, g.Namespace, g.Name, claimReason(s, g)),
				Remedy:  fmt.Sprintf("label it (or its namespace) istio.io/rev=<revision or tag> so that one revision claims it; a revision named default and a default tag, or a default tag without its webhook configuration beside a default revision, both answer for unlabelled objects: remove one (istioctl tag set default --revision <revision> renders both tag objects)"),
				Details: map[string]string{"owners": strings.Join(g.Owners, ",")}})
			continue
		}
		r, ok := s.Revision(g.Revision)
		if !ok || r.Version.IsZero() {
			continue
		}
		cp := afterUpgrade(r.Version, opts)
		for _, v := range g.Versions {
			switch d := cp.MinorsAhead(v); {
			case d < 0:
				out = append(out, plan.Finding{Code: plan.CodeGatewayAheadOfControlPlane, Severity: plan.Blocking, Object: g.Ref(), Component: what + "/" + g.Namespace + "/" + g.Name,
					Message: fmt.Sprintf("%s %s/%s runs %s, newer than its control plane %q at %s", what, g.Namespace, g.Name, v, g.Revision, cp),
					Remedy:  "move it to a revision at least as new, or upgrade that revision first"})
			case d > 1:
				out = append(out, plan.Finding{Code: plan.CodeGatewayTooFarBehindControlPlane, Severity: plan.Waivable, Object: g.Ref(), Component: what + "/" + g.Namespace + "/" + g.Name,
					Message: fmt.Sprintf("%s %s/%s runs %s, more than one minor behind its control plane %q at %s", what, g.Namespace, g.Name, v, g.Revision, cp),
					Remedy:  "restart or upgrade it so its proxy is within one minor"})
			}
		}
	}
	return out
}

// claimReason says what makes several revisions claim a gateway (mesh.Snapshot.Claims).
func claimReason(s *mesh.Snapshot, g mesh.Gateway) string {
	sel := "no istio.io/rev label"
	switch ns, _ := s.Namespace(g.Namespace); {
	case g.HasRevisionLabel():
		sel = fmt.Sprintf("label istio.io/rev=%q", g.RevisionLabel)
	case ns.Labels[mesh.LabelRev] != "":
		sel = fmt.Sprintf("namespace label istio.io/rev=%q", ns.Labels[mesh.LabelRev])
	}
	if t, ok := s.Tag(g.RevisionLabel); ok && g.RevisionLabel != "" && t.Split() {
		return sel + fmt.Sprintf("; tag %q is split", t.Name)
	}
	var why []string
	if _, ok := s.Revision("default"); ok {
		if t, tagged := s.Tag("default"); tagged && t.Revision != "default" {
			why = append(why, "a revision is named default beside a default tag")
		}
	}
	if t, ok := s.Tag("default"); ok && t.Webhook == "" && s.DefaultRevision != "" {
		why = append(why, fmt.Sprintf("the default tag exists only as a Service, which the default revision %s does not look for", s.DefaultRevision))
	}
	if len(why) == 0 {
		return sel
	}
	return sel + "; " + strings.Join(why, "; ")
}

func summarize(names []string) string {
	sort.Strings(names)
	uniq := names[:0]
	for i, n := range names {
		if i == 0 || n != names[i-1] {
			uniq = append(uniq, n)
		}
	}
	if len(uniq) > 3 {
		return fmt.Sprintf("%s, %s, %s and %d more", uniq[0], uniq[1], uniq[2], len(uniq)-3)
	}
	s := ""
	for i, n := range uniq {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// defaultValidatorMissing: istiod-default-validator names a revision with no istiod. When the base
// chart's defaultRevision value renders it, a helm upgrade fixes it. Otherwise it was left behind:
// before istioctl 1.31, `istioctl tag remove default` deleted the tag's webhooks but not this one
// (advisory istio#60537, release note 60537.yaml), or it was applied by hand; nothing owns it, so
// the remedy backs it up and deletes it, or points it at a running revision.
func defaultValidatorMissing(s *mesh.Snapshot) plan.Finding {
	f := plan.Finding{Code: plan.CodeDefaultRevisionMissing, Severity: plan.Blocking,
		Object:  mesh.ObjectRef{Kind: "ValidatingWebhookConfiguration", Name: "istiod-default-validator"},
		Message: fmt.Sprintf("the default revision is %q, which has no istiod; Istio config validation fails or is skipped", s.DefaultRevision)}
	for _, h := range s.HelmReleases {
		if h.Chart == "base" && fmt.Sprint(h.Values["defaultRevision"]) == s.DefaultRevision {
			f.Remedy = fmt.Sprintf("helm upgrade %s istio/base -n %s --reuse-values --set defaultRevision=<running revision>", h.Name, h.Namespace)
			return f
		}
	}
	f.Message += "; no Helm release renders it with that revision: it was left behind by istioctl tag remove default before 1.31 (advisory istio#60537) or applied by hand"
	f.Remedy = "back it up and delete it (kubectl get validatingwebhookconfiguration istiod-default-validator -o yaml > istiod-default-validator.yaml && kubectl delete validatingwebhookconfiguration istiod-default-validator), or point it at a running revision (istioctl tag set default --revision <running revision> --overwrite)"
	f.Details = map[string]string{"advisory": "istio#60537"}
	return f
}
