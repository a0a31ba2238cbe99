package plan_test

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// runJSONPath runs the jsonpath of a printed `kubectl get pods -o jsonpath='...'` command over a
// pod list, the way kubectl does.
func runJSONPath(t *testing.T, cmd string, pods ...corev1.Pod) string {
	t.Helper()
	_, tmpl, ok := strings.Cut(cmd, "-o jsonpath='")
	if !ok {
		t.Fatalf("command %q has no jsonpath", cmd)
	}
	tmpl = strings.TrimSuffix(tmpl, "'")
	jp := jsonpath.New("cmd").AllowMissingKeys(true) // as kubectl get -o jsonpath does
	if err := jp.Parse(tmpl); err != nil {
		t.Fatalf("parse %q: %v", tmpl, err)
	}
	list := &corev1.PodList{Items: pods}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(list)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := jp.Execute(&b, obj); err != nil {
		t.Fatalf("execute %q: %v", tmpl, err)
	}
	return b.String()
}

// runCheck runs a printed `kubectl get pods ... -o jsonpath='...' | awk ...` check over a pod list:
// the jsonpath as kubectl runs it, its output piped into the rest of the command in a shell. It
// returns what the command printed and whether it exited 0.
func runCheck(t *testing.T, cmd string, pods ...corev1.Pod) (string, bool) {
	t.Helper()
	get, rest, ok := strings.Cut(cmd, "' | ")
	if !ok {
		t.Fatalf("command %q pipes no kubectl output into a check", cmd)
	}
	sh := exec.Command("sh", "-c", rest)
	sh.Stdin = strings.NewReader(runJSONPath(t, get+"'", pods...))
	out, err := sh.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// TestSidecarChecksSeeNativeSidecars: the runbook's sidecar checks must count istio-proxy run as a
// native sidecar (an init container with restartPolicy Always, injected so from 1.27) as a sidecar,
// and a pod whose only istio container is istio-init as none; each exits non-zero naming the pods
// that break it.
func TestSidecarChecksSeeNativeSidecars(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	native := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "native"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "istio-init"}, {Name: "istio-proxy", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "app"}}}}
	classic := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "classic"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app"}, {Name: "istio-proxy"}}}}
	plain := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "istio-init"}}, Containers: []corev1.Container{{Name: "app"}}}}
	ns := mesh.ObjectRef{Kind: "Namespace", Name: "payments"}
	none, injected := plan.NewCheck(ns, plan.NoSidecarsArgs{}, ""), plan.NewCheck(ns, plan.SidecarsInjectedArgs{}, "")
	tests := []struct {
		name  string
		check plan.Check
		pods  []corev1.Pod
		pass  bool
		names []string
	}{
		{"no sidecars passes on a pod with istio-init only", none, []corev1.Pod{plain}, true, nil},
		{"no sidecars fails on native and classic sidecars, naming them", none, []corev1.Pod{native, classic, plain}, false, []string{"native", "classic"}},
		{"sidecars injected passes on native and classic sidecars", injected, []corev1.Pod{native, classic}, true, nil},
		{"sidecars injected fails on a pod without one, naming it", injected, []corev1.Pod{native, plain}, false, []string{"runs no sidecar: plain"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := runCheck(t, plan.CheckCommand(tc.check), tc.pods...)
			if ok != tc.pass {
				t.Errorf("exit 0 = %v, want %v; it printed %q", ok, tc.pass, out)
			}
			for _, n := range tc.names {
				if !strings.Contains(out, n) {
					t.Errorf("the check does not name %q: %q", n, out)
				}
			}
		})
	}
}
