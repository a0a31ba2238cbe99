package compat

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// ztunnelOptions select the rules that depend on an intended upgrade.
type ztunnelOptions struct {
	// Target is the version the control plane is to move to; zero checks the current state only.
	Target mesh.Version
}

// Versions where ztunnel naming features appeared (istio-facts §1.3, §1.4).
var (
	// ResourceNameFixed: the ztunnel chart's resourceName works from 1.25.1 (1.25.0 kept serviceAccountName: ztunnel).
	ResourceNameFixed = mesh.Version{Major: 1, Minor: 25, Patch: 1}
)

// ztunnelRules applies the ztunnel rules and returns findings in no particular order.
func ztunnelRules(s *mesh.Snapshot, opts ztunnelOptions) []plan.Finding {
	var out []plan.Finding
	add := func(f plan.Finding) { out = append(out, f) }
	if len(s.Ztunnels) == 0 && s.AmbientInUse() {
		add(plan.Finding{Code: plan.CodeZtunnelMissing, Severity: plan.Blocking,
			Object:  mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"},
			Message: "ambient is in use (ambient namespaces or waypoints) but no ztunnel DaemonSet was found",
			Remedy:  "helm install ztunnel istio/ztunnel -n istio-system"})
	}
	for _, z := range s.Ztunnels {
		out = append(out, checkVersion(s, z, opts)...)
		if !z.Rollout.Complete() {
			add(plan.Finding{Code: plan.CodeZtunnelRolloutIncomplete, Severity: plan.Waivable, Object: z.Ref(), Component: z.Component(),
				Message: fmt.Sprintf("ztunnel %s/%s rollout is not complete: %d desired, %d updated, %d ready", z.Namespace, z.Name, z.Rollout.Desired, z.Rollout.Updated, z.Rollout.Ready),
				Remedy:  fmt.Sprintf("kubectl -n %s rollout status daemonset/%s", z.Namespace, z.Name)})
		}
		if (z.Name != "ztunnel" || z.ServiceAccount != "ztunnel") && !z.Version.IsZero() && z.Version.Less(ResourceNameFixed) {
			add(plan.Finding{Code: plan.CodeZtunnelRenameNeedsNewerIstio, Severity: plan.Waivable, Object: z.Ref(), Component: z.Component(),
				Message: fmt.Sprintf("ztunnel %s/%s (service account %q) runs %s; the chart's resourceName works only from %s", z.Namespace, z.Name, z.ServiceAccount, z.Version, ResourceNameFixed),
				Remedy:  "keep the default name ztunnel until the mesh runs 1.25.1 or newer"})
		}
	}
	out = append(out, checkOverlap(s)...)
	out = append(out, checkPlacement(s)...)
	out = append(out, checkTrust(s)...)
	out = append(out, checkZtunnelNodes(s)...)
	return out
}

func checkVersion(s *mesh.Snapshot, z mesh.Ztunnel, opts ztunnelOptions) []plan.Finding {
	var out []plan.Finding
	if z.Version.IsZero() {
		return append(out, plan.Finding{Code: plan.CodeComponentVersionUnknown, Severity: plan.Waivable, Object: z.Ref(), Component: z.Component(),
			Message: fmt.Sprintf("the version of ztunnel %s/%s cannot be read from image %q", z.Namespace, z.Name, z.Image),
			Remedy:  "use a released Istio image tag, or waive if you know the version"})
	}
	var cps []mesh.Revision
	if rev, ok := s.ZtunnelRevision(z); ok {
		if r, found := s.Revision(rev); found {
			cps = append(cps, r)
		}
	} else if len(s.Revisions) > 0 {
		out = append(out, plan.Finding{Code: plan.CodeZtunnelControlPlaneUnknown, Severity: plan.Waivable, Object: z.Ref(), Component: z.Component(),
			Message: fmt.Sprintf("cannot tell which istiod ztunnel %s/%s connects to (revision %q, XDS address %q); checked against every revision", z.Namespace, z.Name, z.Revision, z.XDSAddress),
			Remedy:  "install ztunnel with --set revision=<revision> so the chart points it at istiod-<revision>"})
		cps = s.Revisions
	}
	for _, r := range cps {
		if r.Version.IsZero() {
			continue
		}
		switch d := r.Version.MinorsAhead(z.Version); {
		case d < 0:
			out = append(out, plan.Finding{Code: plan.CodeZtunnelAheadOfControlPlane, Severity: plan.Blocking, Object: z.Ref(), Component: z.Component(),
				Message: fmt.Sprintf("ztunnel %s/%s runs %s, newer than istiod %q (%s) it connects to; ztunnel 1.x needs control plane 1.x or 1.x+1", z.Namespace, z.Name, z.Version, r.Name, r.Version),
				Remedy:  fmt.Sprintf("point ztunnel at a revision running %s or newer, or roll ztunnel back to %s", z.Version.MinorString(), r.Version.MinorString())})
		case d > 1:
			out = append(out, plan.Finding{Code: plan.CodeZtunnelTooFarBehindControlPlane, Severity: plan.Blocking, Object: z.Ref(), Component: z.Component(),
				Message: fmt.Sprintf("ztunnel %s/%s runs %s, %d minors behind istiod %q (%s)", z.Namespace, z.Name, z.Version, d, r.Name, r.Version),
				Remedy:  "upgrade ztunnel (node by node or blue-green) before anything else"})
		}
	}
	if !opts.Target.IsZero() && opts.Target.MinorsAhead(z.Version) > 1 {
		via := mesh.Version{Major: z.Version.Major, Minor: z.Version.Minor + 1}
		out = append(out, plan.Finding{Code: plan.CodeDataPlaneWouldLagTarget, Severity: plan.Blocking, Object: z.Ref(), Component: z.Component(),
			Message: fmt.Sprintf("moving the control plane to %s would leave ztunnel %s/%s (%s) %d minors behind", opts.Target, z.Namespace, z.Name, z.Version, opts.Target.MinorsAhead(z.Version)),
			Remedy:  fmt.Sprintf("chain the upgrade through %s (control plane, CNI and ztunnel complete at each hop)", via.MinorString())})
	}
	return out
}

