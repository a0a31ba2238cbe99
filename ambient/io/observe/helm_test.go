package observe_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// flow renders a map as a YAML flow mapping with quoted values, keys sorted.
func flow(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%q: %q", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// helmMeta is the metadata Helm and the Istio charts give an object of a release: Helm's
// annotations (release, releaseNS; none when release is "") and the istio.labels helper's labels
// (instance, version, helm.sh/chart=chart; chart "" leaves that label out).
type helmMeta struct {
	release, releaseNS, instance, chart, appVersion string
}

// of renders the metadata of an object with that Helm metadata.
func (h helmMeta) of(name, namespace string, extraLabels map[string]string) string {
	ann, lbl := map[string]string{}, map[string]string{}
	if h.release != "" {
		ann["meta.helm.sh/release-name"] = h.release
		ann["meta.helm.sh/release-namespace"] = h.releaseNS
		lbl["app.kubernetes.io/managed-by"] = "Helm"
	}
	if h.instance != "" {
		lbl["app.kubernetes.io/instance"] = h.instance
	}
	if h.chart != "" {
		lbl["helm.sh/chart"] = h.chart
	}
	if h.appVersion != "" {
		lbl["app.kubernetes.io/version"] = h.appVersion
	}
	maps.Copy(lbl, extraLabels)
	ns := ""
	if namespace != "" {
		ns = ", namespace: " + namespace
	}
	return fmt.Sprintf("{name: %s%s, annotations: %s, labels: %s}", name, ns, flow(ann), flow(lbl))
}

// released is the Helm metadata of a chart installed as release in istio-system.
func released(release, chart string) helmMeta {
	return helmMeta{release: release, releaseNS: "istio-system", instance: release, chart: chart, appVersion: "1.30.3"}
}

func istiodObj(ns string, h helmMeta) string {
	return "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: " + h.of("istiod-1-30-3", ns, nil) +
		"\nspec: {template: {metadata: {labels: {app: istiod, istio.io/rev: 1-30-3}}, spec: {containers: [{name: discovery, image: docker.io/istio/pilot:1.30.3}]}}}\n"
}

func cniObj(h helmMeta) string {
	return "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: " + h.of("istio-cni-node", "istio-system", nil) +
		"\nspec: {template: {metadata: {labels: {k8s-app: istio-cni-node}}, spec: {containers: [{name: install-cni, image: docker.io/istio/install-cni:1.30.3}]}}}\n"
}

func ztunnelObj(h helmMeta) string {
	return "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: " + h.of("ztunnel", "istio-system", nil) +
		"\nspec: {template: {metadata: {labels: {app: ztunnel}}, spec: {containers: [{name: istio-proxy, image: docker.io/istio/ztunnel:1.30.3}]}}}\n"
}

func gatewayObj(ns string, h helmMeta) string {
	return "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: " + h.of("istio-ingress", ns, nil) +
		"\nspec: {template: {metadata: {labels: {sidecar.istio.io/inject: \"true\"}}, spec: {containers: [{name: istio-proxy, image: auto}]}}}\n"
}

func crdObj(name string, h helmMeta) string {
	return "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: " + h.of(name, "", nil) + "\n"
}

func validatorObj(h helmMeta) string {
	return "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: " +
		h.of("istiod-default-validator", "", map[string]string{"istio.io/rev": "1-30-3"}) + "\n"
}

func tagObjs(tag string, h helmMeta) string {
	l := map[string]string{"istio.io/tag": tag, "istio.io/rev": "1-30-3"}
	return "---\napiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: " + h.of("istio-revision-tag-"+tag, "", l) +
		"\n---\napiVersion: v1\nkind: Service\nmetadata: " + h.of("istiod-revision-tag-"+tag, "istio-system", l) + "\n"
}

// inferred is the release the objects describe when its records are missing.
func inferred(ns, name, chart, version, app string) mesh.HelmRelease {
	return mesh.HelmRelease{Name: name, Namespace: ns, Chart: chart, ChartVersion: version, AppVersion: app, Inferred: true}
}

func TestHelmReleasesWithoutRecordsAreReadFromTheirObjects(t *testing.T) {
	istiod := released("istiod-1-30-3", "istiod-1.30.3")
	base := released("istio-base", "base-1.30.3")
	tests := []struct {
		name  string
		input string
		want  []mesh.HelmRelease
	}{
		{name: "every Istio component installed by Helm gives its release",
			input: istiodObj("istio-system", istiod) + cniObj(released("istio-cni", "cni-1.30.3")) +
				ztunnelObj(released("ztunnel", "ztunnel-1.30.3")) +
				gatewayObj("istio-ingress", helmMeta{release: "istio-ingress", releaseNS: "istio-ingress", instance: "istio-ingress", chart: "gateway-1.30.3", appVersion: "1.30.3"}) +
				crdObj("authorizationpolicies.security.istio.io", base),
			want: []mesh.HelmRelease{
				inferred("istio-ingress", "istio-ingress", "gateway", "1.30.3", "1.30.3"),
				inferred("istio-system", "istio-base", "base", "1.30.3", "1.30.3"),
				inferred("istio-system", "istio-cni", "cni", "1.30.3", "1.30.3"),
				inferred("istio-system", "istiod-1-30-3", "istiod", "1.30.3", "1.30.3"),
				inferred("istio-system", "ztunnel", "ztunnel", "1.30.3", "1.30.3"),
			}},
		{name: "the default validator names the base release",
			input: validatorObj(base),
			want:  []mesh.HelmRelease{inferred("istio-system", "istio-base", "base", "1.30.3", "1.30.3")}},
		{name: "a tag webhook and Service rendered through an istiod release name that release",
			input: tagObjs("prod", istiod),
			want:  []mesh.HelmRelease{inferred("istio-system", "istiod-1-30-3", "istiod", "1.30.3", "1.30.3")}},
		{name: "a workload of a chart without helm.sh/chart gives its chart but no version",
			input: istiodObj("istio-system", helmMeta{release: "istiod", releaseNS: "istio-system"}),
			want:  []mesh.HelmRelease{inferred("istio-system", "istiod", "istiod", "", "")}},
		{name: "a chart version with build metadata is read back from the label's underscore",
			input: ztunnelObj(released("ztunnel", "ztunnel-1.30.3_gke.2")),
			want:  []mesh.HelmRelease{inferred("istio-system", "ztunnel", "ztunnel", "1.30.3+gke.2", "1.30.3")}},
		{name: "the component's workload wins over other objects of the release that disagree",
			input: tagObjs("prod", released("istiod-1-30-3", "istiod-1.29.0")) + istiodObj("istio-system", istiod),
			want:  []mesh.HelmRelease{inferred("istio-system", "istiod-1-30-3", "istiod", "1.30.3", "1.30.3")}},
		{name: "the winner does not depend on the order objects arrive in",
			input: istiodObj("istio-system", istiod) + tagObjs("prod", released("istiod-1-30-3", "istiod-1.29.0")),
			want:  []mesh.HelmRelease{inferred("istio-system", "istiod-1-30-3", "istiod", "1.30.3", "1.30.3")}},
		{name: "the release-namespace annotation wins over the object's namespace",
			input: gatewayObj("istio-ingress", released("istio-ingress", "gateway-1.30.3")),
			want:  []mesh.HelmRelease{inferred("istio-system", "istio-ingress", "gateway", "1.30.3", "1.30.3")}},
		{name: "objects applied from helm template carry no Helm annotations and give no release",
			input: istiodObj("istio-system", helmMeta{instance: "istiod-1-30-3", chart: "istiod-1.30.3", appVersion: "1.30.3"}) +
				tagObjs("default", helmMeta{instance: "istiod", chart: "istiod-1.30.3"})},
		{name: "an Istio workload labelled with another chart gives no release",
			input: gatewayObj("edge", helmMeta{release: "edge", releaseNS: "edge", chart: "acme-edge-2.0.0"})},
		{name: "Gateway API CRDs installed by Helm are no Istio release",
			input: crdObj("gateways.gateway.networking.k8s.io", helmMeta{release: "gateway-api", releaseNS: "kube-system", chart: "gateway-api-1.6.3"})},
		{name: "a release record wins over the objects",
			input: istiodObj("istio-system", istiod) + helmSecret("istio-system", "istiod-1-30-3", "istiod", 2, "deployed", true),
			want: []mesh.HelmRelease{{Name: "istiod-1-30-3", Namespace: "istio-system", Chart: "istiod", ChartVersion: "1.29.2", AppVersion: "1.29.2",
				Revision: 2, Status: "deployed", Values: map[string]any{"revision": "v2"}}}},
		{name: "a record of a chart that is not Istio's is neither read as a release nor inferred over",
			input: istiodObj("istio-system", istiod) + helmSecret("istio-system", "istiod-1-30-3", "platform-istio", 4, "deployed", true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, tt.input)
			if d := cmp.Diff(tt.want, s.HelmReleases); d != "" {
				t.Errorf("Helm releases (-want +got):\n%s", d)
			}
		})
	}
}

