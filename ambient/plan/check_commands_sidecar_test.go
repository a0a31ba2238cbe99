package plan_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
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

// TestSidecarCommandsShowNativeSidecars: an operator who runs the runbook's command must see
// istio-proxy on a pod that runs it as a native sidecar (an init container with restartPolicy
// Always, injected so from 1.27), and not on one whose only istio container is istio-init.
func TestSidecarCommandsShowNativeSidecars(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	native := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "native"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "istio-init"}, {Name: "istio-proxy", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "app"}}}}
	classic := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "classic"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app"}, {Name: "istio-proxy"}}}}
	plain := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "istio-init"}}, Containers: []corev1.Container{{Name: "app"}}}}
	ns := mesh.ObjectRef{Kind: "Namespace", Name: "payments"}
	for _, c := range []plan.Check{plan.NewCheck(ns, plan.NoSidecarsArgs{}, ""), plan.NewCheck(ns, plan.SidecarsInjectedArgs{}, "")} {
		t.Run(string(c.Type), func(t *testing.T) {
			out := runJSONPath(t, plan.CheckCommand(c), native, classic, plain)
			lines := map[string]string{}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				name, rest, _ := strings.Cut(l, " ")
				lines[name] = rest
			}
			for pod, want := range map[string]bool{"native": true, "classic": true, "plain": false} {
				if got := strings.Contains(lines[pod], "istio-proxy"); got != want {
					t.Errorf("pod %s: the command prints %q; istio-proxy shown = %v, want %v", pod, lines[pod], got, want)
				}
			}
		})
	}
}
