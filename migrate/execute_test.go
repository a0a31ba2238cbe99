package migrate_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/executetest"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"
)

// meshCRDs are the CRDs of the kinds the checkout fixture uses, as the API server serves them.
var meshCRDs = []struct{ group, kind, plural string }{
	{"security.istio.io", "AuthorizationPolicy", "authorizationpolicies"},
	{"security.istio.io", "PeerAuthentication", "peerauthentications"},
	{"security.istio.io", "RequestAuthentication", "requestauthentications"},
	{"networking.istio.io", "VirtualService", "virtualservices"},
	{"networking.istio.io", "DestinationRule", "destinationrules"},
	{"gateway.networking.k8s.io", "Gateway", "gateways"},
	{"gateway.networking.k8s.io", "HTTPRoute", "httproutes"},
}

// loadObjects reads YAML fixture files into objects for a World: typed where the scheme knows the
// kind, unstructured otherwise. CRDs of the fixtures are replaced by meshCRDs.
func loadObjects(t *testing.T, files ...string) []client.Object {
	t.Helper()
	dec := serializer.NewCodecFactory(observe.Scheme()).UniversalDeserializer()
	var out []client.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := utilyaml.Unmarshal(doc, &u.Object); err != nil || u.Object == nil {
				continue
			}
			if u.GetKind() == "CustomResourceDefinition" {
				continue
			}
			if obj, _, err := dec.Decode(doc, nil, nil); err == nil {
				out = append(out, obj.(client.Object))
				continue
			}
			out = append(out, u)
		}
	}
	for _, c := range meshCRDs {
		out = append(out, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: c.plural + "." + c.group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: c.group, Scope: apiextensionsv1.NamespaceScoped,
				Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: c.kind, Plural: c.plural},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
		})
	}
	return out
}

// checkoutWorld is the checkout fixture on a fake cluster that plays injection, istio-cni capture and
// istiod's status, with Deployments for its pods.
func checkoutWorld(t *testing.T) *executetest.World {
	t.Helper()
	w := executetest.NewWorld(t, loadObjects(t, "testdata/base.yaml", "testdata/migrate/checkout.yaml")...)
	if err := w.SynthesizeDeployments(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.SimulateMigration()
	return w
}

// namespaceView is what "the namespace is as it was" means: its labels, its Services' labels, every
// Istio and Gateway API object (labels, annotations, spec), and per workload how many pods run,
// how many with sidecars and how many captured.
type namespaceView struct {
	Labels    map[string]string
	Services  map[string]map[string]string
	Objects   map[string]map[string]any
	Workloads map[string]string
}

func viewOf(t *testing.T, c client.Client, ns string) namespaceView {
	t.Helper()
	ctx := context.Background()
	v := namespaceView{Services: map[string]map[string]string{}, Objects: map[string]map[string]any{}, Workloads: map[string]string{}}
	var n corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		t.Fatal(err)
	}
	v.Labels = n.Labels
	var svcs corev1.ServiceList
	_ = c.List(ctx, &svcs, client.InNamespace(ns))
	for _, s := range svcs.Items {
		v.Services[s.Name] = s.Labels
	}
	for _, k := range meshCRDs {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(k.group + "/v1")
		l.SetKind(k.kind + "List")
		_ = c.List(ctx, l, client.InNamespace(ns))
		for _, o := range l.Items {
			v.Objects[k.kind+" "+o.GetName()] = map[string]any{"labels": o.GetLabels(), "annotations": o.GetAnnotations(), "spec": o.Object["spec"]}
		}
	}
	var pods corev1.PodList
	_ = c.List(ctx, &pods, client.InNamespace(ns))
	count := map[string][3]int{}
	for _, p := range pods.Items {
		owner := p.Name
		if len(p.OwnerReferences) > 0 {
			owner = p.OwnerReferences[0].Name
		}
		x := count[owner]
		x[0]++
		if _, ok := p.Annotations[mesh.AnnotationSidecarStatus]; ok {
			x[1]++
		}
		if p.Annotations[mesh.AnnotationRedirection] == "enabled" {
			x[2]++
		}
		count[owner] = x
	}
	for k, x := range count {
		v.Workloads[k] = fmt.Sprintf("%d pods, %d with sidecars, %d captured", x[0], x[1], x[2])
	}
	return v
}

func executor(t *testing.T, w *executetest.World) *execute.Executor {
	return w.Executor(func(o *execute.Options) {
		o.Journal = &execute.MemoryJournal{}
		o.BackupStore = &execute.MemoryBackupStore{}
	})
}

