package compat

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// cniOptions select the rules that depend on an intended upgrade.
type cniOptions struct {
	// Target is the version the control plane is to move to; zero checks the current state only.
	Target mesh.Version
	// Advisories decide which istiod versions read a configured untaint taint name.
	Advisories *advisories.Data
}

// cniRules applies the istio-cni rules and returns findings in no particular order.
func cniRules(s *mesh.Snapshot, opts cniOptions) []plan.Finding {
	var out []plan.Finding
	add := func(f plan.Finding) { out = append(out, f) }
	c := s.CNI
	if c == nil {
		if s.AmbientInUse() {
			add(plan.Finding{Code: plan.CodeCNIMissing, Severity: plan.Blocking,
				Object:  mesh.ObjectRef{Kind: "DaemonSet", Namespace: "istio-system", Name: "istio-cni-node"},
				Message: "ambient is in use (ambient namespaces, ztunnel or waypoints) but no istio-cni DaemonSet was found",
				Remedy:  "helm install istio-cni istio/cni -n istio-system --set profile=ambient"})
		}
		return out
	}
	ref := mesh.ObjectRef{Kind: "DaemonSet", Namespace: c.Namespace, Name: c.Name}
	if c.Version.IsZero() {
		add(plan.Finding{Code: plan.CodeComponentVersionUnknown, Severity: plan.Waivable, Object: ref, Component: "cni",
			Message: fmt.Sprintf("the istio-cni version cannot be read from image %q", c.Image),
			Remedy:  "use a released Istio image tag, or waive if you know the version"})
	} else if cps := s.ControlPlaneVersions(); len(cps) > 0 {
		newest := cps[len(cps)-1]
		switch d := newest.MinorsAhead(c.Version); {
		case d < 0:
			add(plan.Finding{Code: plan.CodeCNIAheadOfControlPlane, Severity: plan.Blocking, Object: ref, Component: "cni",
				Message: fmt.Sprintf("istio-cni runs %s, newer than the newest control plane (%s); CNI 1.x needs control plane 1.x or 1.x+1", c.Version, newest),
				Remedy:  fmt.Sprintf("upgrade the control plane to %s first, or roll istio-cni back to %s", c.Version.MinorString(), newest.MinorString())})
		case d > 1:
			add(plan.Finding{Code: plan.CodeCNITooFarBehindControlPlane, Severity: plan.Blocking, Object: ref, Component: "cni",
				Message: fmt.Sprintf("istio-cni runs %s, %d minors behind the control plane (%s); CNI 1.x needs control plane 1.x or 1.x+1", c.Version, d, newest),
				Remedy:  "upgrade istio-cni in place now (helm upgrade istio-cni)"})
		}
		if !opts.Target.IsZero() && opts.Target.MinorsAhead(c.Version) > 1 {
			via := mesh.Version{Major: c.Version.Major, Minor: c.Version.Minor + 1}
			add(plan.Finding{Code: plan.CodeDataPlaneWouldLagTarget, Severity: plan.Blocking, Object: ref, Component: "cni",
				Message: fmt.Sprintf("moving the control plane to %s would leave istio-cni (%s) %d minors behind", opts.Target, c.Version, opts.Target.MinorsAhead(c.Version)),
				Remedy:  fmt.Sprintf("chain the upgrade through %s (control plane, CNI and ztunnel complete at each hop)", via.MinorString())})
		}
	}
	if s.AmbientInUse() && c.Config != nil && c.Config["AMBIENT_ENABLED"] != "" && c.Config["AMBIENT_ENABLED"] != "true" {
		add(plan.Finding{Code: plan.CodeCNIAmbientDisabled, Severity: plan.Blocking, Object: ref, Component: "cni",
			Message: fmt.Sprintf("istio-cni has AMBIENT_ENABLED=%q while ambient is in use; no pod gets redirected", c.Config["AMBIENT_ENABLED"]),
			Remedy:  "helm upgrade istio-cni istio/cni --reuse-values --set profile=ambient"})
	}
	if !c.Rollout.Complete() {
		add(plan.Finding{Code: plan.CodeCNIRolloutIncomplete, Severity: plan.Waivable, Object: ref, Component: "cni",
			Message: fmt.Sprintf("istio-cni rollout is not complete: %d desired, %d updated, %d ready, %d available", c.Rollout.Desired, c.Rollout.Updated, c.Rollout.Ready, c.Rollout.Available),
			Remedy:  fmt.Sprintf("kubectl -n %s rollout status daemonset/%s; find the nodes whose pod is not ready", c.Namespace, c.Name)})
	}
	out = append(out, checkCNINodes(s, opts.Advisories)...)
	out = append(out, checkRedirection(s)...)
	return out
}

func checkCNINodes(s *mesh.Snapshot, adv *advisories.Data) []plan.Finding {
	var out []plan.Finding
	ambient := s.AmbientNodes()
	taints := untaintTaints(s, adv)
	for _, n := range s.Nodes {
		ref := mesh.ObjectRef{Kind: "Node", Name: n.Name}
		for _, t := range sortedKeys(taints) {
			if !n.HasTaint(t) {
				continue
			}
			by := "the default name"
			if revs := taints[t]; len(revs) > 0 {
				by = fmt.Sprintf("the name istiod %s's untaint controller removes (%s)", strings.Join(revs, ", "), mesh.EnvUntaintTaintName)
			}
			out = append(out, plan.Finding{Code: plan.CodeNodeTaintedCNINotReady, Severity: plan.Waivable, Object: ref, Component: "node/" + n.Name,
				Message: fmt.Sprintf("node %s carries taint %s, %s: istio-cni is not ready there and new pods wait", n.Name, t, by),
				Remedy:  "check the istio-cni pod on that node; istiod removes the taint once it is ready (taint.enabled)",
				Details: map[string]string{"taint": t}})
		}
		if ambient[n.Name] > 0 && s.CNI != nil {
			if _, ok := mesh.ReadyAgentOn(s.CNI.Pods, n.Name); !ok {
				out = append(out, plan.Finding{Code: plan.CodeNodeWithoutCNI, Severity: plan.Blocking, Object: ref, Component: "node/" + n.Name,
					Message: fmt.Sprintf("node %s runs %d ambient workload(s) but has no ready istio-cni pod; new pods there fail sandbox creation", n.Name, ambient[n.Name]),
					Remedy:  "fix the istio-cni pod on that node (node selector, taints, resources) before upgrading"})
			}
		}
	}
	return out
}

func checkRedirection(s *mesh.Snapshot) []plan.Finding {
	var out []plan.Finding
	for _, n := range s.Namespaces {
		if n.Pods.AmbientMissing == 0 {
			continue
		}
		out = append(out, plan.Finding{Code: plan.CodeAmbientPodsNotRedirected, Severity: plan.Waivable,
			Object: mesh.ObjectRef{Kind: "Namespace", Name: n.Name}, Component: "cni",
			Message: fmt.Sprintf("%d pod(s) in %q should be in ambient but carry no %s annotation: they are not protected", n.Pods.AmbientMissing, n.Name, mesh.AnnotationRedirection),
			Remedy:  "check istio-cni and ztunnel on their nodes; pods with sidecars or host networking are never captured"})
	}
	return out
}