// Overlap reports whether two matchLabels selectors can select the same pod: no key they share has
// different values.
func Overlap(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; ok && w != v {
			return false
		}
	}
	return true
}

func checkOverlap(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	for i, a := range s.Ztunnels {
		for _, b := range s.Ztunnels[i+1:] {
			if a.Namespace != b.Namespace || !Overlap(a.Selector, b.Selector) {
				continue
			}
			out = append(out, plan.Finding{Code: plan.CodeZtunnelSelectorOverlap, Severity: plan.Blocking, Object: b.Ref(), Component: b.Component(),
				Message: fmt.Sprintf("ztunnel DaemonSets %s and %s in namespace %s have overlapping selectors (%s and %s); each would adopt the other's pods",
					a.Name, b.Name, a.Namespace, selector(a.Selector), selector(b.Selector)),
				Remedy: "run the second ztunnel in another namespace or give it a distinct selector label (the chart always selects app=ztunnel)"})
		}
	}
	return out
}

func selector(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TrustedBy reports whether the revision's trust list names the ztunnel's service account.
func TrustedBy(r mesh.Revision, z mesh.Ztunnel) bool {
	for _, a := range r.TrustedZtunnelAccounts {
		if a == z.Account() {
			return true
		}
	}
	return false
}

func checkTrust(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	running := map[string]bool{}
	for _, z := range s.Ztunnels {
		running[z.Account()] = true
	}
	for _, r := range s.Revisions {
		if !r.Ambient && len(r.TrustedZtunnelAccounts) == 0 && !r.TrustedAccountsUnknown {
			continue // not an ambient control plane
		}
		ref := mesh.ObjectRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Deployment}
		if r.TrustedAccountsUnknown {
			out = append(out, plan.Finding{Code: plan.CodeTrustedAccountsUnreadable, Severity: plan.Waivable, Object: ref, Component: "istiod/" + r.Name,
				Message: fmt.Sprintf("istiod %q reads CA_TRUSTED_NODE_ACCOUNTS from a ConfigMap or Secret; which ztunnels it trusts cannot be checked", r.Name),
				Remedy:  "set the list through the istiod chart (value env.CA_TRUSTED_NODE_ACCOUNTS: every ztunnel account, comma-separated, no spaces) or waive after checking it by hand"})
			continue
		}
		var untrusted []mesh.Ztunnel
		for _, z := range s.Ztunnels {
			if !TrustedBy(r, z) {
				untrusted = append(untrusted, z)
			}
		}
		if len(untrusted) > 0 {
			list := TrustList(r, untrusted...)
			remedy := TrustRemedy(s, r, list)
			for _, z := range untrusted {
				sev := plan.Waivable
				if rev, ok := s.ZtunnelRevision(z); !ok || rev == r.Name {
					sev = plan.Blocking
				}
				out = append(out, plan.Finding{Code: plan.CodeZtunnelNotTrusted, Severity: sev, Object: z.Ref(), Component: z.Component(),
					Message: fmt.Sprintf("istiod %q does not trust ztunnel service account %q (trusts %v); its certificate requests for workloads are refused", r.Name, z.Account(), r.TrustedZtunnelAccounts),
					Remedy:  remedy,
					Related: []mesh.ObjectRef{ref},
					Details: map[string]string{"revision": r.Name, "account": z.Account(), "trustList": strings.Join(list, ",")}})
			}
		}
		for _, a := range r.TrustedZtunnelAccounts {
			if !running[a] {
				out = append(out, plan.Finding{Code: plan.CodeTrustedAccountWithoutZtunnel, Severity: plan.Info, Object: ref, Component: "istiod/" + r.Name,
					Message: fmt.Sprintf("istiod %q trusts %q, but no ztunnel DaemonSet runs as it", r.Name, a),
					Remedy:  "remove it from the trust list once no ztunnel of that name will run again"})
			}
		}
	}
	return out
}