// corruptRecord is a Helm storage Secret whose data.release is the YAML value data.
func corruptRecord(ns, release, data string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: sh.helm.release.v1.%[2]s.v1
  namespace: %[1]s
  labels: {owner: helm, name: %[2]s, status: deployed, version: "1"}
data:
  release: %[3]s
`, ns, release, data)
}

// b64 is the Secret encoding of s.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// record encodes JSON as Helm stores it (base64 of gzip), then in the Secret's encoding.
func record(json string) string {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write([]byte(json))
	_ = w.Close()
	return b64(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

const secretValue = "hunter2-do-not-print"

func TestOnlyTheRecordsOfIstioReleasesAreRead(t *testing.T) {
	istiod := helmMeta{release: "istiod", releaseNS: "istio-system", instance: "istiod", chart: "istiod-1.29.2"}
	cni := helmMeta{release: "istio-cni", releaseNS: "istio-system", instance: "istio-cni", chart: "cni-1.29.2"}
	objects := istiodObj("istio-system", istiod) + cniObj(cni)
	records := helmSecret("istio-system", "istiod", "istiod", 2, "superseded", true) +
		helmSecret("istio-system", "istiod", "istiod", 3, "failed", true) +
		helmSecret("istio-system", "istiod", "istiod", 1, "superseded", false) +
		helmSecret("istio-system", "istio-cni", "cni", 1, "deployed", false)
	want := []mesh.HelmRelease{
		{Name: "istio-cni", Namespace: "istio-system", Chart: "cni", ChartVersion: "1.29.2", AppVersion: "1.29.2", Revision: 1, Status: "deployed",
			Values: map[string]any{"revision": "v1"}},
		// Its latest record failed: its values are those it was last deployed with (revision 2).
		{Name: "istiod", Namespace: "istio-system", Chart: "istiod", ChartVersion: "1.29.2", AppVersion: "1.29.2", Revision: 3, Status: "failed",
			Values: map[string]any{"revision": "v2"}},
	}
	tests := []struct {
		name  string
		extra string
	}{
		{"the newest revision of each Istio release is kept", ""},
		{"a valid record of another team's release is not read",
			helmSecret("apps", "shop", "shop-frontend", 7, "deployed", true)},
		{"a corrupt record of another release in another namespace is never decoded",
			corruptRecord("payments", "payments", b64("not base64!"))},
		{"a corrupt record of another release in an Istio namespace is never decoded",
			corruptRecord("istio-system", "cert-manager", record(`{"name": "cert-manager", "config": {"password": "`+secretValue))},
		{"a record of another release that is not even base64 at the Secret level is never decoded",
			corruptRecord("payments", "payments", "'%%%'")},
		{"a record of another release without data is never read",
			"---\napiVersion: v1\nkind: Secret\nmetadata: {name: sh.helm.release.v1.x.v1, namespace: payments, labels: {owner: helm, name: x}}\n"},
		{"a record named like an Istio release in another namespace is another release",
			corruptRecord("payments", "istiod", "'%%%'")},
		{"Secrets not labelled owner=helm are not release records",
			"---\napiVersion: v1\nkind: Secret\nmetadata: {name: tls, namespace: istio-system, labels: {name: istiod}}\ndata: {tls.crt: eA==}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, objects+records+tt.extra)
			if d := cmp.Diff(want, s.HelmReleases); d != "" {
				t.Errorf("Helm releases (-want +got):\n%s", d)
			}
		})
	}
}

