//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
)

// TestWebhookPath proves the injection and validation webhooks work end to end through the API server:
// pods in sidecar namespaces get the revision's istio-proxy, ambient pods do not and get captured, and
// no webhook call failed or left the loopback.
func TestWebhookPath(t *testing.T) {
	proxyImage := harness.IstioHub + "/proxyv2:" + harness.IstioVersion + "-distroless"
	var probes []*corev1.Pod
	newProbe := func(ctx context.Context, t *testing.T, ns, name string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "probe"}},
			Spec: corev1.PodSpec{
				NodeSelector:                  map[string]string{cluster.PoolLabel: harness.PoolGeneral},
				Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/probe:1.0"}},
				TerminationGracePeriodSeconds: ptr.To(int64(0)),
			},
		}
		created, err := h.Clientset.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s/%s: %v", ns, name, err)
		}
		probes = append(probes, created)
		return created
	}
	checkInjected := func(t *testing.T, p *corev1.Pod) {
		t.Helper()
		var proxy *corev1.Container
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == fakeistiod.ContainerProxy {
				proxy = &p.Spec.Containers[i]
			}
		}
		if proxy == nil {
			t.Fatalf("pod %s/%s has no %s container: %v", p.Namespace, p.Name, fakeistiod.ContainerProxy, containerNames(p))
		}
		if proxy.Image != proxyImage {
			t.Errorf("pod %s/%s proxy image %q, want %q", p.Namespace, p.Name, proxy.Image, proxyImage)
		}
		var status struct {
			Containers []string `json:"containers"`
			Revision   string   `json:"revision"`
		}
		if err := json.Unmarshal([]byte(p.Annotations[fakeistiod.AnnotationStatus]), &status); err != nil {
			t.Errorf("pod %s/%s annotation %s = %q: %v", p.Namespace, p.Name, fakeistiod.AnnotationStatus, p.Annotations[fakeistiod.AnnotationStatus], err)
		}
		if status.Revision != harness.Revision {
			t.Errorf("pod %s/%s injected by revision %q, want %q", p.Namespace, p.Name, status.Revision, harness.Revision)
		}
		if got := p.Annotations[fakeistiod.AnnotationRev]; got != harness.Revision {
			t.Errorf("pod %s/%s annotation istio.io/rev=%q, want %q", p.Namespace, p.Name, got, harness.Revision)
		}
		if got := p.Labels[fakeistiod.LabelTunnel]; got != "http" {
			t.Errorf("pod %s/%s label %s=%q, want \"http\" (ambient profile enables HBONE)", p.Namespace, p.Name, fakeistiod.LabelTunnel, got)
		}
	}
	// The assessments about the fake istiod are registered only when it runs (E2E_FAKE_ISTIOD=off on
	// a real cluster lets the real istiod serve the webhooks).
	needFake := func(t *testing.T) *fakeistiod.Server {
		t.Helper()
		if h.Fake == nil {
			t.Fatal("assessment about the fake istiod registered while it is off")
		}
		return h.Fake
	}

	f := features.New("webhook path through the API server").
		WithLabel("feature", "webhooks").
		Assess("a pod in a namespace following a tag gets the revision's sidecar", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			checkInjected(t, newProbe(ctx, t, "shop", "probe-tag"))
			return ctx
		}).
		Assess("a pod in a namespace following the revision gets its sidecar", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			checkInjected(t, newProbe(ctx, t, "payments", "probe-rev"))
			return ctx
		}).
		Assess("the gateway chart's pods were injected through the default tag", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			pods, err := h.Clientset.CoreV1().Pods(harness.GatewayNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + harness.GatewayRelease})
			if err != nil || len(pods.Items) == 0 {
				t.Fatalf("gateway pods: %v (%d found)", err, len(pods.Items))
			}
			for i := range pods.Items {
				checkInjected(t, &pods.Items[i])
			}
			return ctx
		}).
		Assess("a pod in an ambient namespace gets no sidecar and is captured", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			p := newProbe(ctx, t, "orders", "probe-ambient")
			if _, ok := p.Annotations[fakeistiod.AnnotationStatus]; ok {
				t.Fatalf("ambient pod was injected: %v", containerNames(p))
			}
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				got, err := h.Clientset.CoreV1().Pods("orders").Get(ctx, p.Name, metav1.GetOptions{})
				return err == nil && got.Annotations["ambient.istio.io/redirection"] == "enabled", nil
			})
			if err != nil {
				t.Errorf("pod orders/%s never got ambient.istio.io/redirection=enabled: %v", p.Name, err)
			}
			return ctx
		})
	deleteProbes := func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		for _, p := range probes {
			_ = h.Clientset.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
		}
		return ctx
	}
	if h.Fake == nil {
		testenv.Test(t, f.Teardown(deleteProbes).Feature())
		return
	}
	f = f.Assess("Istio config labelled with the revision is validated by that revision", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		fake := needFake(t)
		ap := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
			"metadata": map[string]any{"name": "probe-validation", "namespace": "shop", "labels": map[string]any{"istio.io/rev": harness.Revision}},
			"spec":     map[string]any{"action": "ALLOW", "rules": []any{map[string]any{}}},
		}}
		if err := h.Applier.Apply(ctx, ap); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, c := range fake.Calls() {
			if c.Kind == "validate" && c.Name == "probe-validation" {
				seen[c.Revision] = true
			}
		}
		if !seen[harness.Revision] {
			t.Errorf("no validation call for revision %s recorded for AuthorizationPolicy shop/probe-validation (calls by revision: %v)", harness.Revision, seen)
		}
		return ctx
	})
	// In url mode the fake replaces clientConfig.service with a url, so applying the rendered tags
	// (which name a service) is rejected by the API server; service mode, the default where port 443
	// can be bound, keeps them. The re-apply assessment belongs to service mode only.
	if h.Fake.Mode() != fakeistiod.ModeURL {
		f = f.Assess("re-applying the charts' webhook objects does not conflict with the fake", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			fake := needFake(t)
			// Apply the tags over the live objects, as a tag move or `kubectl apply` does.
			if err := charts.ApplyTags(ctx, h.Helm, h.Applier, h.Istio, h.Istio.Tags); err != nil {
				t.Fatal(err)
			}
			syncFake(ctx, t, fake)
			checkInjected(t, newProbe(ctx, t, "shop", "probe-after-apply"))
			return ctx
		})
	}
	f = f.Assess("re-created tag webhooks are served again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		fake := needFake(t)
		for _, tag := range h.Istio.Tags {
			name := "istio-revision-tag-" + tag
			if err := h.Clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete %s: %v", name, err)
			}
		}
		if err := charts.ApplyTags(ctx, h.Helm, h.Applier, h.Istio, h.Istio.Tags); err != nil {
			t.Fatal(err)
		}
		syncFake(ctx, t, fake)
		checkInjected(t, newProbe(ctx, t, "shop", "probe-after-recreate"))
		return ctx
	}).
		Assess("no webhook call failed and none left the loopback", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			fake := needFake(t)
			problems, err := fake.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("webhook configuration: %s", p)
			}
			kinds := map[string]int{}
			for _, c := range fake.Calls() {
				kinds[c.Kind]++
			}
			if kinds["inject"] == 0 || kinds["validate"] == 0 {
				t.Errorf("expected injection and validation calls, got %v", kinds)
			}
			for _, c := range fake.Failures() {
				t.Errorf("failed webhook call: %+v", c)
			}
			for _, c := range fake.NonLoopback() {
				t.Errorf("webhook call off the loopback: %+v", c)
			}
			// The API server's own view: calls it could not make, or made and ignored the failure of.
			m, err := apiserverMetrics(ctx)
			if err != nil {
				t.Fatalf("API server metrics: %v", err)
			}
			if n := m.sum("apiserver_admission_webhook_rejection_count", `error_type="calling_webhook_error"`); n != 0 {
				t.Errorf("the API server failed to call a webhook %v times", n)
			}
			if n := m.sum("apiserver_admission_webhook_fail_open_count", ""); n != 0 {
				t.Errorf("the API server ignored %v failed webhook calls (failurePolicy Ignore)", n)
			}
			t.Logf("webhook calls by kind: %v; served on %v in mode %s", kinds, fake.Addresses(), fake.Mode())
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ctx = deleteProbes(ctx, t, cfg)
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("security.istio.io/v1")
			u.SetKind("AuthorizationPolicy")
			u.SetNamespace("shop")
			u.SetName("probe-validation")
			if err := h.Applier.Delete(ctx, u); err != nil {
				t.Errorf("delete AuthorizationPolicy shop/probe-validation: %v", err)
			}
			return ctx
		})
	testenv.Test(t, f.Feature())
}

func syncFake(ctx context.Context, t *testing.T, fake *fakeistiod.Server) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := fake.Sync(sctx); err != nil {
		t.Fatal(err)
	}
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

// metrics is the API server's /metrics text.
type metrics []string

func apiserverMetrics(ctx context.Context) (metrics, error) {
	b, err := h.Clientset.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var out metrics
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// sum adds the samples of a metric whose labels contain filter.
func (m metrics) sum(name, filter string) float64 {
	total := 0.0
	for _, l := range m {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		if filter != "" && !strings.Contains(l, filter) {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			total += v
		}
	}
	return total
}