// TrustList returns the trust list revision r needs so that it also trusts the given ztunnels: what
// it trusts now, in its order, then each ztunnel's account it lacks. The list replaces
// CA_TRUSTED_NODE_ACCOUNTS as a whole, so it must name every account; the chart values
// trustedZtunnelNamespace and trustedZtunnelName hold a single account, and setting them to a new
// ztunnel would stop istiod trusting the one that runs.
func TrustList(r mesh.Revision, zs ...mesh.Ztunnel) []string {
	list := append([]string(nil), r.TrustedZtunnelAccounts...)
	for _, z := range zs {
		if !slices.Contains(list, z.Account()) {
			list = append(list, z.Account())
		}
	}
	return list
}

// legacyEnvPrefix: istiod charts before 1.24 read env from .Values.pilot.env only
// (istio/istio@1.23.0: manifests/charts/istio-control/istio-discovery/templates/deployment.yaml).
var legacyEnvPrefix = mesh.Version{Major: 1, Minor: 24}

// TrustRemedy is the one command that sets revision r's trust list to list.
//
// The istiod chart writes CA_TRUSTED_NODE_ACCOUNTS as "<trustedZtunnelNamespace>/<trustedZtunnelName>"
// only when the user value env.CA_TRUSTED_NODE_ACCOUNTS is unset, and renders every env entry after
// it, so the user value wins (istio/istio@1.30.3 and @release-1.31:
// manifests/charts/istio-control/istio-discovery/templates/deployment.yaml; pilot.* is merged over
// the top level, templates/zzy_descope_legacy.yaml, so a pilot.env entry would win over env). istiod
// splits the value on "," and each entry on "/" without trimming (pilot/pkg/features/security.go,
// same versions), so the list has no spaces. Helm's --set splits on commas (helm.sh/helm/v3@v3.22.0:
// pkg/strvals/parser.go); --set-json takes the list as one JSON string, and survives Markdown, which
// would drop the backslash of an escaped comma.
func TrustRemedy(s *mesh.Snapshot, r mesh.Revision, list []string) string {
	value := strings.Join(list, ",")
	h, ok := IstiodRelease(s, r)
	if !ok {
		return fmt.Sprintf("istiod %q has no Helm release in the snapshot; set the whole list on its Deployment the way it was installed, e.g. kubectl -n %s set env deployment/%s CA_TRUSTED_NODE_ACCOUNTS=%s",
			r.Name, r.Namespace, r.Deployment, value)
	}
	key := TrustEnvKey(h, r.Version) + ".CA_TRUSTED_NODE_ACCOUNTS"
	version := h.ChartVersion
	if version == "" && !r.Version.IsZero() {
		version = r.Version.String()
	}
	cmd := fmt.Sprintf("helm upgrade %s istio/istiod -n %s", h.Name, h.Namespace)
	if version != "" {
		cmd += " --version " + version
	}
	return fmt.Sprintf("trust every ztunnel at once (trustedZtunnelNamespace/trustedZtunnelName hold one account and would drop the running one): %s --reuse-values --set-json '%s=\"%s\"'",
		cmd, key, value)
}

// TrustEnvKey is where an istiod release's values set CA_TRUSTED_NODE_ACCOUNTS so that the chart
// renders it: "env", or "pilot.env" on charts before 1.24 and on releases that set it there already
// (see TrustRemedy). v is the release's chart version when known.
func TrustEnvKey(h mesh.HelmRelease, v mesh.Version) string {
	if cv, err := mesh.ParseVersion(h.ChartVersion); err == nil {
		v = cv
	}
	if pilot, _ := h.Values["pilot"].(map[string]any); (!v.IsZero() && v.Less(legacyEnvPrefix)) || hasKey(pilot["env"], "CA_TRUSTED_NODE_ACCOUNTS") {
		return "pilot.env"
	}
	return "env"
}

// EnvValues returns the values that set one env entry under key ("env" or "pilot.env").
func EnvValues(key, name, value string) map[string]any {
	env := map[string]any{"env": map[string]any{name: value}}
	if key == "pilot.env" {
		return map[string]any{"pilot": env}
	}
	return env
}

