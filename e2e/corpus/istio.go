//go:build e2e

package main

import (
	"context"
	"fmt"
	"maps"

	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// Istio is the installation a state starts from: the real charts stamped with Version, installed
// with the Helm SDK in the order the docs give (base, istiod, tags, istio-cni, ztunnel).
type Istio struct {
	Version string
	// Revision of istiod; empty installs the non-revisioned istiod (release and Deployment istiod).
	Revision string
	// Tags are revision tags pointing at Revision, rendered from the istiod chart's tag templates and
	// applied outside any release (as the upgrade docs do).
	Tags []string
	// DefaultRevision is the base chart's defaultRevision (its istiod-default-validator); "-" leaves
	// the value unset, empty uses Revision (or "default").
	DefaultRevision string
	// Istiod, CNI and Ztunnel are values merged over the defaults of each chart.
	Istiod, CNI, Ztunnel map[string]any
	// NoBase, NoCNI and NoZtunnel leave a chart out.
	NoBase, NoCNI, NoZtunnel bool
	// ZtunnelRelease and ZtunnelNamespace default to ztunnel and istio-system.
	ZtunnelRelease, ZtunnelNamespace string
}

func (i Istio) global() map[string]any { return map[string]any{"hub": hub, "tag": i.Version} }

// IstiodRelease is the istiod release (and Deployment) name.
func (i Istio) IstiodRelease() string {
	if i.Revision == "" {
		return "istiod"
	}
	return "istiod-" + i.Revision
}

func merge(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = merge(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func (i Istio) istiodValues() map[string]any {
	v := map[string]any{"profile": "ambient", "global": i.global()}
	if i.Revision != "" {
		v["revision"] = i.Revision
	}
	return merge(v, i.Istiod)
}

// install installs the whole of i and waits for its workloads.
func (e *Env) istio(ctx context.Context, i Istio) error {
	if !i.NoBase {
		base := map[string]any{}
		switch {
		case i.DefaultRevision == "-":
		case i.DefaultRevision != "":
			base["defaultRevision"] = i.DefaultRevision
		case i.Revision != "":
			base["defaultRevision"] = i.Revision
		}
		if err := e.install(ctx, i.Version, charts.Release{Name: "istio-base", Namespace: istioNS, Chart: charts.ChartBase, Values: base}); err != nil {
			return err
		}
		if err := e.ap.WaitCRDsEstablished(ctx, charts.IstioCRDs, timeout); err != nil {
			return err
		}
	}
	if err := e.istiod(ctx, i); err != nil {
		return err
	}
	if !i.NoCNI {
		if err := e.install(ctx, i.Version, charts.Release{Name: "istio-cni", Namespace: istioNS, Chart: charts.ChartCNI,
			Values: merge(map[string]any{"profile": "ambient", "global": i.global()}, i.CNI)}); err != nil {
			return err
		}
		if err := kube.WaitDaemonSet(ctx, e.cs, istioNS, charts.DaemonSetCNI, timeout); err != nil {
			return err
		}
	}
	if !i.NoZtunnel {
		if err := e.ztunnel(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// istiod installs istiod of i (and its tags): a second revision beside a running one, too.
func (e *Env) istiod(ctx context.Context, i Istio) error {
	if err := e.install(ctx, i.Version, charts.Release{Name: i.IstiodRelease(), Namespace: istioNS, Chart: charts.ChartIstiod, Values: i.istiodValues()}); err != nil {
		return err
	}
	if err := kube.WaitDeployment(ctx, e.cs, istioNS, i.IstiodRelease(), timeout); err != nil {
		return err
	}
	if len(i.Tags) > 0 {
		return e.tags(ctx, i, i.Tags...)
	}
	return nil
}

// tags renders the istiod chart's revision-tag templates for i's revision and applies them outside
// any release (charts.ApplyTags, with this state's version and revision).
func (e *Env) tags(ctx context.Context, i Istio, tags ...string) error {
	rev := i.Revision
	if rev == "" {
		rev = "default"
	}
	ist := charts.Istio{Namespace: istioNS, Revision: rev, Version: i.Version, Hub: hub}
	if err := charts.ApplyTags(ctx, e.helm(i.Version), e.ap, ist, tags); err != nil {
		return fmt.Errorf("tags %v → %s: %w", tags, rev, err)
	}
	return e.syncFake(ctx)
}

// ztunnel installs the ztunnel chart of i.
func (e *Env) ztunnel(ctx context.Context, i Istio) error {
	name, ns := i.ZtunnelRelease, i.ZtunnelNamespace
	if name == "" {
		name = "ztunnel"
	}
	if ns == "" {
		ns = istioNS
	}
	v := map[string]any{"profile": "ambient", "hub": hub, "tag": i.Version, "global": i.global()}
	if i.Revision != "" {
		v["revision"] = i.Revision
	}
	v = merge(v, i.Ztunnel)
	if err := e.install(ctx, i.Version, charts.Release{Name: name, Namespace: ns, Chart: charts.ChartZtunnel, Values: v}); err != nil {
		return err
	}
	ds := "ztunnel"
	if rn, ok := v["resourceName"].(string); ok && rn != "" {
		ds = rn
	}
	return kube.WaitDaemonSet(ctx, e.cs, ns, ds, timeout)
}
