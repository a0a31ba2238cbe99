//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
	"github.com/ambientkit/ambientkit/migrate"
)

// The namespace TestMigrateNamespace migrates, and the one holding its runs' Lease and rollback
// backups. Both are created and deleted by the test, so the cluster is left as the other suites
// (and zz_upgrade_test.go, which runs after this file) expect it.
const (
	migrateNS   = "migrate-e2e"
	migrateBook = "migrate-e2e-runs"
)

// migrateObjects are the Istio and Gateway API kinds the comparison of the namespace reads.
var migrateObjects = []schema.GroupVersionResource{
	{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"},
	{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"},
	{Group: "networking.istio.io", Version: "v1", Resource: "destinationrules"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"},
}

// migrateState is "the namespace as it is" for the comparison after a rollback: its labels, every
// Istio and Gateway API object (labels, annotations, spec), and per Deployment its pods, with
// sidecars and captured (terminating pods left out).
type migrateState struct {
	Labels    map[string]string
	Objects   map[string]map[string]any
	Workloads map[string]string
}

type migrateRun struct {
	dyn    dynamic.Interface
	status *fakeistiod.StatusWriter
	before migrateState
	dir    string
	// plan is the first plan; every run re-plans from a fresh snapshot and must get the same steps.
	plan *plan.Plan
	// approved are the approval steps the executors asked for, in order.
	approved []string
}

type migrateKey struct{}

func migration(ctx context.Context, t *testing.T) *migrateRun {
	r, ok := ctx.Value(migrateKey{}).(*migrateRun)
	if !ok {
		t.Fatal("the migration setup did not run")
	}
	return r
}

// TestMigrateNamespace moves a sidecar namespace (pods injected through istio-injection=enabled, an
// L7 ALLOW policy, an L4 one, an L7-only DENY, a VirtualService and a DestinationRule) to ambient
// with a new waypoint through the public API only (observe.Live, migrate.Readiness,
// migrate.MigrateNamespace, execute.Apply), checks every gate on the live cluster, then rolls back
// from each step in turn and compares the namespace with how it started.
func TestMigrateNamespace(t *testing.T) {
	f := features.New("migrate a namespace from sidecars to ambient, and back from every step").
		WithLabel("feature", "migrate").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := &migrateRun{dir: t.TempDir()}
			var err error
			if r.dyn, err = dynamic.NewForConfig(h.RestConfig); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			createMigrationNamespace(ctx, t)
			if h.Fake != nil { // no istiod writes status on kwok: the fake plays it, for this namespace only
				if r.status, err = fakeistiod.StartStatus(ctx, fakeistiod.StatusOptions{Dynamic: r.dyn, Client: h.Clientset,
					Namespaces: []string{migrateNS}, Logf: h.Logf}); err != nil {
					t.Fatal(err)
				}
			}
			r.before = waitMigrateState(ctx, t, r.dyn, func(s migrateState) string {
				if len(s.Workloads) != 2 || s.Workloads["api"] != "1 pods, 1 with sidecars, 0 captured" || s.Workloads["web"] != "2 pods, 2 with sidecars, 0 captured" {
					return fmt.Sprintf("workloads %v, want api and web on sidecars", s.Workloads)
				}
				return ""
			})
			t.Logf("namespace %s with sidecars ready in %s", migrateNS, time.Since(t0).Round(100*time.Millisecond))
			return context.WithValue(ctx, migrateKey{}, r)
		}).
		Assess("the readiness report finds the policies and routes that need the waypoint", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := liveSnapshot(ctx, t)
			rep, err := migrate.Readiness(s, migrateNS, migrate.ReadinessOptions{Waypoint: &migrate.WaypointRef{Name: "waypoint"}})
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, f := range plan.Stopping(rep.Findings) {
				codes = append(codes, string(f.Code)+" "+f.Object.Name)
			}
			want := []string{"AUTHZ_POLICY_BECOMES_DENY_ALL web-get", "AUTHZ_POLICY_HAS_NO_EFFECT no-delete", "VIRTUAL_SERVICE_NEEDS_HTTPROUTE web"}
			if d := cmp.Diff(want, codes); d != "" {
				t.Errorf("stopping findings (-want +got):\n%s", d)
			}
			var props []string
			for _, p := range rep.Proposals {
				props = append(props, p.Ref().String())
			}
			wantProps := []string{"AuthorizationPolicy migrate-e2e/no-delete-waypoint", "AuthorizationPolicy migrate-e2e/web-get-waypoint", "HTTPRoute migrate-e2e/web"}
			if d := cmp.Diff(wantProps, props); d != "" {
				t.Errorf("proposals (-want +got):\n%s", d)
			}
			return ctx
		}).
		Assess("the migration runs and every gate holds on the live cluster; rolling it all back restores the namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := migration(ctx, t)
			t0 := time.Now()
			p := migrationPlan(ctx, t, r, "full")
			r.plan = p
			var took []string
			started := map[string]time.Time{}
			e := migrationExecutor(t, r, "full", func(ev execute.Event) {
				switch ev.Type {
				case execute.EventStepStarted:
					started[ev.StepID] = ev.Time
				case execute.EventStepFinished:
					took = append(took, fmt.Sprintf("%s %s", strings.TrimPrefix(ev.StepID, "migrate/"+migrateNS+"/"), ev.Time.Sub(started[ev.StepID]).Round(100*time.Millisecond)))
				}
			})
			res, err := e.Apply(ctx, p, execute.ApplyOptions{})
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !res.Done || len(res.Steps) != len(p.Steps) {
				t.Fatalf("Apply did %d of %d steps (done %v)", len(res.Steps), len(p.Steps), res.Done)
			}
			for _, st := range p.Steps {
				if st.Approval != nil && !slices.Contains(r.approved, st.ID) {
					t.Errorf("approval step %s ran without asking (asked: %v)", st.ID, r.approved)
				}
			}
			applied := time.Since(t0)
			// Every gate of every step holds now, read again on the live cluster (BackupReadable needs
			// its step's journal and is checked through the file below).
			for _, st := range p.Steps {
				checks := append(append([]plan.Check(nil), st.Postconditions...), st.Preconditions...)
				if st.Verify != nil {
					checks = append(checks, st.Verify.Checks...)
				}
				if st.WaitFor != nil {
					checks = append(checks, st.WaitFor.Check)
				}
				for _, c := range checks {
					if c.Type == plan.CheckBackupReadable || c.Type == plan.CheckBackupWritable {
						continue
					}
					if ok, why, err := e.Check(ctx, c); err != nil || !ok {
						t.Errorf("step %s: gate %s (%s) does not hold after the migration: %s %v", st.ID, c.Type, c.Description, why, err)
					}
				}
			}
			after := readMigrateState(ctx, t, r.dyn)
			wantLabels := map[string]string{mesh.LabelDataplaneMode: "ambient", mesh.LabelUseWaypoint: "waypoint"}
			if d := cmp.Diff(wantLabels, after.Labels); d != "" {
				t.Errorf("namespace labels after the migration (-want +got):\n%s", d)
			}
			var objs []string
			for k := range after.Objects {
				objs = append(objs, k)
			}
			sort.Strings(objs)
			wantObjs := []string{"AuthorizationPolicy api-port", "AuthorizationPolicy no-delete-waypoint", "AuthorizationPolicy web-get-waypoint", "Gateway waypoint", "HTTPRoute web"}
			if d := cmp.Diff(wantObjs, objs); d != "" {
				t.Errorf("Istio and Gateway API objects after the migration (-want +got):\n%s", d)
			}
			wantPods := map[string]string{"api": "1 pods, 0 with sidecars, 1 captured", "web": "2 pods, 0 with sidecars, 2 captured"}
			if d := cmp.Diff(wantPods, after.Workloads); d != "" {
				t.Errorf("pods after the migration (-want +got):\n%s", d)
			}
			checkBackupFile(t, filepath.Join(r.dir, "full", "backup.json"))
			stepTimes := strings.Join(took, ", ")
			t1 := time.Now()
			if _, err := e.RollbackTo(ctx, p, p.Steps[0].ID); err != nil {
				t.Fatalf("RollbackTo %s: %v", p.Steps[0].ID, err)
			}
			waitBefore(ctx, t, r, "the whole plan")
			t.Logf("migrated in %s (%d steps: %s), rolled all back in %s", applied.Round(100*time.Millisecond), len(p.Steps), stepTimes, time.Since(t1).Round(100*time.Millisecond))
			return ctx
		}).
		Assess("rolling back from each step in turn restores the namespace exactly", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := migration(ctx, t)
			if r.plan == nil {
				t.Fatal("the full run did not make a plan")
			}
			t0 := time.Now()
			for i, first := range r.plan.Steps[:len(r.plan.Steps)-1] { // the last step is the full run's
				name := fmt.Sprintf("%02d-%s", i+1, strings.ReplaceAll(strings.TrimPrefix(first.ID, "migrate/"+migrateNS+"/"), "/", "-"))
				ok := t.Run(name, func(t *testing.T) {
					ts := time.Now()
					p := migrationPlan(ctx, t, r, name)
					if d := cmp.Diff(stepIDs(r.plan), stepIDs(p)); d != "" {
						t.Fatalf("re-planning after the last rollback gives other steps (-first +now):\n%s", d)
					}
					e := migrationExecutor(t, r, name)
					until := p.Steps[i].ID
					if _, err := e.Apply(ctx, p, execute.ApplyOptions{Until: until}); err != nil {
						t.Fatalf("Apply until %s: %v", until, err)
					}
					res, err := e.RollbackTo(ctx, p, p.Steps[0].ID)
					if err != nil {
						t.Fatalf("RollbackTo: %v", err)
					}
					waitBefore(ctx, t, r, until)
					t.Logf("applied up to %s and rolled %d steps back in %s", until, len(res), time.Since(ts).Round(100*time.Millisecond))
				})
				if !ok {
					break // the namespace is not as it was: later runs would start elsewhere
				}
			}
			t.Logf("%d rollback runs in %s", len(r.plan.Steps)-1, time.Since(t0).Round(100*time.Millisecond))
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if r, ok := ctx.Value(migrateKey{}).(*migrateRun); ok && r.status != nil {
				r.status.Stop()
				t.Logf("the fake istiod wrote status %d times", r.status.Writes())
			}
			deleteNamespaces(ctx, t, migrateNS, migrateBook)
			return ctx
		})
	testenv.Test(t, f.Feature())
}

