package charts

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// Istio describes the installation the suites start from: a revisioned ambient control plane, the
// CNI, ztunnel, an ingress gateway and revision tags, all from the real charts.
type Istio struct {
	// Namespace of istiod, CNI and ztunnel (istio-system).
	Namespace string
	// Revision of istiod ("1-30-3") and Version the images stand for ("1.30.3").
	Revision, Version string
	// Hub of the images (docker.io/istio). Images are never pulled on kwok.
	Hub string
	// Tags are revision tags pointing at Revision, rendered from the istiod chart's revision-tags
	// templates and applied outside any Helm release, as the upgrade docs do.
	Tags []string
	// GatewayNamespace and GatewayRelease of the ingress gateway (istio-ingress).
	GatewayNamespace, GatewayRelease string
	// Timeout for each component to become ready.
	Timeout time.Duration
}

// Release names and workload names the installation uses.
const (
	ReleaseBase    = "istio-base"
	ReleaseCNI     = "istio-cni"
	ReleaseZtunnel = "ztunnel"
	DaemonSetCNI   = "istio-cni-node"
	DaemonSetZtun  = "ztunnel"
)

// IstiodRelease returns the istiod release (and Deployment) name of the revision.
func (i Istio) IstiodRelease() string { return "istiod-" + i.Revision }

func (i Istio) global() map[string]any { return map[string]any{"hub": i.Hub, "tag": i.Version} }

// BaseValues, IstiodValues, ... are the values each chart is installed with.
func (i Istio) BaseValues() map[string]any {
	return map[string]any{"defaultRevision": i.Revision}
}

// IstiodValues installs istiod with the revision and the ambient profile.
func (i Istio) IstiodValues() map[string]any {
	return map[string]any{"revision": i.Revision, "profile": "ambient", "global": i.global()}
}

// CNIValues installs the CNI with the ambient profile.
func (i Istio) CNIValues() map[string]any {
	return map[string]any{"profile": "ambient", "global": i.global()}
}

// ZtunnelValues installs ztunnel for the revision. The chart flattens global.* to the top level.
func (i Istio) ZtunnelValues() map[string]any {
	return map[string]any{"profile": "ambient", "revision": i.Revision, "hub": i.Hub, "tag": i.Version, "global": i.global()}
}

// GatewayValues installs the gateway chart; its pods follow the default tag through injection.
func (i Istio) GatewayValues() map[string]any {
	return map[string]any{"global": i.global()}
}

// Releases returns the Helm releases in install order: base, istiod, cni, ztunnel, gateway.
func (i Istio) Releases() []Release {
	return []Release{
		{Name: ReleaseBase, Namespace: i.Namespace, Chart: ChartBase, Values: i.BaseValues()},
		{Name: i.IstiodRelease(), Namespace: i.Namespace, Chart: ChartIstiod, Values: i.IstiodValues()},
		{Name: ReleaseCNI, Namespace: i.Namespace, Chart: ChartCNI, Values: i.CNIValues()},
		{Name: ReleaseZtunnel, Namespace: i.Namespace, Chart: ChartZtunnel, Values: i.ZtunnelValues()},
		{Name: i.GatewayRelease, Namespace: i.GatewayNamespace, Chart: ChartGateway, Values: i.GatewayValues()},
	}
}

// IstioCRDs the fixtures use; the base chart installs them.
var IstioCRDs = []string{
	"authorizationpolicies.security.istio.io",
	"peerauthentications.security.istio.io",
	"virtualservices.networking.istio.io",
	"destinationrules.networking.istio.io",
}

// Step is one timed part of the installation.
type Step struct {
	Name     string
	Duration time.Duration
}

