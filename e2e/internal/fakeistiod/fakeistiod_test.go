package fakeistiod

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

const valuesJSON = `{"global":{"hub":"docker.io/istio","tag":"1.30.3","variant":"distroless","proxy":{"image":"proxyv2"}},"revision":"1-30-3"}`
const meshYAML = "defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: \"true\"\n"

func revisionObjects() []runtime.Object {
	return []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector-1-30-3", Namespace: "istio-system"}, Data: map[string]string{"values": valuesJSON}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-1-30-3", Namespace: "istio-system"}, Data: map[string]string{"mesh": meshYAML}},
	}
}

func TestProxyImageFollowsIstiodRules(t *testing.T) {
	rc, err := ParseRevisionConfig("1-30-3", valuesJSON, meshYAML)
	if err != nil {
		t.Fatal(err)
	}
	if !rc.EnableHBONE {
		t.Error("HBONE not read from mesh config")
	}
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{nil, "docker.io/istio/proxyv2:1.30.3-distroless"},
		{map[string]string{AnnotationProxyImageType: "default"}, "docker.io/istio/proxyv2:1.30.3"},
		{map[string]string{AnnotationProxyImage: "example.com/p:1"}, "example.com/p:1"},
	} {
		if got := rc.ProxyImageFor(tc.annotations); got != tc.want {
			t.Errorf("ProxyImageFor(%v) = %q, want %q", tc.annotations, got, tc.want)
		}
	}
}

func TestInjectionPatchAddsProxyStatusAndLabels(t *testing.T) {
	rc, _ := ParseRevisionConfig("1-30-3", valuesJSON, meshYAML)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-5d9c7b-", Labels: map[string]string{"pod-template-hash": "5d9c7b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	patch, changed, err := InjectionPatch(pod, rc)
	if err != nil || !changed {
		t.Fatalf("InjectionPatch: changed=%v err=%v", changed, err)
	}
	var ops []struct {
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range ops {
		got[o.Path] = string(o.Value)
	}
	for path, want := range map[string]string{
		"/spec/containers":      `"name":"istio-proxy","image":"docker.io/istio/proxyv2:1.30.3-distroless"`,
		"/metadata/annotations": `"sidecar.istio.io/status":"{\"initContainers\":null,\"containers\":[\"istio-proxy\"],\"volumes\":null,\"imagePullSecrets\":null,\"revision\":\"1-30-3\"}"`,
		"/metadata/labels":      `"service.istio.io/canonical-name":"web"`,
	} {
		if !strings.Contains(got[path], want) {
			t.Errorf("patch %s = %s, want it to contain %s", path, got[path], want)
		}
	}
	if !strings.Contains(got["/metadata/labels"], `"networking.istio.io/tunnel":"http"`) {
		t.Errorf("labels %s lack the HBONE tunnel label", got["/metadata/labels"])
	}
	pod.Annotations = map[string]string{AnnotationStatus: "{}"}
	if _, changed, _ := InjectionPatch(pod, rc); changed {
		t.Error("an injected pod was injected again")
	}
}

func TestLoopbackChecks(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:443": true, "127.96.0.10:443": true, "[::1]:8443": true, "localhost": true,
		"10.96.0.1:443": false, "192.0.2.1": false, "example.com:443": false,
	} {
		if got := IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
	if !IsLoopbackURL("https://127.0.0.1:1234/inject/x") || IsLoopbackURL("https://10.0.0.1/validate") {
		t.Error("IsLoopbackURL misjudged")
	}
}

func injectorMWC(svcPort int32) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector-1-30-3", Labels: map[string]string{"app": "sidecar-injector", "istio.io/rev": "1-30-3"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "rev.namespace.sidecar-injector.istio.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "istio-system", Name: "istiod-1-30-3", Path: strPtr("/inject"), Port: &svcPort,
			}},
		}},
	}
}

func strPtr(s string) *string { return &s }

// admit sends an AdmissionReview for a pod to url, trusting ca, and returns the response.
func admit(t *testing.T, url string, ca []byte, serverName string) *admissionv1.AdmissionResponse {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("bad CA bundle")
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName}}}
	pod, _ := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}})
	review, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u1", Operation: admissionv1.Create, Namespace: "shop", Name: "p",
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: pod}},
	})
	resp, err := c.Post(url, "application/json", bytes.NewReader(review))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		t.Fatalf("response: %v", err)
	}
	return out.Response
}

func TestURLModePointsWebhooksAndInjects(t *testing.T) {
	objs := append(revisionObjects(), injectorMWC(443))
	cs := fake.NewClientset(objs...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{Client: cs, Mode: ModeURL, Resync: 100 * time.Millisecond, Settle: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "istio-sidecar-injector-1-30-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc := m.Webhooks[0].ClientConfig
	if cc.Service != nil || cc.URL == nil || !strings.HasSuffix(*cc.URL, "/inject/1-30-3") || !IsLoopbackURL(*cc.URL) || !bytes.Equal(cc.CABundle, s.CABundle()) {
		t.Fatalf("clientConfig not pointed at the fake: %+v", cc)
	}
	r := admit(t, *cc.URL, cc.CABundle, "")
	if !r.Allowed || len(r.Patch) == 0 {
		t.Fatalf("admission response %+v", r)
	}
	if problems, err := s.Verify(ctx); err != nil || len(problems) > 0 {
		t.Errorf("Verify: %v %v", problems, err)
	}
	if f := s.Failures(); len(f) > 0 {
		t.Errorf("failures: %+v", f)
	}
	if calls := s.Calls(); len(calls) != 1 || calls[0].Revision != "1-30-3" || !calls[0].Mutated || !IsLoopbackAddr(calls[0].RemoteAddr) {
		t.Errorf("calls %+v", calls)
	}
}

func TestServiceModeListensOnTheClusterIPAndPatchesOnlyTheCABundle(t *testing.T) {
	// A high port on a loopback ClusterIP stands for :443 so the test needs no privilege.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istiod-1-30-3", Namespace: "istio-system", Labels: map[string]string{"istio.io/rev": "1-30-3"}},
		Spec:       corev1.ServiceSpec{ClusterIP: "127.0.0.1"},
	}
	objs := append(revisionObjects(), svc, injectorMWC(int32(port)))
	cs := fake.NewClientset(objs...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{Client: cs, Mode: ModeService, Resync: 100 * time.Millisecond, Settle: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m, _ := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "istio-sidecar-injector-1-30-3", metav1.GetOptions{})
	cc := m.Webhooks[0].ClientConfig
	if cc.Service == nil || cc.URL != nil || !bytes.Equal(cc.CABundle, s.CABundle()) {
		t.Fatalf("clientConfig %+v: want the service kept and the CA patched", cc)
	}
	// The API server calls https://<svc>.<ns>.svc:<port><path> at the ClusterIP.
	r := admit(t, "https://127.0.0.1:"+strconv.Itoa(port)+"/inject", cc.CABundle, "istiod-1-30-3.istio-system.svc")
	if !r.Allowed || len(r.Patch) == 0 {
		t.Fatalf("admission response %+v", r)
	}
	if calls := s.Calls(); len(calls) != 1 || calls[0].Revision != "1-30-3" {
		t.Errorf("calls %+v", calls)
	}

	// A Service outside the loopback is refused, never dialled.
	svc.Spec.ClusterIP = "10.96.0.10"
	if _, err := cs.CoreV1().Services("istio-system").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.reconcile(ctx); err == nil || !strings.Contains(err.Error(), "outside the loopback") {
		t.Errorf("reconcile with a non-loopback ClusterIP: %v", err)
	}
}