func stepIDs(p *plan.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.ID)
	}
	return out
}

func liveSnapshot(ctx context.Context, t *testing.T) *mesh.Snapshot {
	t.Helper()
	s, err := observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
	if err != nil {
		t.Fatalf("observe.Live: %v", err)
	}
	return s
}

// migrationPlan plans the migration from a fresh snapshot, with the backup in the run's folder.
func migrationPlan(ctx context.Context, t *testing.T, r *migrateRun, run string) *plan.Plan {
	t.Helper()
	dir := filepath.Join(r.dir, run)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ns := func(name string) mesh.ObjectRef { return mesh.ObjectRef{Namespace: migrateNS, Name: name} }
	ap, vs, dr := ns("web-get"), ns("web"), ns("web")
	ap.Kind, vs.Kind, dr.Kind = "AuthorizationPolicy", "VirtualService", "DestinationRule"
	nd := ns("no-delete")
	nd.Kind = "AuthorizationPolicy"
	p, err := migrate.MigrateNamespace(liveSnapshot(ctx, t), migrateNS, migrate.Options{
		Waypoint: &migrate.WaypointRef{Name: "waypoint"}, CreateWaypoint: true,
		Apply:      []mesh.ObjectRef{ap, nd, vs},
		Delete:     []mesh.ObjectRef{dr},
		BackupFile: filepath.Join(dir, "backup.json"),
		BatchSize:  2, SettleSeconds: 1, WaypointTimeoutSeconds: 60,
	})
	if err != nil {
		t.Fatalf("MigrateNamespace: %v", err)
	}
	if !p.Runnable() {
		t.Fatalf("the plan is not runnable: %v", plan.Stopping(p.Findings))
	}
	return p
}

