package observe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// TestAPodsPreStopHookAndABudgetsEvictionPolicyReachTheSnapshot: each preStop form gives the
// workload a hook and, where the sleep can be read (a sleep action, sleep N, sh -c "sleep N", a
// native sidecar's hook), its seconds; a plain init container's hook never runs and counts for
// nothing. A budget's unhealthyPodEvictionPolicy is kept as written.
func TestAPodsPreStopHookAndABudgetsEvictionPolicyReachTheSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lifecycle string // YAML of the pod's spec, indented under spec
		hook      bool
		sleep     int64
	}{
		{"a sleep action", containerWith("lifecycle: {preStop: {sleep: {seconds: 15}}}"), true, 15},
		{"an exec of sleep", containerWith(`lifecycle: {preStop: {exec: {command: ["/bin/sleep", "20"]}}}`), true, 20},
		{"sleep as the whole script of sh -c", containerWith(`lifecycle: {preStop: {exec: {command: ["sh", "-c", "sleep 7.5"]}}}`), true, 8},
		{"sleep infinity", containerWith(`lifecycle: {preStop: {exec: {command: ["sleep", "infinity"]}}}`), true, 0},
		{"a script that does more than sleep", containerWith(`lifecycle: {preStop: {exec: {command: ["sh", "-c", "nginx -s quit; sleep 5"]}}}`), true, 0},
		{"an HTTP hook", containerWith(`lifecycle: {preStop: {httpGet: {path: /drain, port: 8080}}}`), true, 0},
		{"no hook", containerWith(""), false, 0},
		{"a native sidecar's hook", "  containers: [{name: app, image: app}]\n  initContainers:\n  - {name: proxy, image: proxy, restartPolicy: Always, lifecycle: {preStop: {sleep: {seconds: 9}}}}\n", true, 9},
		{"a plain init container's hook", "  containers: [{name: app, image: app}]\n  initContainers:\n  - {name: setup, image: setup, lifecycle: {preStop: {sleep: {seconds: 9}}}}\n", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := observe.YAML(context.Background(), "pods.yaml", strings.NewReader(podYAML(tc.lifecycle)), observe.Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := findWorkload(t, s, "shop", "api")
			if w.PreStopHook != tc.hook || w.PreStopSleepSeconds != tc.sleep {
				t.Errorf("preStop hook %v sleeping %ds, want %v and %ds", w.PreStopHook, w.PreStopSleepSeconds, tc.hook, tc.sleep)
			}
		})
	}
	t.Run("a budget's unhealthyPodEvictionPolicy", func(t *testing.T) {
		in := podYAML(containerWith("")) + `---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: api, namespace: shop}
spec: {minAvailable: 1, selector: {matchLabels: {app: api}}, unhealthyPodEvictionPolicy: AlwaysAllow}
status: {currentHealthy: 0, desiredHealthy: 1, disruptionsAllowed: 0, expectedPods: 1}
`
		s, err := observe.YAML(context.Background(), "pods.yaml", strings.NewReader(in), observe.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.PodDisruptionBudgets) != 1 || s.PodDisruptionBudgets[0].UnhealthyPodEvictionPolicy != "AlwaysAllow" {
			t.Fatalf("budgets %+v, want shop/api with AlwaysAllow", s.PodDisruptionBudgets)
		}
		if s.PodDisruptionBudgets[0].ShortBlocksUnready() {
			t.Error("AlwaysAllow evicts unready pods, but the budget is said to refuse them")
		}
	})
}

func containerWith(lifecycle string) string {
	if lifecycle == "" {
		return "  containers: [{name: app, image: app}]\n"
	}
	return "  containers: [{name: app, image: app, " + lifecycle + "}]\n"
}

func podYAML(spec string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: api-0
  namespace: shop
  labels: {app: api}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: api, uid: u1, controller: true}]
spec:
  nodeName: node-a
` + spec + `status: {phase: Running}
`
}

func findWorkload(t *testing.T, s *mesh.Snapshot, ns, name string) mesh.Workload {
	t.Helper()
	for _, w := range s.Workloads {
		if w.Namespace == ns && w.Name == name {
			return w
		}
	}
	t.Fatalf("no workload %s/%s among %+v", ns, name, s.Workloads)
	return mesh.Workload{}
}

// TestAJobsRunTimeBoundIsTheShorterOfItsAndItsPodsDeadlines: the Job's activeDeadlineSeconds, the
// pod's own, the shorter of both, and none (0) when neither is set; a CronJob's Jobs keep the
// longest bound, and none when one of them has none.
func TestAJobsRunTimeBoundIsTheShorterOfItsAndItsPodsDeadlines(t *testing.T) {
	job := func(name, owner string, deadline string) string {
		s := "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n  namespace: batch\n"
		if owner != "" {
			s += "  ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: " + owner + ", uid: c1, controller: true}]\n"
		}
		s += "spec:\n  template: {spec: {containers: [{name: run, image: run}], restartPolicy: Never}}\n"
		if deadline != "" {
			s += "  activeDeadlineSeconds: " + deadline + "\n"
		}
		return s
	}
	pod := func(name, jobName, deadline string) string {
		s := "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: batch\n" +
			"  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: " + jobName + ", uid: j1, controller: true}]\n" +
			"spec:\n  nodeName: node-a\n  containers: [{name: run, image: run}]\n"
		if deadline != "" {
			s += "  activeDeadlineSeconds: " + deadline + "\n"
		}
		return s + "status: {phase: Running}\n"
	}
	for _, tc := range []struct {
		name, in, kind, workload string
		want                     int64
	}{
		{"the Job's deadline", job("reindex", "", "900") + pod("reindex-x", "reindex", ""), "Job", "reindex", 900},
		{"the pod's shorter deadline", job("reindex", "", "900") + pod("reindex-x", "reindex", "600"), "Job", "reindex", 600},
		{"the Job's shorter deadline", job("reindex", "", "300") + pod("reindex-x", "reindex", "600"), "Job", "reindex", 300},
		{"no deadline", job("reindex", "", "") + pod("reindex-x", "reindex", ""), "Job", "reindex", 0},
		{"a Job that was not read, its pod bounded", pod("reindex-x", "reindex", "600"), "Job", "reindex", 600},
		{"a CronJob's Jobs keep the longest bound",
			job("nightly-29000000", "nightly", "900") + pod("nightly-29000000-a", "nightly-29000000", "") +
				job("nightly-29000060", "nightly", "1200") + pod("nightly-29000060-b", "nightly-29000060", ""), "CronJob", "nightly", 1200},
		{"a CronJob with an unbounded Job has no bound",
			job("nightly-29000000", "nightly", "900") + pod("nightly-29000000-a", "nightly-29000000", "") +
				job("nightly-29000060", "nightly", "") + pod("nightly-29000060-b", "nightly-29000060", ""), "CronJob", "nightly", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := observe.YAML(context.Background(), "jobs.yaml", strings.NewReader(tc.in), observe.Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := findWorkload(t, s, "batch", tc.workload)
			if w.Kind != tc.kind || w.ActiveDeadlineSeconds != tc.want {
				t.Errorf("%s %s bounded by %ds, want %s bounded by %ds", w.Kind, w.Name, w.ActiveDeadlineSeconds, tc.kind, tc.want)
			}
		})
	}
}
