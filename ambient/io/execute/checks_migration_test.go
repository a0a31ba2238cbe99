package execute_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// custom is an object of a kind the scheme does not know, with status conditions.
func custom(api, kind, ns, name string, generation int64, spec map[string]any, conds ...map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": api, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
	u.SetGeneration(generation)
	if len(conds) > 0 {
		var cs []any
		for _, c := range conds {
			cs = append(cs, c)
		}
		u.Object["status"] = map[string]any{"conditions": cs}
	}
	return u
}

func cond(typ, status, reason string, gen int64) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": "m", "observedGeneration": gen}
}

func meshPod(name string, f func(*corev1.Pod)) *corev1.Pod {
	p := workloadPod("checkout", name, "n1", map[string]string{"app": "web"})
	f(p)
	return p
}

func sidecar(p *corev1.Pod) {
	p.Annotations = map[string]string{mesh.AnnotationSidecarStatus: `{"revision":"default"}`}
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "istio-proxy", Image: "proxyv2:1.30.3"})
}

// nativeSidecar is a pod injected with ENABLE_NATIVE_SIDECARS (the default from 1.27 where the
// cluster supports it): istio-proxy is an init container with restartPolicy Always. Its status
// annotation is left out, so that only the container can tell.
func nativeSidecar(p *corev1.Pod) {
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "istio-proxy", Image: "proxyv2:1.30.3", RestartPolicy: &always})
}

func captured(p *corev1.Pod) {
	p.Annotations = map[string]string{mesh.AnnotationRedirection: "enabled"}
}

func TestMigrationChecks(t *testing.T) {
	gw := mesh.ObjectRef{Kind: "Gateway", Namespace: "checkout", Name: "waypoint"}
	ap := mesh.ObjectRef{Kind: "AuthorizationPolicy", Namespace: "checkout", Name: "web-get-waypoint"}
	nsRef := mesh.ObjectRef{Kind: "Namespace", Name: "checkout"}
	ambientNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}}}
	sidecarNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Labels: map[string]string{mesh.LabelInjection: "enabled"}}}
	gateway := func(conds ...map[string]any) client.Object {
		return custom("gateway.networking.k8s.io/v1", "Gateway", "checkout", "waypoint", 2, map[string]any{"gatewayClassName": "istio-waypoint"}, conds...)
	}
	policy := func(conds ...map[string]any) client.Object {
		return custom("security.istio.io/v1", "AuthorizationPolicy", "checkout", "web-get-waypoint", 1, map[string]any{}, conds...)
	}
	cases := []struct {
		name  string
		objs  []client.Object
		check plan.Check
		ok    bool
		says  string
	}{
		{"a waypoint that does not exist is not programmed", nil, plan.NewCheck(gw, plan.GatewayProgrammedArgs{}, ""), false, "Gateway checkout/waypoint does not exist"},
		{"a waypoint without status is not programmed", []client.Object{gateway()}, plan.NewCheck(gw, plan.GatewayProgrammedArgs{}, ""), false, "no Programmed condition"},
		{"a condition for an older generation does not count", []client.Object{gateway(cond("Programmed", "True", "Programmed", 1))},
			plan.NewCheck(gw, plan.GatewayProgrammedArgs{}, ""), false, "describes generation 1"},
		{"a programmed waypoint is programmed", []client.Object{gateway(cond("Programmed", "True", "Programmed", 2))},
			plan.NewCheck(gw, plan.GatewayProgrammedArgs{}, ""), true, ""},
		{"a policy not bound to a waypoint is not accepted, and says why", []client.Object{policy(cond(mesh.ConditionWaypointAccepted, "False", "AncestorNotBound", 1))},
			plan.NewCheck(ap, plan.WaypointAcceptedArgs{}, ""), false, "WaypointAccepted=False (AncestorNotBound)"},
		{"an accepted policy is accepted", []client.Object{policy(cond(mesh.ConditionWaypointAccepted, "True", "Accepted", 1))},
			plan.NewCheck(ap, plan.WaypointAcceptedArgs{}, ""), true, ""},
		{"pods are not captured in a namespace that is not ambient", []client.Object{sidecarNS, meshPod("web-0", captured)},
			plan.NewCheck(nsRef, plan.PodsCapturedArgs{}, ""), false, "not labelled istio.io/dataplane-mode=ambient"},
		{"right after labelling, only the pods without sidecars must be captured", []client.Object{ambientNS, meshPod("web-0", sidecar), meshPod("web-1", captured)},
			plan.NewCheck(nsRef, plan.PodsCapturedArgs{}, ""), true, ""},
		{"a pod without a sidecar that is not captured is named", []client.Object{ambientNS, meshPod("web-0", sidecar), meshPod("web-1", func(*corev1.Pod) {})},
			plan.NewCheck(nsRef, plan.PodsCapturedArgs{}, ""), false, "web-1 (redirection absent)"},
		{"opted-out and host-network pods are not expected to be captured", []client.Object{ambientNS,
			meshPod("web-0", func(p *corev1.Pod) { p.Labels[mesh.LabelDataplaneMode] = "none" }), meshPod("web-1", func(p *corev1.Pod) { p.Spec.HostNetwork = true })},
			plan.NewCheck(nsRef, plan.PodsCapturedArgs{}, ""), true, ""},
		{"a sidecar left is named", []client.Object{ambientNS, meshPod("web-0", sidecar), meshPod("web-1", captured)},
			plan.NewCheck(nsRef, plan.NoSidecarsArgs{}, ""), false, "still run sidecars: web-0"},
		{"a native sidecar (an istio-proxy init container that restarts Always) left is named", []client.Object{ambientNS, meshPod("web-0", nativeSidecar), meshPod("web-1", captured)},
			plan.NewCheck(nsRef, plan.NoSidecarsArgs{}, ""), false, "still run sidecars: web-0"},
		{"pods back on native sidecars are injected", []client.Object{sidecarNS, meshPod("web-0", nativeSidecar)},
			plan.NewCheck(nsRef, plan.SidecarsInjectedArgs{}, ""), true, ""},
		{"a waypoint's own proxy is not a sidecar", []client.Object{ambientNS, meshPod("waypoint-0", func(p *corev1.Pod) {
			p.Labels["gateway.networking.k8s.io/gateway-name"] = "waypoint"
			p.Spec.Containers = []corev1.Container{{Name: "istio-proxy", Image: "proxyv2"}}
		})}, plan.NewCheck(nsRef, plan.NoSidecarsArgs{}, ""), true, ""},
		{"pods back on sidecars are injected", []client.Object{sidecarNS, meshPod("web-0", sidecar)},
			plan.NewCheck(nsRef, plan.SidecarsInjectedArgs{}, ""), true, ""},
		{"a pod still captured is not back on sidecars", []client.Object{sidecarNS, meshPod("web-0", sidecar), meshPod("web-1", captured)},
			plan.NewCheck(nsRef, plan.SidecarsInjectedArgs{}, ""), false, "web-1 (no sidecar)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.objs...)
			ok, why, err := w.Executor().Check(context.Background(), tc.check)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || !strings.Contains(why, tc.says) {
				t.Fatalf("Check = %v, %q; want %v saying %q", ok, why, tc.ok, tc.says)
			}
		})
	}
}