// migrationExecutor applies through the e2e client, with its journal in the run's folder and its
// Lease in the test's own namespace; its probe asks whether the namespace's Deployments are ready.
func migrationExecutor(t *testing.T, r *migrateRun, run string, observer ...func(execute.Event)) *execute.Executor {
	t.Helper()
	e, err := execute.New(h.Client, execute.Options{Gates: ambient.Gates(),
		Snapshot: func(ctx context.Context) (*mesh.Snapshot, error) {
			return observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
		},
		Namespace: migrateBook,
		Journal:   &execute.FileJournal{Path: filepath.Join(r.dir, run, "journal.json")},
		Identity:  "e2e-migrate-" + run,
		Observer: func(ev execute.Event) {
			for _, o := range observer {
				o(ev)
			}
		},
		Probes: map[string]execute.Probe{migrate.DefaultProbe: func(ctx context.Context, scope string) (bool, string, error) {
			deps, err := h.Clientset.AppsV1().Deployments(migrateNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, "", err
			}
			for i := range deps.Items {
				if ok, why := kube.DeploymentReady(&deps.Items[i]); !ok {
					return false, why, nil
				}
			}
			return true, "", nil
		}},
		// The plan asks a person to accept the deny window (between the restart and the deletion of
		// the sidecar policy ztunnel turns into deny-all); the test accepts it, as that person would,
		// and records that it was asked.
		Approve: func(_ context.Context, st plan.Step) (bool, error) {
			r.approved = append(r.approved, st.ID)
			return true, nil
		},
		PollInterval:  250 * time.Millisecond,
		VerifyTimeout: 2 * time.Minute,
		RetryBackoff:  200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// waitBefore waits until the namespace is as it was before the migration (the fake CNI releases
// pods within a second of the label going), and fails with the difference.
func waitBefore(ctx context.Context, t *testing.T, r *migrateRun, from string) {
	t.Helper()
	waitMigrateState(ctx, t, r.dyn, func(s migrateState) string {
		if d := cmp.Diff(r.before, s); d != "" {
			return fmt.Sprintf("after rolling back from %s the namespace differs (-before +after):\n%s", from, d)
		}
		return ""
	})
}

func waitMigrateState(ctx context.Context, t *testing.T, dyn dynamic.Interface, bad func(migrateState) string) migrateState {
	t.Helper()
	var s migrateState
	why := ""
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s = readMigrateState(ctx, t, dyn)
		why = bad(s)
		return why == "", nil
	})
	if err != nil {
		t.Fatalf("%s", why)
	}
	return s
}

func readMigrateState(ctx context.Context, t *testing.T, dyn dynamic.Interface) migrateState {
	t.Helper()
	s := migrateState{Objects: map[string]map[string]any{}, Workloads: map[string]string{}}
	n, err := h.Clientset.CoreV1().Namespaces().Get(ctx, migrateNS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Labels = map[string]string{}
	for k, v := range n.Labels {
		if k != "kubernetes.io/metadata.name" {
			s.Labels[k] = v
		}
	}
	for _, gvr := range migrateObjects {
		l, err := dyn.Resource(gvr).Namespace(migrateNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			ann := o.GetAnnotations()
			delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
			s.Objects[o.GetKind()+" "+o.GetName()] = map[string]any{"labels": o.GetLabels(), "annotations": ann, "spec": o.Object["spec"]}
		}
	}
	pods, err := h.Clientset.CoreV1().Pods(migrateNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string][3]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		x := count[p.Labels["app"]]
		x[0]++
		if _, ok := p.Annotations[mesh.AnnotationSidecarStatus]; ok {
			x[1]++
		}
		if p.Annotations[mesh.AnnotationRedirection] == "enabled" {
			x[2]++
		}
		count[p.Labels["app"]] = x
	}
	for k, x := range count {
		s.Workloads[k] = fmt.Sprintf("%d pods, %d with sidecars, %d captured", x[0], x[1], x[2])
	}
	return s
}

// checkBackupFile: written 0600, and holding the deleted objects and the rest of the namespace's.
func checkBackupFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("backup file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file %s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b execute.Backup
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("backup file %s: %v", path, err)
	}
	var got []string
	for _, e := range b.Entries {
		if e.Object != nil {
			got = append(got, e.Ref.Kind+" "+e.Ref.Name)
		}
	}
	sort.Strings(got)
	want := []string{"AuthorizationPolicy api-port", "AuthorizationPolicy no-delete", "AuthorizationPolicy no-delete-waypoint", "AuthorizationPolicy web-get",
		"AuthorizationPolicy web-get-waypoint", "DestinationRule web", "Gateway waypoint", "HTTPRoute web", "VirtualService web"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("backed-up objects (-want +got):\n%s", d)
	}
}