func checkoutPlan(t *testing.T, w *executetest.World, backup string) *plan.Plan {
	t.Helper()
	s, err := w.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	opts := checkoutOptions()
	opts.BackupFile = backup
	p, err := migrate.MigrateNamespace(s, "checkout", opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMigrationRunsOnAFakeClusterAndEveryGateHolds(t *testing.T) {
	w := checkoutWorld(t)
	backup := filepath.Join(t.TempDir(), "checkout.json")
	p := checkoutPlan(t, w, backup)
	res, err := executor(t, w).Apply(context.Background(), p, execute.ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !res.Done {
		t.Fatalf("not done: %+v", res)
	}
	v := viewOf(t, w.Base, "checkout")
	wantLabels := map[string]string{mesh.LabelDataplaneMode: "ambient", mesh.LabelUseWaypoint: "waypoint"}
	if d := cmp.Diff(wantLabels, v.Labels); d != "" {
		t.Errorf("namespace labels (-want +got):\n%s", d)
	}
	var objs []string
	for k := range v.Objects {
		objs = append(objs, k)
	}
	sort.Strings(objs)
	want := []string{"AuthorizationPolicy api-port", "AuthorizationPolicy no-delete-waypoint", "AuthorizationPolicy web-get-waypoint", "Gateway waypoint", "HTTPRoute web"}
	if d := cmp.Diff(want, objs); d != "" {
		t.Errorf("objects after the migration (-want +got):\n%s", d)
	}
	for k, s := range v.Workloads {
		if !strings.HasSuffix(s, "0 with sidecars, "+strings.Fields(s)[0]+" captured") {
			t.Errorf("workload %s: %s", k, s)
		}
	}
	fi, err := os.Stat(backup)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file %s: %v, mode %v; want it written 0600", backup, err, fi)
	}
	data, _ := os.ReadFile(backup)
	for _, name := range []string{`"web-get"`, `"no-delete"`, `"api-port"`, `"web-get-waypoint"`, `"waypoint"`} {
		if !bytes.Contains(data, []byte(name)) {
			t.Errorf("the backup does not hold %s", name)
		}
	}
}

// TestRollingBackFromEveryStepRestoresTheNamespace applies the plan up to each step in turn, rolls
// everything back, and compares the namespace with how it started.
func TestRollingBackFromEveryStepRestoresTheNamespace(t *testing.T) {
	p := checkoutPlan(t, checkoutWorld(t), "/tmp/unused.json")
	for _, st := range p.Steps {
		t.Run(strings.TrimPrefix(st.ID, "migrate/checkout/"), func(t *testing.T) {
			w := checkoutWorld(t)
			before := viewOf(t, w.Base, "checkout")
			p := checkoutPlan(t, w, filepath.Join(t.TempDir(), "backup.json"))
			e := executor(t, w)
			ctx := context.Background()
			if _, err := e.Apply(ctx, p, execute.ApplyOptions{Until: st.ID}); err != nil {
				t.Fatalf("Apply until %s: %v", st.ID, err)
			}
			if _, err := e.RollbackTo(ctx, p, p.Steps[0].ID); err != nil {
				t.Fatalf("RollbackTo: %v", err)
			}
			if d := cmp.Diff(before, viewOf(t, w.Base, "checkout")); d != "" {
				t.Errorf("after rolling back from %s the namespace differs (-before +after):\n%s", st.ID, d)
			}
		})
	}
}

func TestABackupFileThatCannotBeWrittenStopsTheRunBeforeAnyChange(t *testing.T) {
	w := checkoutWorld(t)
	p := checkoutPlan(t, w, filepath.Join(t.TempDir(), "missing-dir", "backup.json"))
	before := viewOf(t, w.Base, "checkout")
	_, err := executor(t, w).Apply(context.Background(), p, execute.ApplyOptions{})
	if !errors.Is(err, execute.ErrPrecondition) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v; want a precondition failure naming the missing directory", err)
	}
	if d := cmp.Diff(before, viewOf(t, w.Base, "checkout")); d != "" {
		t.Errorf("the namespace changed (-before +after):\n%s", d)
	}
	// Another plan's backup in the file is not overwritten either.
	other := filepath.Join(t.TempDir(), "taken.json")
	if err := os.WriteFile(other, []byte(`{"plan":"sha256:someoneelse","step":"x","entries":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p = checkoutPlan(t, w, other)
	_, err = executor(t, w).Apply(context.Background(), p, execute.ApplyOptions{})
	if !errors.Is(err, execute.ErrPrecondition) || !strings.Contains(err.Error(), "another plan") {
		t.Fatalf("err = %v; want a precondition failure about another plan's backup", err)
	}
}

func TestAWaypointThatNeverBecomesReadyTimesOutNamingIt(t *testing.T) {
	w := checkoutWorld(t)
	w.NeverProgram("checkout/waypoint")
	p := checkoutPlan(t, w, filepath.Join(t.TempDir(), "backup.json"))
	e := w.Executor(func(o *execute.Options) { o.Journal = &execute.MemoryJournal{}; o.PollInterval = 10 * time.Second })
	_, err := e.Apply(context.Background(), p, execute.ApplyOptions{})
	var se *execute.StepError
	if !errors.As(err, &se) || se.StepID != "migrate/checkout/waypoint/programmed" || !errors.Is(err, execute.ErrTimeout) ||
		!strings.Contains(err.Error(), "Gateway checkout/waypoint") {
		t.Fatalf("err = %v; want a timeout of step waypoint/programmed naming Gateway checkout/waypoint", err)
	}
	v := viewOf(t, w.Base, "checkout")
	if _, ok := v.Labels[mesh.LabelDataplaneMode]; ok {
		t.Error("the namespace was labelled for ambient although its waypoint never became ready")
	}
}