func TestBackupWritableChecksBeforeAnythingIsWritten(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"plan":"sha256:abc","step":"s","entries":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	notBackup := filepath.Join(dir, "notes.txt")
	_ = os.WriteFile(notBackup, []byte("hello"), 0o600)
	cases := []struct {
		name, file string
		ok         bool
		says       string
	}{
		{"a new file in a directory that exists can be written", filepath.Join(dir, "new.json"), true, ""},
		{"a file in a directory that does not exist cannot", filepath.Join(dir, "nope", "b.json"), false, "does not exist"},
		{"another plan's backup is not overwritten", other, false, "another plan"},
		{"a file that is not a backup is not overwritten", notBackup, false, "is not an ambientkit backup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why, err := newWorld(t).Executor().Check(context.Background(), plan.NewCheck(mesh.ObjectRef{}, plan.BackupWritableArgs{File: tc.file}, ""))
			if err != nil || ok != tc.ok || !strings.Contains(why, tc.says) {
				t.Fatalf("Check = %v, %q, %v; want %v saying %q", ok, why, err, tc.ok, tc.says)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the check left files behind: %v", entries)
	}
}

func TestFileBackupStoreWritesPrivatelyAndNeverOverwritesAnotherBackup(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.json")
	s := &execute.FileBackupStore{Path: path}
	mine := []byte(`{"plan":"sha256:p","step":"backup","entries":[]}`)
	if err := s.Write(ctx, "k", mine); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if err := s.Write(ctx, "k", mine); err != nil {
		t.Fatalf("writing the same backup again (a resumed run): %v", err)
	}
	if err := s.Write(ctx, "k", []byte(`{"plan":"sha256:q","step":"backup","entries":[]}`)); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("overwriting another plan's backup: %v", err)
	}
	got, err := s.Read(ctx, "k")
	if err != nil || string(got) != string(mine) {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if _, err := (&execute.FileBackupStore{Path: path + ".none"}).Read(ctx, "k"); !errors.Is(err, execute.ErrNoBackup) {
		t.Fatalf("Read of a missing file: %v; want ErrNoBackup", err)
	}
}