func TestABrokenRecordOfAnIstioReleaseIsAnErrorThatQuotesNothingOfIt(t *testing.T) {
	objects := istiodObj("istio-system", released("istiod-1-30-3", "istiod-1.30.3"))
	secret := "Secret istio-system/sh.helm.release.v1.istiod-1-30-3.v1"
	tests := []struct {
		name    string
		record  string
		wantErr []string
	}{
		{"a record that is not base64 inside", corruptRecord("istio-system", "istiod-1-30-3", b64(secretValue+"!")),
			[]string{secret, "Istio release istiod-1-30-3", "not base64", "repair or delete it"}},
		{"a record that is not base64 at the Secret level", corruptRecord("istio-system", "istiod-1-30-3", "'"+secretValue+"%'"),
			[]string{secret, "not base64"}},
		{"a record whose JSON breaks off inside the values", corruptRecord("istio-system", "istiod-1-30-3", record(`{"config": {"password": "`+secretValue)),
			[]string{secret, "not JSON"}},
		{"a record whose JSON has a syntax error after a value", corruptRecord("istio-system", "istiod-1-30-3", record(`{"config": {"password": "`+secretValue+`" x}}`)),
			[]string{secret, "not JSON (syntax error at byte"}},
		{"a record with a field of the wrong type", corruptRecord("istio-system", "istiod-1-30-3", record(`{"version": "`+secretValue+`"}`)),
			[]string{secret, "field version is a JSON string, want int"}},
		{"a record that is not gzip though it says so", corruptRecord("istio-system", "istiod-1-30-3", b64(base64.StdEncoding.EncodeToString([]byte("\x1f\x8b"+secretValue)))),
			[]string{secret, "not valid gzip"}},
		{"a record without data.release", "---\napiVersion: v1\nkind: Secret\nmetadata: {name: sh.helm.release.v1.istiod-1-30-3.v1, namespace: istio-system, labels: {owner: helm, name: istiod-1-30-3}}\n",
			[]string{secret, "has no data.release"}},
		{"a record whose data.release is not text", corruptRecord("istio-system", "istiod-1-30-3", "{password: "+secretValue+"}"),
			[]string{secret, "data.release is a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := observeYAML(t, objects+tt.record)
			if !errors.Is(err, observe.ErrInvalidInput) {
				t.Fatalf("error = %v, want one wrapping ErrInvalidInput", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q quotes the record's data", err)
			}
		})
	}
}

// otherTeams are release records of charts that are not Istio's, all broken.
func otherTeams() []client.Object {
	rec := func(ns, release string, data []byte) client.Object {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1." + release + ".v1",
				Labels: map[string]string{"owner": "helm", "name": release, "status": "deployed", "version": "1"}},
			Type: "helm.sh/release.v1",
			Data: map[string][]byte{"release": data},
		}
	}
	return []client.Object{
		rec("payments", "payments", []byte("not base64!")),
		rec("istio-system", "cert-manager", []byte(base64.StdEncoding.EncodeToString([]byte(`{"config": {"password": "`+secretValue)))),
	}
}