// createMigrationNamespace creates the namespace to migrate: two Deployments on sidecars injected
// through istio-injection=enabled (the default tag), their Services, and the policies and routes.
func createMigrationNamespace(ctx context.Context, t *testing.T) {
	t.Helper()
	cs := h.Clientset
	for name, labels := range map[string]map[string]string{migrateNS: {mesh.LabelInjection: "enabled"}, migrateBook: nil} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", name, err)
		}
	}
	if h.Fake != nil {
		sctx, cancel := context.WithTimeout(ctx, h.Opts.Timeout)
		defer cancel()
		if err := h.Fake.Sync(sctx); err != nil {
			t.Fatal(err)
		}
	}
	image := h.Opts.AppImage
	if image == "" {
		image = "registry.k8s.io/pause:3.10"
	}
	for _, d := range []struct {
		name     string
		replicas int32
		port     int32
	}{{"web", 2, 8080}, {"api", 1, 9000}} {
		labels := map[string]string{"app": d.name}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: migrateNS, Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(d.replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{NodeSelector: map[string]string{cluster.PoolLabel: harness.PoolGeneral}, TerminationGracePeriodSeconds: ptr.To(int64(0)),
						Containers: []corev1.Container{{Name: "app", Image: image, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: d.port}}}}}}}}
		if _, err := cs.AppsV1().Deployments(migrateNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Deployment %s: %v", d.name, err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: migrateNS},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: d.port, TargetPort: intstr.FromInt32(d.port)}}}}
		if _, err := cs.CoreV1().Services(migrateNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Service %s: %v", d.name, err)
		}
	}
	docs := []map[string]any{
		// L7 ALLOW by selector: ztunnel drops its rule and denies everything to web.
		{"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy", "metadata": map[string]any{"name": "web-get", "namespace": migrateNS},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"rules": []any{map[string]any{"to": []any{map[string]any{"operation": map[string]any{"methods": []any{"GET"}, "paths": []any{"/cart/*"}}}}}}}},
		// L4 by selector: ztunnel enforces it as written; it stays.
		{"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy", "metadata": map[string]any{"name": "api-port", "namespace": migrateNS},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "api"}},
				"rules": []any{map[string]any{"to": []any{map[string]any{"operation": map[string]any{"ports": []any{"9000"}}}}}}}},
		// L7-only DENY, namespace-wide: no effect under ztunnel.
		{"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy", "metadata": map[string]any{"name": "no-delete", "namespace": migrateNS},
			"spec": map[string]any{"action": "DENY", "rules": []any{map[string]any{"to": []any{map[string]any{"operation": map[string]any{"methods": []any{"DELETE"}}}}}}}},
		{"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": map[string]any{"name": "web", "namespace": migrateNS},
			"spec": map[string]any{"hosts": []any{"web"}, "http": []any{
				map[string]any{"match": []any{map[string]any{"headers": map[string]any{"x-canary": map[string]any{"exact": "yes"}}}},
					"route": []any{map[string]any{"destination": map[string]any{"host": "web", "port": map[string]any{"number": int64(8080)}}}}, "timeout": "3s"},
				map[string]any{"route": []any{map[string]any{"destination": map[string]any{"host": "web"}}}},
			}}},
		{"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule", "metadata": map[string]any{"name": "web", "namespace": migrateNS},
			"spec": map[string]any{"host": "web", "trafficPolicy": map[string]any{"connectionPool": map[string]any{"http": map[string]any{"http2MaxRequests": int64(100)}}}}},
	}
	for _, d := range docs {
		if err := h.Applier.Apply(ctx, &unstructured.Unstructured{Object: d}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"web", "api"} {
		if err := kube.WaitDeployment(ctx, cs, migrateNS, name, h.Opts.Timeout); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteNamespaces deletes the namespaces and waits until they are gone.
func deleteNamespaces(ctx context.Context, t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := h.Clientset.CoreV1().Namespaces().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", n, err)
		}
	}
	for _, n := range names {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, h.Opts.Timeout, true, func(ctx context.Context) (bool, error) {
			_, err := h.Clientset.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("namespace %s still exists after %s", n, h.Opts.Timeout)
		}
	}
}