// InstallIstio installs the charts in order (base → istiod → tags → cni → ztunnel → gateway),
// waiting for each workload by polling the API. afterStep runs after every step (the fake istiod's
// Sync, so webhooks are served before any pod that needs injection is created).
func InstallIstio(ctx context.Context, h *Helm, cs kubernetes.Interface, ap *kube.Applier, ist Istio,
	afterStep func(ctx context.Context, step string) error) ([]Step, error) {
	var steps []Step
	run := func(name string, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("install step %s: %w", name, err)
		}
		if afterStep != nil {
			if err := afterStep(ctx, name); err != nil {
				return fmt.Errorf("after install step %s: %w", name, err)
			}
		}
		steps = append(steps, Step{Name: name, Duration: time.Since(t0)})
		h.logf("istio: %s done in %s", name, time.Since(t0).Round(time.Millisecond))
		return nil
	}
	rels := ist.Releases()
	install := func(r Release) error { _, err := h.Install(ctx, r); return err }

	if err := run("base", func() error {
		if err := install(rels[0]); err != nil {
			return err
		}
		return ap.WaitCRDsEstablished(ctx, IstioCRDs, ist.Timeout)
	}); err != nil {
		return steps, err
	}
	if err := run("istiod", func() error {
		if err := install(rels[1]); err != nil {
			return err
		}
		return kube.WaitDeployment(ctx, cs, ist.Namespace, ist.IstiodRelease(), ist.Timeout)
	}); err != nil {
		return steps, err
	}
	if len(ist.Tags) > 0 {
		if err := run("tags", func() error { return ApplyTags(ctx, h, ap, ist, ist.Tags) }); err != nil {
			return steps, err
		}
	}
	if err := run("cni", func() error {
		if err := install(rels[2]); err != nil {
			return err
		}
		return kube.WaitDaemonSet(ctx, cs, ist.Namespace, DaemonSetCNI, ist.Timeout)
	}); err != nil {
		return steps, err
	}
	if err := run("ztunnel", func() error {
		if err := install(rels[3]); err != nil {
			return err
		}
		return kube.WaitDaemonSet(ctx, cs, ist.Namespace, DaemonSetZtun, ist.Timeout)
	}); err != nil {
		return steps, err
	}
	if err := run("gateway", func() error {
		if err := install(rels[4]); err != nil {
			return err
		}
		return kube.WaitDeployment(ctx, cs, ist.GatewayNamespace, ist.GatewayRelease, ist.Timeout)
	}); err != nil {
		return steps, err
	}
	return steps, nil
}

// ApplyTags renders the istiod chart's revision-tag templates for the revision, like
//
//	helm template istiod istio/istiod -s templates/revision-tags-mwc.yaml -s templates/revision-tags-svc.yaml \
//	  --set revisionTags="{<tags>}" --set revision=<rev> -n istio-system | kubectl apply --server-side -f -
//
// so the tags belong to no Helm release. Re-running it with another revision moves the tags.
func ApplyTags(ctx context.Context, h *Helm, ap *kube.Applier, ist Istio, tags []string) error {
	values := ist.IstiodValues()
	tagList := make([]any, len(tags))
	for i, t := range tags {
		tagList[i] = t
	}
	values["revisionTags"] = tagList
	objs, err := h.Template(ctx, Release{Name: "istiod", Namespace: ist.Namespace, Chart: ChartIstiod, Values: values},
		"templates/revision-tags-mwc.yaml", "templates/revision-tags-svc.yaml")
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return fmt.Errorf("rendering revision tags %v gave no objects", tags)
	}
	return ap.Apply(ctx, objs...)
}

// UninstallIstio removes what InstallIstio made, in reverse order: the gateway, ztunnel, CNI, the
// tags, istiod and base. The charts keep Istio's CRDs (helm.sh/resource-policy: keep) and Helm
// leaves the namespaces.
func UninstallIstio(ctx context.Context, h *Helm, cs kubernetes.Interface, ist Istio) error {
	var errs []error
	rels := ist.Releases()
	for i := len(rels) - 1; i >= 0; i-- {
		if rels[i].Name == ist.IstiodRelease() {
			for _, t := range ist.Tags {
				_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "istio-revision-tag-"+t, metav1.DeleteOptions{})
				_ = cs.CoreV1().Services(ist.Namespace).Delete(ctx, "istiod-revision-tag-"+t, metav1.DeleteOptions{})
			}
		}
		if err := h.Uninstall(ctx, rels[i].Name, rels[i].Namespace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
