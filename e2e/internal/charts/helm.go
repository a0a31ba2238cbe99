package charts

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// Helm runs Helm SDK actions against one cluster.
type Helm struct {
	// Kubeconfig of the cluster.
	Kubeconfig string
	// CacheDir keeps Helm's discovery cache out of ~/.kube (a folder of the run).
	CacheDir string
	// ChartsDir is the manifests/charts folder of istio.io/istio.
	ChartsDir string
	// ReleaseVersion, when set, is written into every loaded chart's version and appVersion, as
	// Istio's release build does (source charts say 1.0.0). Labels such as app.kubernetes.io/version
	// and helm.sh/chart then read like a real release's.
	ReleaseVersion string
	// Logf receives progress lines.
	Logf func(format string, args ...any)
}

// Release is one Helm release to install or upgrade.
type Release struct {
	Name, Namespace string
	// Chart is the chart folder relative to ChartsDir (ChartBase, ChartIstiod, ...).
	Chart  string
	Values map[string]any
}

func (h *Helm) config(ns string) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &h.Kubeconfig
	flags.Namespace = &ns
	if h.CacheDir != "" {
		flags.CacheDir = &h.CacheDir
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm init for namespace %s: %w", ns, err)
	}
	return cfg, nil
}

// LoadChart loads a chart folder and stamps ReleaseVersion on it.
func (h *Helm) LoadChart(rel string) (*chart.Chart, error) {
	dir := filepath.Join(h.ChartsDir, rel)
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	if h.ReleaseVersion != "" {
		ch.Metadata.Version = h.ReleaseVersion
		ch.Metadata.AppVersion = h.ReleaseVersion
	}
	return ch, nil
}

// Install installs a release (creating its namespace) without Helm's wait: callers poll readiness.
func (h *Helm) Install(ctx context.Context, r Release) (*release.Release, error) {
	ch, err := h.LoadChart(r.Chart)
	if err != nil {
		return nil, err
	}
	cfg, err := h.config(r.Namespace)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName = r.Name
	in.Namespace = r.Namespace
	in.CreateNamespace = true
	in.Timeout = 5 * time.Minute
	t0 := time.Now()
	rel, err := in.RunWithContext(ctx, ch, r.Values)
	if err != nil {
		return nil, fmt.Errorf("helm install %s %s -n %s: %w", r.Name, r.Chart, r.Namespace, err)
	}
	h.logf("helm: installed %s (chart %s-%s) in %s in %s", r.Name, ch.Metadata.Name, ch.Metadata.Version, r.Namespace, time.Since(t0).Round(time.Millisecond))
	return rel, nil
}

// Upgrade upgrades a release in place (no wait), keeping nothing from the previous values.
func (h *Helm) Upgrade(ctx context.Context, r Release) (*release.Release, error) {
	ch, err := h.LoadChart(r.Chart)
	if err != nil {
		return nil, err
	}
	cfg, err := h.config(r.Namespace)
	if err != nil {
		return nil, err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = r.Namespace
	up.Timeout = 5 * time.Minute
	rel, err := up.RunWithContext(ctx, r.Name, ch, r.Values)
	if err != nil {
		return nil, fmt.Errorf("helm upgrade %s %s -n %s: %w", r.Name, r.Chart, r.Namespace, err)
	}
	h.logf("helm: upgraded %s to revision %d", r.Name, rel.Version)
	return rel, nil
}

// Template renders a chart client-side, like `helm template <name> <chart> -n <ns> -s <file>...`, and
// returns the objects of the named template files (all when none are named).
func (h *Helm) Template(ctx context.Context, r Release, showOnly ...string) ([]*unstructured.Unstructured, error) {
	ch, err := h.LoadChart(r.Chart)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(new(action.Configuration))
	in.ReleaseName = r.Name
	in.Namespace = r.Namespace
	in.DryRun = true
	in.ClientOnly = true
	in.Replace = true
	rel, err := in.RunWithContext(ctx, ch, r.Values)
	if err != nil {
		return nil, fmt.Errorf("helm template %s %s: %w", r.Name, r.Chart, err)
	}
	var out []*unstructured.Unstructured
	manifests := releaseutil.SplitManifests(rel.Manifest)
	keys := make([]string, 0, len(manifests))
	for k := range manifests {
		keys = append(keys, k)
	}
	// SplitManifests keys are "manifest-<n>"; keep the rendering order.
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for _, k := range keys {
		m := manifests[k]
		if len(showOnly) > 0 && !fromAny(m, ch.Metadata.Name, showOnly) {
			continue
		}
		objs, err := kube.DecodeYAML([]byte(m))
		if err != nil {
			return nil, fmt.Errorf("helm template %s: %w", r.Chart, err)
		}
		for _, o := range objs {
			if o.GetNamespace() == "" && r.Namespace != "" && namespaced(o.GetKind()) {
				o.SetNamespace(r.Namespace)
			}
		}
		out = append(out, objs...)
	}
	return out, nil
}

func fromAny(manifest, chartName string, files []string) bool {
	for _, f := range files {
		if strings.Contains(manifest, "# Source: "+chartName+"/"+f+"\n") {
			return true
		}
	}
	return false
}

func namespaced(kind string) bool {
	switch kind {
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ClusterRole", "ClusterRoleBinding",
		"CustomResourceDefinition", "Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		return false
	}
	return true
}

func (h *Helm) logf(format string, args ...any) {
	if h.Logf != nil {
		h.Logf(format, args...)
	}
}

// Uninstall removes a release (no wait). A release that does not exist is not an error.
func (h *Helm) Uninstall(ctx context.Context, name, namespace string) error {
	cfg, err := h.config(namespace)
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.Timeout = 2 * time.Minute
	un.IgnoreNotFound = true
	if _, err := un.Run(name); err != nil {
		return fmt.Errorf("helm uninstall %s -n %s: %w", name, namespace, err)
	}
	h.logf("helm: uninstalled %s from %s", name, namespace)
	return nil
}
