package cni

import (
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
)

// UpgradeOptions configure AddUpgrade.
type UpgradeOptions struct {
	// Target is the version the CNI moves to.
	Target mesh.Version
	// IDPrefix is put before every step ID (chained hops).
	IDPrefix string
}

// AddUpgrade adds the in-place upgrade of istio-cni to opts.Target, preconditioned on a ready
// control plane of that minor (CNI 1.x needs control plane 1.x or 1.x+1), verified by the rollout,
// by the redirection of ambient pods created meanwhile and by the absence of lasting sandbox
// failures, followed by a health gate. Without a CNI nothing is planned; without a Helm release a
// finding says it is left alone.
func AddUpgrade(b *steps.Builder, s *mesh.Snapshot, opts UpgradeOptions) {
	if s.CNI == nil {
		return
	}
	h, ok := b.Release(s, "cni", s.CNI.HelmRelease)
	ds := mesh.ObjectRef{Kind: "DaemonSet", Namespace: s.CNI.Namespace, Name: s.CNI.Name}
	if !ok {
		b.NoRelease(ds, "istio-cni")
		return
	}
	st := b.Upgrade(opts.IDPrefix+"cni/upgrade", fmt.Sprintf("upgrade istio-cni in place from %s to %s", s.CNI.Version, opts.Target),
		"CNI 1.x needs control plane 1.x or 1.x+1, so it moves only after the control plane; the CNI is never revisioned",
		h, opts.Target, nil, plan.RiskMedium,
		plan.NewCheck(ds, plan.DaemonSetRolledOutArgs{Version: opts.Target.String()},
			fmt.Sprintf("DaemonSet %s rolled out: every desired pod updated, ready and available", ds.Name)),
		plan.NewCheck(mesh.ObjectRef{}, plan.PodsRedirectedArgs{Since: "step-start"},
			"ambient pods created during the rollout carry ambient.istio.io/redirection=enabled"),
		plan.NewCheck(mesh.ObjectRef{}, plan.NoSandboxFailuresArgs{RetryWindowSeconds: 120, Plugin: "istio-cni"},
			"no pod stays ContainerCreating with FailedCreatePodSandBox from istio-cni beyond 120s (earlier retries are expected and reported, not failures)"))
	st.Preconditions = []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.FindingsClearArgs{Component: "control-plane", Version: opts.Target.String()},
		fmt.Sprintf("a control plane at %s is ready before the CNI moves", opts.Target.MinorString()))}
	st.Notes = append(st.Notes, "with maxUnavailable=1 the agent restarts node by node; while no agent runs on a node new ambient pods there wait (sandbox retries), they never start unprotected")
	b.Add(st)
	b.Add(plan.Step{ID: opts.IDPrefix + "cni/health", Description: "health gate after the CNI rollout", Risk: plan.RiskNone,
		HealthGate: &plan.HealthGate{Probe: b.Probe(), Scope: "istio-cni", SettleSeconds: 60}})
}