func TestLiveReadsOnlyTheRecordsOfIstioReleases(t *testing.T) {
	ctx := context.Background()
	want, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fc := newFakeCluster(t, append(demoObjects(t), otherTeams()...), nil)
	var gets []string
	r := interceptor.NewClient(fc, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets = append(gets, fmt.Sprintf("%T %s", obj, key))
			return c.Get(ctx, key, obj, opts...)
		},
	})
	got, err := observe.Live(ctx, r, observe.Options{PageSize: 2})
	if err != nil {
		t.Fatalf("a broken record of another team's release failed the observation: %v", err)
	}
	if d := cmp.Diff(want, got, ignoreObservation); d != "" {
		t.Errorf("snapshot differs from the demo's (-want +got):\n%s", d)
	}
	if len(gets) != 0 {
		t.Errorf("the observer made GET requests %v; it only lists", gets)
	}
	var secretLists []string
	for _, c := range fc.listCalls() {
		if c.gvk != secretList {
			continue
		}
		if c.namespace == "" {
			t.Errorf("a Secret LIST was made cluster-wide (selector %q)", c.labels)
		}
		if !strings.HasPrefix(c.labels, "name in (") || !strings.HasSuffix(c.labels, "),owner=helm") {
			t.Errorf("Secret LIST in %q selects %q; want owner=helm and the Istio releases by name", c.namespace, c.labels)
		}
		if !c.continued {
			secretLists = append(secretLists, c.namespace)
		}
	}
	if d := cmp.Diff([]string{"istio-ingress", "istio-system"}, secretLists); d != "" {
		t.Errorf("namespaces whose release records were listed (-want +got):\n%s", d)
	}
}

