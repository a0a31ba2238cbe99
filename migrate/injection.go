package migrate

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// injectionDisabled is the istio-injection value no injector webhook of the istiod chart selects:
// namespace.* wants enabled, and rev.namespace.*, rev.object.*, object.* and auto.* want the label
// absent (istio/istio@1.30.3 and @release-1.31:
// manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml). istio-cni's
// ambient enrolment does not read it (cni/pkg/util/enablement_selector.go).
const injectionDisabled = "disabled"

// injectionChange is what the migration does to a namespace's sidecar injection labels.
type injectionChange struct {
	// before are the injection labels as they are (istio-injection, istio.io/rev), absent ones left out.
	before map[string]string
	// set and remove are the change: without auto, the labels are removed; with auto, injectors
	// would inject the unlabelled namespace, so istio-injection=disabled is set instead.
	set    map[string]string
	remove []string
	// auto names the injectors that inject namespaces with no injection label (enableNamespacesByDefault).
	auto []string
}

// planInjection works out the change for namespace ns.
func planInjection(s *mesh.Snapshot, ns *mesh.Namespace) injectionChange {
	c := injectionChange{before: map[string]string{}}
	for _, k := range []string{mesh.LabelInjection, mesh.LabelRev} {
		if v, ok := ns.Labels[k]; ok {
			c.before[k] = v
		}
	}
	for _, in := range s.Injectors {
		if in.InjectsByDefault(ns.Name) {
			c.auto = append(c.auto, in.Name)
		}
	}
	sort.Strings(c.auto)
	if len(c.auto) > 0 {
		if c.before[mesh.LabelInjection] != injectionDisabled {
			c.set = map[string]string{mesh.LabelInjection: injectionDisabled}
		}
		if _, ok := c.before[mesh.LabelRev]; ok {
			c.remove = []string{mesh.LabelRev}
		}
		return c
	}
	for _, k := range []string{mesh.LabelInjection, mesh.LabelRev} {
		if _, ok := c.before[k]; ok {
			c.remove = append(c.remove, k)
		}
	}
	return c
}

// changes reports whether the migration touches the labels at all.
func (c injectionChange) changes() bool { return len(c.set)+len(c.remove) > 0 }