func hasKey(m any, key string) bool {
	mm, ok := m.(map[string]any)
	if !ok {
		return false
	}
	_, has := mm[key]
	return has
}

// IstiodRelease finds the Helm release that installed revision r.
func IstiodRelease(s *mesh.Snapshot, r mesh.Revision) (mesh.HelmRelease, bool) {
	if r.HelmRelease == "" {
		return mesh.HelmRelease{}, false
	}
	for _, ns := range []string{r.Namespace, ""} {
		for _, h := range s.HelmReleases {
			if h.Name == r.HelmRelease && (ns == "" || h.Namespace == ns) {
				return h, true
			}
		}
	}
	return mesh.HelmRelease{}, false
}

func checkZtunnelNodes(s *mesh.Snapshot) []plan.Finding {
	if len(s.Ztunnels) == 0 {
		return nil
	}
	var out []plan.Finding
	ambient := s.AmbientNodes()
	for _, n := range s.Nodes {
		if ambient[n.Name] == 0 {
			continue
		}
		ready := false
		for _, z := range s.Ztunnels {
			if _, ok := mesh.ReadyAgentOn(z.Pods, n.Name); ok {
				ready = true
				break
			}
		}
		if !ready {
			out = append(out, plan.Finding{Code: plan.CodeAmbientNodeWithoutReadyZtunnel, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "Node", Name: n.Name}, Component: "node/" + n.Name,
				Message: fmt.Sprintf("node %s runs %d ambient workload(s) without a ready ztunnel pod; their traffic is blocked", n.Name, ambient[n.Name]),
				Remedy:  "fix the ztunnel pod on that node (node selector, tolerations, resources) before upgrading"})
		}
	}
	return out
}

// checkPlacement finds nodes running two ztunnels, and ztunnels whose placements meet. istio-cni
// hands each new pod to the ztunnel that connected last (istio/istio@1.30.3:
// cni/pkg/nodeagent/ztunnelserver.go, "add pod goes to newest connection"), so on a node with two
// the pods are split between them.
func checkPlacement(s *mesh.Snapshot) []plan.Finding {
	if len(s.Ztunnels) < 2 {
		return nil
	}
	var out []plan.Finding
	on := map[string][]string{}
	for _, z := range s.Ztunnels {
		seen := map[string]bool{}
		for _, p := range z.Pods {
			if p.Terminating || seen[p.Node] {
				continue
			}
			seen[p.Node] = true
			on[p.Node] = append(on[p.Node], z.Namespace+"/"+z.Name)
		}
	}
	nodes := make([]string, 0, len(on))
	for n, zs := range on {
		if len(zs) > 1 {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		out = append(out, plan.Finding{Code: plan.CodeZtunnelTwoOnOneNode, Severity: plan.Blocking, Object: mesh.ObjectRef{Kind: "Node", Name: n}, Component: "node/" + n,
			Message: fmt.Sprintf("node %s runs pods of %d ztunnels (%s); istio-cni hands each new pod to the newest, so the node's traffic is split between them", n, len(on[n]), strings.Join(on[n], ", ")),
			Remedy:  "keep one ztunnel per node: give each a node affinity on a colour label (BlueGreenZtunnel does), then delete the extra pod"})
	}
	for i, a := range s.Ztunnels {
		for _, b := range s.Ztunnels[i+1:] {
			if a.Namespace == b.Namespace {
				continue // checkOverlap: the selectors decide
			}
			var both []string
			for _, n := range s.Nodes {
				if a.SchedulesOn(n) && b.SchedulesOn(n) {
					both = append(both, n.Name)
				}
			}
			msg := fmt.Sprintf("ztunnels %s/%s and %s/%s", a.Namespace, a.Name, b.Namespace, b.Name)
			remedy := "pin each to its own nodes with a required node affinity on one label: In for one colour, NotIn for the other"
			if len(both) > 0 {
				out = append(out, plan.Finding{Code: plan.CodeZtunnelPlacementOverlap, Severity: plan.Blocking, Object: b.Ref(), Component: b.Component(),
					Message: fmt.Sprintf("%s both schedule pods onto %d node(s): %s", msg, len(both), plan.ListSome(both, 5)),
					Remedy:  remedy})
				continue
			}
			if l, ok := mesh.PlacementsOverlap(a.NodeSelector, a.NodeAffinity, b.NodeSelector, b.NodeAffinity); ok {
				out = append(out, plan.Finding{Code: plan.CodeZtunnelPlacementOverlap, Severity: plan.Waivable, Object: b.Ref(), Component: b.Component(),
					Message: fmt.Sprintf("%s share no node now, but both would run on a new node labelled %s", msg, selector(l)),
					Remedy:  remedy + "; waive if no such node can join"})
			}
		}
	}
	return out
}

// listSome lists up to n names, then how many more there are.