func TestOfflineSkipsOtherTeamsRecordsAndMatchesLive(t *testing.T) {
	ctx := context.Background()
	want, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	err = fs.WalkDir(demo.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(demo.Files(), p)
		fsys[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	fsys["zz-other-teams.yaml"] = &fstest.MapFile{Data: []byte(
		corruptRecord("payments", "payments", b64("not base64!")) +
			corruptRecord("istio-system", "cert-manager", record(`{"config": {"password": "`+secretValue)) +
			corruptRecord("istio-system", "monitoring", "'%%%'"))}
	got, err := observe.FS(ctx, "dump", fsys, observe.Options{})
	if err != nil {
		t.Fatalf("a broken record of another team's release failed the observation: %v", err)
	}
	if d := cmp.Diff(want, got, ignoreObservation); d != "" {
		t.Errorf("snapshot differs from the demo's (-want +got):\n%s", d)
	}
}

func TestLiveReportsABrokenRecordOfAnIstioRelease(t *testing.T) {
	objs := demoObjects(t)
	const name = "sh.helm.release.v1.istiod-1-30-3.v2"
	found := false
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && s.Namespace == "istio-system" && s.Name == name {
			s.Data["release"] = []byte(base64.StdEncoding.EncodeToString([]byte(`{"config": {"password": "` + secretValue)))
			found = true
		}
	}
	if !found {
		t.Fatalf("the demo has no Secret %s", name)
	}
	_, err := observe.Live(context.Background(), newFakeCluster(t, objs, nil), observe.Options{})
	if !errors.Is(err, observe.ErrInvalidInput) {
		t.Fatalf("error = %v, want one wrapping ErrInvalidInput", err)
	}
	for _, want := range []string{"Secret istio-system/" + name, "Istio release istiod-1-30-3", "repair or delete it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q quotes the record's data", err)
	}
}

func TestLiveMakesNoSecretRequestWithoutIstioReleases(t *testing.T) {
	tests := []struct {
		name string
		objs []client.Object
	}{
		{"a cluster without Istio, only other teams' releases", nil},
		{"Istio objects that no Helm release installed", []client.Object{&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istiod-revision-tag-prod", Labels: map[string]string{"istio.io/tag": "prod"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, append(tt.objs, otherTeams()...), nil)
			s, err := observe.Live(context.Background(), fc, observe.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range fc.listCalls() {
				if c.gvk == secretList {
					t.Errorf("Secrets listed in %q with %q although no Istio release exists", c.namespace, c.labels)
				}
			}
			if len(s.HelmReleases) != 0 || s.Observation.Requests != len(fc.listCalls()) {
				t.Errorf("releases %v, requests %d for %d calls", s.HelmReleases, s.Observation.Requests, len(fc.listCalls()))
			}
		})
	}
}