// undoRemove are the labels the rollback takes off: those the change set that were absent before.
func (c injectionChange) undoRemove() []string {
	var out []string
	for k := range c.set {
		if _, had := c.before[k]; !had {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// undoWords says what the rollback does to the labels.
func (c injectionChange) undoWords(ns string) string {
	var parts []string
	if len(c.before) > 0 {
		parts = append(parts, fmt.Sprintf("label namespace %s %s again", ns, labelList(c.before)))
	}
	if rm := c.undoRemove(); len(rm) > 0 {
		parts = append(parts, fmt.Sprintf("remove label %s from namespace %s", strings.Join(rm, " and "), ns))
	}
	return strings.Join(parts, " and ")
}

// after is the namespace's mesh labels once the change is applied.
func (c injectionChange) after(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = v
	}
	for _, k := range c.remove {
		delete(out, k)
	}
	for k, v := range c.set {
		out[k] = v
	}
	return out
}

// withNamespaceLabels is a copy of s in which namespace ns carries labels; nothing else is copied.
func withNamespaceLabels(s *mesh.Snapshot, ns string, labels map[string]string) *mesh.Snapshot {
	cp := *s
	cp.Namespaces = slices.Clone(s.Namespaces)
	for i := range cp.Namespaces {
		if cp.Namespaces[i].Name == ns {
			cp.Namespaces[i].Labels = labels
		}
	}
	return &cp
}

// pinnedGateway is a Gateway API gateway (or waypoint) of the namespace that has no istio.io/rev of
// its own, so that istiod picks its owner by the namespace's label: removing that label hands it to
// another revision (Snapshot.Claims, istiod's IsMine: istio/istio@1.30.3 and @release-1.31
// pkg/revisions/tag_watcher.go, asked by
// pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go). The migration copies the label
// onto it first.
type pinnedGateway struct {
	gateway       mesh.Gateway
	rev           string
	before, after []string
}

// gatewaysToPin lists, sorted by name, the namespace's Gateway API gateways whose owners change when
// the injection labels change.
func gatewaysToPin(s *mesh.Snapshot, ns *mesh.Namespace, c injectionChange) []pinnedGateway {
	rev, had := c.before[mesh.LabelRev]
	if !had || !slices.Contains(c.remove, mesh.LabelRev) {
		return nil
	}
	after := withNamespaceLabels(s, ns.Name, c.after(ns.Labels))
	var out []pinnedGateway
	for _, g := range s.Gateways {
		if g.Kind != mesh.GatewayKindAPI || g.Namespace != ns.Name || g.HasRevisionLabel() {
			continue
		}
		b, a := s.Claims(ns.Name, "", false), after.Claims(ns.Name, "", false)
		if !slices.Equal(b, a) {
			out = append(out, pinnedGateway{gateway: g, rev: rev, before: b, after: a})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gateway.Name < out[j].gateway.Name })
	return out
}

// gatewayRef is the object a PatchLabels step and a GatewayOwner check name.
func gatewayRef(g mesh.Gateway) mesh.ObjectRef {
	return mesh.ObjectRef{Kind: "Gateway", Namespace: g.Namespace, Name: g.Name}
}

func orNoRevision(revs []string) string {
	if len(revs) == 0 {
		return "no revision"
	}
	return "revision " + strings.Join(revs, " and ")
}

// injectionFindings say what the change of the injection labels does beyond the sidecar workloads:
// injectors that inject unlabelled namespaces, gateways whose owner changes, gateway-chart pods that
// would come back from the injector of another revision (or from none).
func injectionFindings(s *mesh.Snapshot, ns *mesh.Namespace, add func(plan.Finding)) {
	c := planInjection(s, ns)
	nsRef := mesh.ObjectRef{Kind: "Namespace", Name: ns.Name}
	if len(c.auto) > 0 {
		add(plan.Finding{Code: CodeMigrationNamespacesInjectedByDefault, Severity: plan.Info, Object: nsRef,
			Message: fmt.Sprintf("injector %s injects pods of namespaces that carry no injection label (enableNamespacesByDefault), so removing the labels of namespace %s would not stop injection and the restarted pods would come back with sidecars",
				strings.Join(c.auto, ", "), ns.Name),
			Remedy: fmt.Sprintf("the plan labels the namespace %s=%s instead, which no injector webhook selects and ambient does not read", mesh.LabelInjection, injectionDisabled)})
	}
	if !c.changes() {
		return
	}
	for _, pg := range gatewaysToPin(s, ns, c) {
		add(plan.Finding{Code: CodeMigrationGatewayRevisionChanges, Severity: plan.Waivable, Object: gatewayRef(pg.gateway),
			Message: fmt.Sprintf("%s has no %s label of its own, so istiod picks its owner by the namespace's %s=%s: %s owns it now, %s would once the migration removes the namespace's label, and istiod would redeploy it mid-migration",
				gatewayRef(pg.gateway), mesh.LabelRev, mesh.LabelRev, pg.rev, orNoRevision(pg.before), orNoRevision(pg.after)),
			Remedy: fmt.Sprintf("label it %s=%s before the namespace's label goes (MigrateNamespace does)", mesh.LabelRev, pg.rev)})
	}
	after := withNamespaceLabels(s, ns.Name, c.after(ns.Labels))
	for _, g := range s.Gateways {
		if g.Kind != mesh.GatewayKindDeployment || g.Namespace != ns.Name {
			continue
		}
		b, a := s.InjectionRevision(ns.Name, g.RevisionLabel), after.InjectionRevision(ns.Name, g.RevisionLabel)
		if b == a {
			continue
		}
		what := "no injector would inject them, and a gateway pod that is not injected keeps the placeholder image auto and never starts"
		if a != "" {
			what = fmt.Sprintf("the injector of revision %s would inject them instead of %s", a, orNoRevision([]string{b}))
		}
		add(plan.Finding{Code: CodeMigrationGatewayRevisionChanges, Severity: plan.Blocking, Object: g.Ref(),
			Message: fmt.Sprintf("gateway %s is injected through the namespace's labels (%s); once the migration changes them, its next pods are not what they are now: %s",
				g.Ref(), labelList(c.before), what),
			Remedy: fmt.Sprintf("set the gateway's own revision (the gateway chart's revision value, which labels its pod template %s), or move it to a namespace of its own, then migrate", mesh.LabelRev)})
	}
}

// gatewayNamespaceFinding: a namespace whose only injected pods are gateways' has no sidecar
// workload to move. Its gateways keep their own proxies in ambient; removing the injection labels
// only changes who injects them.
func gatewayNamespaceFinding(s *mesh.Snapshot, ns *mesh.Namespace, add func(plan.Finding)) {
	var gateways []string
	for _, g := range s.Gateways {
		if g.Namespace == ns.Name && !g.Waypoint {
			gateways = append(gateways, g.Ref().String())
		}
	}
	if len(gateways) == 0 {
		return
	}
	for _, w := range s.Workloads {
		if w.Namespace == ns.Name && len(w.SidecarRevisions) > 0 && !isGatewayWorkload(s, w) {
			return
		}
	}
	if ns.Ambient() {
		return
	}
	add(plan.Finding{Code: CodeMigrationNamespaceRunsOnlyGateways, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "Namespace", Name: ns.Name},
		Message: fmt.Sprintf("namespace %s runs gateways (%s) and no workload with a sidecar: a gateway's proxy is not a sidecar, it stays as it is in ambient, so there is nothing to migrate here",
			ns.Name, strings.Join(gateways, ", ")),
		Remedy: "leave the gateway's namespace as it is; migrate the namespaces of the workloads behind it (and label Services istio.io/ingress-use-waypoint where the gateway must go through their waypoint)"})
}

// isGatewayWorkload: the workload's pods are a gateway's or waypoint's own proxies.
func isGatewayWorkload(s *mesh.Snapshot, w mesh.Workload) bool {
	if w.GatewayName != "" {
		return true
	}
	for _, g := range s.Gateways {
		if g.Kind == mesh.GatewayKindDeployment && g.Namespace == w.Namespace && g.Name == w.Name {
			return true
		}
	}
	return false
}
